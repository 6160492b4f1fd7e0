// The SQLite results store: schema and migrations, storing and reading runs, and consistency
// when a writer is killed mid-transaction or several write at once.
#include "reports/results_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "passes/ir/error.h"
#include "tests/reports/run_json_fixture.h"

namespace cuvil::reports {
namespace {

using testing::ScratchDir;
using testing::synthetic_run;

int64_t count(ResultsStore& store, const std::string& table) {
  return store.database().query_int("SELECT count(*) FROM " + table).value_or(-1);
}

bool consistent(ResultsStore& store) {
  return store.database().query_text("PRAGMA integrity_check") == "ok" &&
         store.database().query_text("PRAGMA foreign_key_check").empty();
}

// Runs `child` in a forked process and returns its wait status. The child never returns into
// the test framework.
template <typename F>
pid_t spawn(F child) {
  const pid_t pid = fork();
  if (pid == 0) {
    int status = 1;
    try {
      status = child();
    } catch (...) {
      status = 3;
    }
    _exit(status);
  }
  return pid;
}

int wait_status(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(ResultsStore, CreatesTheSchemaAtTheCurrentVersion) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  EXPECT_EQ(store.schema_version(), kSchemaVersion);
  for (const char* table : {"machines", "configs", "runs", "benchmarks", "samples"}) {
    EXPECT_EQ(count(store, table), 0) << table;
  }
  EXPECT_EQ(store.database().query_text("PRAGMA journal_mode"), "wal");
}

TEST(ResultsStore, ReopeningIsIdempotentAndKeepsData) {
  ScratchDir dir;
  const std::string path = dir.file("r.db");
  { ResultsStore(path).store_run(synthetic_run(2, 3)); }
  for (int i = 0; i < 3; ++i) {
    ResultsStore store(path);
    EXPECT_EQ(store.schema_version(), kSchemaVersion);
    EXPECT_EQ(count(store, "runs"), 1);
    EXPECT_EQ(count(store, "benchmarks"), 2);
  }
}

TEST(ResultsStore, CreatesMissingParentFolders) {
  ScratchDir dir;
  ResultsStore store(dir.file("a/b/c/r.db"));
  EXPECT_EQ(store.schema_version(), kSchemaVersion);
}

TEST(ResultsStore, RefusesADatabaseFromANewerCuvil) {
  ScratchDir dir;
  const std::string path = dir.file("r.db");
  {
    Database db(path, 1000);
    db.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion + 1));
  }
  EXPECT_THROW(ResultsStore{path}, UserError);
}

TEST(ResultsStore, AFileThatIsNotADatabaseIsAUserError) {
  ScratchDir dir;
  const std::string path = dir.file("notes.db");
  std::ofstream(path) << "these are not the bytes of an SQLite database, not at all, no.\n";
  EXPECT_THROW(ResultsStore{path}, UserError);
}

TEST(ResultsStore, OpenExistingRefusesAMissingFile) {
  ScratchDir dir;
  EXPECT_THROW(ResultsStore::open_existing(dir.file("missing.db")), UserError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

TEST(ResultsStore, StoresARunAndReadsItBack) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  const nlohmann::json doc = synthetic_run(3, 7);
  StoreRunOptions options;
  options.command_line = "cuvil-bench run --suite resnet50";
  const int64_t id = store.store_run(doc, options);
  EXPECT_EQ(store.load_document(id), doc);
  EXPECT_EQ(count(store, "benchmarks"), 3);
  EXPECT_EQ(count(store, "samples"), 21);

  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, id);
  EXPECT_EQ(runs[0].suite, "resnet50");
  EXPECT_EQ(runs[0].git_commit, "abc123");
  EXPECT_EQ(runs[0].config_hash, "cafef00d");
  EXPECT_EQ(runs[0].host, "testhost");
  EXPECT_EQ(runs[0].target, "cpu");
  EXPECT_EQ(runs[0].threads, 2);
  EXPECT_EQ(runs[0].started_at, "2024-05-01T10:00:00+0000");
  EXPECT_EQ(runs[0].command_line, "cuvil-bench run --suite resnet50");
  EXPECT_EQ(runs[0].rungs, (std::vector<std::string>{"r0", "r1", "r2"}));
}

TEST(ResultsStore, BenchmarkRowsHoldTheSummary) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  const int64_t id = store.store_run(testing::run_document({{"s/r", {30, 10, 20, 40}}}));
  Statement s = store.database().prepare(
      "SELECT median_ns, mean_ns, min_ns, max_ns, repetitions, gflops FROM benchmarks "
      "WHERE run_id = ?1");
  s.bind(1, id);
  ASSERT_TRUE(s.step());
  EXPECT_DOUBLE_EQ(s.column_double(0), 25);
  EXPECT_DOUBLE_EQ(s.column_double(1), 25);
  EXPECT_DOUBLE_EQ(s.column_double(2), 10);
  EXPECT_DOUBLE_EQ(s.column_double(3), 40);
  EXPECT_EQ(s.column_int(4), 4);
  EXPECT_DOUBLE_EQ(s.column_double(5), 12.5);
}

TEST(ResultsStore, MachinesAndConfigsAreSharedBetweenRuns) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  store.store_run(synthetic_run(1, 2));
  store.store_run(synthetic_run(1, 2));
  EXPECT_EQ(count(store, "runs"), 2);
  EXPECT_EQ(count(store, "machines"), 1);
  EXPECT_EQ(count(store, "configs"), 1);
}

TEST(ResultsStore, ListFiltersBySuiteNewestFirstWithLimit) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  const int64_t a = store.store_run(synthetic_run(1, 2, 1e6, "resnet50"));
  const int64_t b = store.store_run(synthetic_run(1, 2, 1e6, "sdxl"));
  const int64_t c = store.store_run(synthetic_run(1, 2, 1e6, "resnet50"));
  const auto resnet = store.list_runs("resnet50");
  ASSERT_EQ(resnet.size(), 2u);
  EXPECT_EQ(resnet[0].id, c);
  EXPECT_EQ(resnet[1].id, a);
  const auto latest = store.list_runs("", 1);
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_EQ(latest[0].id, c);
  EXPECT_EQ(store.list_runs("sdxl")[0].id, b);
  EXPECT_TRUE(store.list_runs("llama3-8b").empty());
}

TEST(ResultsStore, UnknownRunIdIsAUserError) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  EXPECT_THROW(store.load_document(17), UserError);
}

TEST(ResultsStore, AMalformedDocumentStoresNothing) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  EXPECT_THROW(store.store_run(nlohmann::json::parse(R"({"benchmarks": [{"real_time": 1}]})")),
               UserError);
  EXPECT_EQ(count(store, "runs"), 0);
  EXPECT_EQ(count(store, "machines"), 0);
}

TEST(ResultsStore, AnExceptionMidRunRollsBack) {
  ScratchDir dir;
  ResultsStore store(dir.file("r.db"));
  StoreRunOptions options;
  options.after_benchmark = [](int64_t written) {
    if (written == 2) throw std::runtime_error("interrupted");
  };
  EXPECT_THROW(store.store_run(synthetic_run(4, 5), options), std::runtime_error);
  EXPECT_EQ(count(store, "runs"), 0);
  EXPECT_EQ(count(store, "benchmarks"), 0);
  EXPECT_EQ(count(store, "samples"), 0);
  store.store_run(synthetic_run(4, 5));  // the connection is usable afterwards
  EXPECT_EQ(count(store, "runs"), 1);
}

TEST(ResultsStore, AWriterKilledMidTransactionLeavesNoPartialRun) {
  ScratchDir dir;
  const std::string path = dir.file("r.db");
  const pid_t pid = spawn([&] {
    ResultsStore store(path);
    for (int i = 0; i < 3; ++i) store.store_run(synthetic_run(4, 5));
    StoreRunOptions options;
    options.after_benchmark = [](int64_t written) {
      if (written == 2) raise(SIGKILL);  // no unwinding, no rollback, no close
    };
    store.store_run(synthetic_run(4, 5), options);
    return 0;
  });
  const int status = wait_status(pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;

  ResultsStore store(path);
  EXPECT_TRUE(consistent(store));
  EXPECT_EQ(count(store, "runs"), 3);
  EXPECT_EQ(count(store, "benchmarks"), 3 * 4);
  EXPECT_EQ(count(store, "samples"), 3 * 4 * 5);
  // Every stored run is complete.
  EXPECT_EQ(store.database().query_int(
                "SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM benchmarks b WHERE "
                "b.run_id = r.id) <> 4"),
            0);
  store.store_run(synthetic_run(4, 5));  // and the database still takes writes
  EXPECT_EQ(count(store, "runs"), 4);
}

TEST(ResultsStore, AWriterExitingWithoutCommitLeavesNoPartialRun) {
  ScratchDir dir;
  const std::string path = dir.file("r.db");
  const pid_t pid = spawn([&] {
    ResultsStore store(path);
    StoreRunOptions options;
    options.after_benchmark = [](int64_t written) {
      if (written == 1) _exit(0);
    };
    store.store_run(synthetic_run(3, 4), options);
    return 1;
  });
  ASSERT_EQ(wait_status(pid), 0);
  ResultsStore store(path);
  EXPECT_TRUE(consistent(store));
  EXPECT_EQ(count(store, "runs"), 0);
  EXPECT_EQ(count(store, "samples"), 0);
}

TEST(ResultsStore, ConcurrentWritersAllSucceed) {
  ScratchDir dir;
  const std::string path = dir.file("r.db");  // not created yet: both race to create it
  constexpr int kWriters = 3;
  constexpr int kRunsEach = 25;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    pids.push_back(spawn([&] {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) < 0) return 4;  // returns 0 at EOF: every writer starts at once
      ResultsStore store(path);
      for (int i = 0; i < kRunsEach; ++i) store.store_run(synthetic_run(3, 10));
      return 0;
    }));
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : pids) EXPECT_EQ(wait_status(pid), 0);

  ResultsStore store(path);
  EXPECT_TRUE(consistent(store));
  EXPECT_EQ(count(store, "runs"), kWriters * kRunsEach);
  EXPECT_EQ(count(store, "benchmarks"), kWriters * kRunsEach * 3);
  EXPECT_EQ(count(store, "samples"), kWriters * kRunsEach * 3 * 10);
  EXPECT_EQ(count(store, "machines"), 1);
}

TEST(ResultsStore, DefaultPathFollowsXdgDataHome) {
  const char* saved_xdg = std::getenv("XDG_DATA_HOME");
  const std::string xdg = saved_xdg ? saved_xdg : "";
  setenv("XDG_DATA_HOME", "/data/here", 1);
  EXPECT_EQ(default_database_path(), "/data/here/cuvil/results.db");
  unsetenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  if (home) {
    EXPECT_EQ(default_database_path(), std::string(home) + "/.local/share/cuvil/results.db");
  }
  if (saved_xdg) setenv("XDG_DATA_HOME", xdg.c_str(), 1);
}

}  // namespace
}  // namespace cuvil::reports
