#include "reports/sqlite_db.h"

#include <cctype>
#include <filesystem>
#include <utility>

#include "base/error.h"

namespace cuvil::reports {

namespace {

// `path` as an SQLite URI ("file:" and the path with everything but unreserved characters and
// '/' percent-encoded).
std::string file_uri(const std::string& path, const char* query) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string uri = "file:";
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += ch;
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    }
  }
  return uri + "?" + query;
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

}  // namespace

Database::Database(const std::string& path, int busy_timeout_ms, Access access) : path_(path) {
  auto open = [&](const std::string& name, int flags) {
    if (sqlite3_open_v2(name.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      const std::string message = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw UserError(path + ": cannot open results database: " + message);
    }
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    sqlite3_extended_result_codes(db_, 1);
  };
  if (access == Access::kReadWrite) {
    open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    return;
  }
  open(path, SQLITE_OPEN_READONLY);
  // Opening is lazy: the first read tells whether the file can be read this way.
  const int rc = sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return;
  const int code = sqlite3_extended_errcode(db_) & 0xff;
  // A WAL-mode database needs its -shm file, which a read-only folder or file system cannot
  // hold; with nothing in a -wal (or a hot -journal) the main file is the whole database and
  // reads the same immutable.
  if ((code == SQLITE_CANTOPEN || code == SQLITE_READONLY) && !file_exists(path + "-wal") &&
      !file_exists(path + "-journal")) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    open(file_uri(path, "immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
    if (sqlite3_exec(db_, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) ==
        SQLITE_OK) {
      return;
    }
  }
  const std::string message = sqlite3_errmsg(db_);
  sqlite3_close_v2(db_);
  db_ = nullptr;
  throw UserError(path + ": cannot read results database: " + message);
}

Database::~Database() {
  sqlite3_close_v2(db_);
}

void Database::fail(const std::string& what) const {
  throw UserError(path_ + ": results database: " + what + ": " + sqlite3_errmsg(db_));
}

void Database::exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string message = error ? error : sqlite3_errmsg(db_);
    sqlite3_free(error);
    throw UserError(path_ + ": results database: " + message);
  }
}

Statement Database::prepare(const std::string& sql) {
  return Statement(*this, sql);
}

int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

std::optional<int64_t> Database::query_int(const std::string& sql) {
  Statement s(*this, sql);
  if (!s.step() || s.is_null(0)) return std::nullopt;
  return s.column_int(0);
}

std::string Database::query_text(const std::string& sql) {
  Statement s(*this, sql);
  return s.step() ? s.column_text(0) : std::string();
}

Statement::Statement(Database& db, const std::string& sql) : db_(&db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
    db.fail("cannot prepare '" + sql.substr(0, 60) + "'");
  }
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) db_->fail("bind");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK) db_->fail("bind");
  return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
  if (sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()),
                        SQLITE_TRANSIENT) != SQLITE_OK) {
    db_->fail("bind");
  }
  return *this;
}

Statement& Statement::bind_null(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) db_->fail("bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail("step");
}

void Statement::run() {
  while (step()) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

int64_t Statement::column_int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::column_double(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

WriteTransaction::WriteTransaction(Database& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

WriteTransaction::~WriteTransaction() {
  if (open_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
  db_.exec("COMMIT");
  open_ = false;
}

}  // namespace cuvil::reports
