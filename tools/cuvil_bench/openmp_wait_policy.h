// OpenMP's wait policy for the commands that measure. oneDNN runs on libgomp's team, whose idle
// threads spin between parallel regions; beside another busy process they steal its CPU and
// every oneDNN op slows to the spin timeout (issue 16: an all-oneDNN ResNet-50 b1 at 596 ms,
// quiet 45 ms). Passive waiting halves the loaded time but costs an all-oneDNN plan 10-25% on a
// quiet machine (docs/performance.md), so cuvil-bench chooses it only when other processes are
// busy at the start.
//
// libgomp reads OMP_WAIT_POLICY once, when it loads (before main), so the choice is made by
// re-executing cuvil-bench with the variable set. A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT
// is always kept. The run JSON records the policy (context.cuvil.openmp_wait_policy).
#pragma once

namespace cuvil::bench::cli {

// For `run`, `serve`, `tune`, `confirm` and `infer`: when neither variable is set and other
// processes use more than kBusyOtherCpusWarning CPUs, sets OMP_WAIT_POLICY=passive and
// re-executes this program with the same arguments (returning only if that fails, with a
// warning). Any other command, or a second call after the re-execution, returns at once.
void choose_openmp_wait_policy(int argc, char** argv);

}  // namespace cuvil::bench::cli
