// The heap's transparent huge pages setting (bench_suite/heap_huge_pages.h): what it adds to
// GLIBC_TUNABLES, when it stays out, and that it can be put back.
#include "bench_suite/heap_huge_pages.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/text_file.h"
#include "tests/base/user_error_of.h"
#include "tests/bench_suite/scoped_variable.h"

namespace cuvil::bench {
namespace {

using testing::ScopedVariable;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "<unset>";
}

bool kernel_has_thp() {
  const std::string mode =
      thp_mode(read_file_or_empty("/sys/kernel/mm/transparent_hugepage/enabled"));
  return !mode.empty() && mode != "never";
}

// The three variables the setting reads, set for one test: GLIBC_TUNABLES and the switch as
// given, no earlier request in force.
struct HeapVariables {
  HeapVariables(const char* tunables, const char* enabled)
      : tunables_("GLIBC_TUNABLES", tunables),
        previous_(kHeapHugePagesPreviousVariable, nullptr),
        enabled_(kHeapHugePagesSwitchVariable, enabled) {}
  ScopedVariable tunables_, previous_, enabled_;
};

TEST(HeapHugePages, ReadsTheKernelsBracketedMode) {
  EXPECT_EQ(thp_mode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(thp_mode("[always] madvise never"), "always");
  EXPECT_EQ(thp_mode("always madvise [never]"), "never");
  EXPECT_EQ(thp_mode(""), "");
  EXPECT_EQ(thp_mode("always madvise never"), "");
}

TEST(HeapHugePages, AddsTheTunableBesideTheUsersOthers) {
  EXPECT_EQ(with_heap_hugetlb(""), "glibc.malloc.hugetlb=1");
  EXPECT_EQ(with_heap_hugetlb("glibc.malloc.arena_max=2"),
            "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
}

TEST(HeapHugePages, RequestSetsItOnceAndRestorePutsBackTheUsersTunables) {
  if (!kernel_has_thp()) GTEST_SKIP() << "transparent huge pages are off in this kernel";
  const HeapVariables vars("glibc.malloc.arena_max=2", nullptr);
  ASSERT_TRUE(request_heap_huge_pages());
  EXPECT_EQ(env("GLIBC_TUNABLES"), "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1");
  EXPECT_EQ(heap_huge_pages(), "glibc.malloc.hugetlb=1 (cuvil-bench)");
  EXPECT_FALSE(request_heap_huge_pages()) << "already in force: no second re-execution";
  restore_heap_tunables();
  EXPECT_EQ(env("GLIBC_TUNABLES"), "glibc.malloc.arena_max=2");
  EXPECT_EQ(env(kHeapHugePagesPreviousVariable), "<unset>");
}

TEST(HeapHugePages, RestoreUnsetsWhatTheUserDidNotSet) {
  if (!kernel_has_thp()) GTEST_SKIP() << "transparent huge pages are off in this kernel";
  const HeapVariables vars(nullptr, nullptr);
  ASSERT_TRUE(request_heap_huge_pages());
  EXPECT_EQ(env("GLIBC_TUNABLES"), "glibc.malloc.hugetlb=1");
  restore_heap_tunables();
  EXPECT_EQ(env("GLIBC_TUNABLES"), "<unset>");
}

TEST(HeapHugePages, KeepsTheUsersOwnSetting) {
  const HeapVariables vars("glibc.malloc.hugetlb=0", nullptr);
  EXPECT_FALSE(request_heap_huge_pages());
  EXPECT_EQ(env("GLIBC_TUNABLES"), "glibc.malloc.hugetlb=0");
  EXPECT_EQ(heap_huge_pages(), "glibc.malloc.hugetlb=0 (set by the user)");
}

TEST(HeapHugePages, SwitchedOffSetsNothing) {
  const HeapVariables vars(nullptr, "0");
  EXPECT_FALSE(request_heap_huge_pages());
  EXPECT_EQ(env("GLIBC_TUNABLES"), "<unset>");
  EXPECT_EQ(heap_huge_pages(), "off (CUVIL_HEAP_HUGE_PAGES=0)");
}

TEST(HeapHugePages, MalformedSwitchIsAnErrorNamingTheVariable) {
  const HeapVariables vars(nullptr, "off");
  EXPECT_NE(user_error_of([] {
              request_heap_huge_pages();
            }).find("CUVIL_HEAP_HUGE_PAGES: expected 0 (off) or 1 (on), got 'off'"),
            std::string::npos);
  EXPECT_EQ(env("GLIBC_TUNABLES"), "<unset>");
}

}  // namespace
}  // namespace cuvil::bench
