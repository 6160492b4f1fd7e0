// Settings that libraries read before main, chosen by cuvil-bench for the commands that build
// weights or measure, and put in force by re-executing cuvil-bench once with them set:
//
// - OpenMP's wait policy. oneDNN runs on libgomp's team, whose idle threads spin between parallel
//   regions; beside another busy process they steal its CPU and every oneDNN op slows to the spin
//   timeout (issue 16: an all-oneDNN ResNet-50 b1 at 596 ms, quiet 45 ms). Passive waiting halves
//   the loaded time but costs an all-oneDNN plan 10-25% on a quiet machine
//   (docs/performance.md), so it is chosen only when other processes are busy at the start. A
//   user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is always kept. The run JSON records it
//   (context.cuvil.openmp_wait_policy).
// - Transparent huge pages for the heap (bench_suite/heap_huge_pages.h): glibc's
//   glibc.malloc.hugetlb=1, for every command that builds a plan. The run JSON records it
//   (context.cuvil.heap_huge_pages).
#pragma once

namespace cuvil::bench::cli {

// Chooses both settings for the command in argv[1] and, when either changed the environment,
// re-executes this program with the same arguments (returning only if that fails, with a warning
// and the environment as it was). A second call after the re-execution returns at once.
// UserError for a malformed CUVIL_HEAP_HUGE_PAGES.
void choose_start_environment(int argc, char** argv);

}  // namespace cuvil::bench::cli
