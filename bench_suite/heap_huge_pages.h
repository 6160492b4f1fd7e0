// Transparent huge pages for the heap of the commands that build weights. An SDXL UNet's 10 GB
// of weights and their prepared forms come from the heap: with 4 KiB pages that is 2.7 million
// page faults at setup (most of a 30 s setup on a KVM guest was the kernel faulting and
// clearing pages) and a TLB entry per 4 KiB when the kernels stream them. glibc's
// glibc.malloc.hugetlb=1 tunable makes malloc ask for transparent huge pages (madvise) on the
// memory it maps; the kernel's THP mode "madvise" (Debian's default) then backs it with 2 MiB
// pages. glibc reads its tunables once, at start, so cuvil-bench sets the variable and
// re-executes itself (tools/cuvil_bench/start_environment.h). CUVIL_HEAP_HUGE_PAGES=0 turns it
// off; a user's own glibc.malloc.hugetlb setting is always kept. Python helpers (the PyTorch
// baseline, Optuna) start with the environment the user gave, not this setting.
#pragma once

#include <string>

namespace cuvil::bench {

// Set while cuvil-bench's own heap setting is in force: the GLIBC_TUNABLES value it replaced
// (empty: there was none).
inline constexpr const char* kHeapHugePagesPreviousVariable = "CUVIL_HEAP_HUGE_PAGES_PREVIOUS";
// "0" turns the setting off, "1" (or unset) leaves it on; any other value is a UserError.
inline constexpr const char* kHeapHugePagesSwitchVariable = "CUVIL_HEAP_HUGE_PAGES";

// Sets GLIBC_TUNABLES to add glibc.malloc.hugetlb=1 (and records what it replaced), unless the
// user turned it off, set glibc.malloc.hugetlb themselves, the kernel has THP off ("never"), or
// this process already runs with it. True when it changed the environment: the setting takes
// effect only in a new process image. UserError for a malformed CUVIL_HEAP_HUGE_PAGES.
bool request_heap_huge_pages();
// Puts GLIBC_TUNABLES back as it was before request_heap_huge_pages() (after a failed
// re-execution, or in a child that should start as the user started cuvil-bench).
void restore_heap_tunables();

// What this process runs with, for the run's JSON (context.cuvil.heap_huge_pages):
// "glibc.malloc.hugetlb=1 (cuvil-bench)", "glibc.malloc.hugetlb=V (set by the user)",
// "off (CUVIL_HEAP_HUGE_PAGES=0)", "off (transparent_hugepage: never)" or "off".
std::string heap_huge_pages();

// The kernel's THP mode, the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled
// ("always", "madvise", "never"), or "" where the file is absent. Pure helper for tests.
std::string thp_mode(const std::string& enabled_file_text);
// GLIBC_TUNABLES with glibc.malloc.hugetlb=1 added (a:b:c syntax). Pure helper for tests.
std::string with_heap_hugetlb(const std::string& tunables);

}  // namespace cuvil::bench
