// A thin RAII layer over the SQLite C API: a connection and prepared statements. Every SQLite
// failure becomes a cuvil::UserError naming the database file, since the usual causes (a path
// that cannot be created, a file that is not a database, a full disk) are the user's to fix.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

namespace cuvil::reports {

class Statement;

enum class Access {
  kReadWrite,  // opens, creating the file if needed
  kReadOnly,   // SQLITE_OPEN_READONLY: nothing is written, not even a journal mode
};

class Database {
 public:
  // Opens the database file; busy_timeout_ms bounds how long a writer waits for another
  // writer's transaction before failing. kReadOnly also reads a database that cannot be
  // written at all (a read-only file, folder or file system): a WAL-mode database there, whose
  // shared-memory file cannot be made, is opened immutable when no -wal or -journal file
  // holds anything the main file lacks.
  Database(const std::string& path, int busy_timeout_ms, Access access = Access::kReadWrite);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs one or more statements that return no rows.
  void exec(const std::string& sql);
  Statement prepare(const std::string& sql);
  int64_t last_insert_rowid() const;
  // A single integer result of a query (e.g. a PRAGMA), or nullopt if it returned no row.
  std::optional<int64_t> query_int(const std::string& sql);
  std::string query_text(const std::string& sql);

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// A prepared statement; bind parameters are 1-based like SQLite's.
class Statement {
 public:
  Statement(Database& db, const std::string& sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind_null(int index);
  // Steps once: true while a row is available.
  bool step();
  // Steps a statement that returns no rows, then resets it for the next bindings.
  void run();
  void reset();

  bool is_null(int column) const;
  int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;

 private:
  Database* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when destroyed uncommitted (an exception unwinding).
// IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout instead of
// deadlocking when both try to upgrade a read transaction.
class WriteTransaction {
 public:
  explicit WriteTransaction(Database& db);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool open_ = true;
};

}  // namespace cuvil::reports
