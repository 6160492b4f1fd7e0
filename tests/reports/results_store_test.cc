// The SQLite results store: schema and migrations, storing and reading runs, and consistency
// when a writer is killed mid-transaction or several write at once.
#include "reports/results_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "reports/run_document.h"
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

// The bytes of a file, to check that reading it changed nothing.
std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A database holding two runs, left in rollback-journal mode: opening it read-write would
// switch it to WAL (a write), which is what readers must not do.
std::string journal_mode_database(const ScratchDir& dir) {
  const std::string path = dir.file("r.db");
  {
    ResultsStore store(path);
    store.store_run(synthetic_run(2, 5));
    store.store_run(synthetic_run(2, 5, 2e6));
    store.database().exec("PRAGMA journal_mode=DELETE");
  }
  return path;
}

TEST(ResultsStore, ReadOnlyOpeningWritesNothing) {
  ScratchDir dir;
  const std::string path = journal_mode_database(dir);
  const std::string before = bytes_of(path);
  {
    ResultsStore store = ResultsStore::open_read_only(path);
    EXPECT_EQ(store.list_runs().size(), 2u);
    EXPECT_EQ(store.load_document(2)["benchmarks"].size(),
              synthetic_run(2, 5)["benchmarks"].size());
    EXPECT_EQ(store.database().query_text("PRAGMA journal_mode"), "delete");
  }
  EXPECT_EQ(bytes_of(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  EXPECT_FALSE(std::filesystem::exists(path + "-journal"));
}

TEST(ResultsStore, ReadOnlyStoreRefusesWrites) {
  // SQLite enforces SQLITE_OPEN_READONLY itself, whoever runs the test (root included).
  ScratchDir dir;
  const std::string path = journal_mode_database(dir);
  ResultsStore store = ResultsStore::open_read_only(path);
  try {
    store.store_run(synthetic_run(1, 3));
    FAIL() << "stored through a read-only store";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("readonly"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ResultsStore::open_read_only(path).list_runs().size(), 2u);
}

TEST(ResultsStore, ReadOnlyOpeningOfAnEmptyFileReadsNoRuns) {
  ScratchDir dir;
  const std::string path = dir.file("empty.db");
  std::ofstream{path};
  ResultsStore store = ResultsStore::open_read_only(path);
  EXPECT_TRUE(store.list_runs().empty());
  EXPECT_THROW(store.load_document(1), UserError);
  EXPECT_EQ(std::filesystem::file_size(path), 0u);  // still empty: no schema written
}

TEST(ResultsStore, ReadOnlyOpeningRefusesMissingNewerAndForeignFiles) {
  ScratchDir dir;
  EXPECT_THROW(ResultsStore::open_read_only(dir.file("missing.db")), UserError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing.db")));
  const std::string newer = dir.file("newer.db");
  {
    Database db(newer, 1000);
    db.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion + 1));
  }
  EXPECT_THROW(ResultsStore::open_read_only(newer), UserError);
  const std::string notes = dir.file("notes.db");
  std::ofstream(notes) << "these are not the bytes of an SQLite database, not at all, no.\n";
  EXPECT_THROW(ResultsStore::open_read_only(notes), UserError);
}

TEST(ResultsStore, AStoredDocumentIsCheckedLikeAFile) {
  ScratchDir dir;
  const std::string path = dir.file("r.db");
  {
    ResultsStore store(path);
    store.store_run(synthetic_run(1, 3));
    store.store_run(synthetic_run(1, 3));
    store.store_run(synthetic_run(1, 3));
    // Hand-edited or damaged: a wrong-typed field, an overflowing number, not JSON at all.
    store.database().exec(
        "UPDATE runs SET document = json_set(document, '$.benchmarks[0].run_type', 7) WHERE id = "
        "1");
    store.database().exec(
        "UPDATE runs SET document = replace(document, '\"real_time\":', '\"real_time\":1e999,"
        "\"x\":') WHERE id = 2");
    store.database().exec("UPDATE runs SET document = '{\"benchmarks\": [' WHERE id = 3");
  }
  ResultsStore store = ResultsStore::open_read_only(path);
  auto error_of = [&](int64_t id) -> std::string {
    try {
      benchmarks_of(store.load_document(id), store.document_source(id));
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of(1), path + ": run 1: /benchmarks/0/run_type: expected a string, got a number");
  EXPECT_EQ(error_of(2),
            path +
                ": run 2: /benchmarks/0/real_time: the number 1e999 is out of range (beyond a "
                "double)");
  EXPECT_NE(error_of(3).find(path + ": run 3: malformed JSON"), std::string::npos) << error_of(3);
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
