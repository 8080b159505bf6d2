// SQLite backend of SqlConnection: prepared statements cached per connection.

#include <string>
#include <unordered_map>

#include <sqlite3.h>

#include "src/server/store/sql_connection.h"

namespace zeus::server_internal {
namespace {

// Seconds a writer waits for another process's write lock.
constexpr int kBusyTimeoutMs = 10'000;

class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override {
    for (auto& entry : statements_) sqlite3_finalize(entry.second);
    sqlite3_close_v2(db_);
  }

  StatusOr<std::vector<SqlRow>> Query(const std::string& sql,
                                      const std::vector<SqlValue>& params) override {
    ZEUS_ASSIGN_OR_RETURN(sqlite3_stmt * stmt, Prepare(sql));
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    for (size_t i = 0; i < params.size(); ++i) {
      int index = static_cast<int>(i) + 1;
      int rc = SQLITE_OK;
      const SqlValue& p = params[i];
      if (const auto* v = std::get_if<int64_t>(&p)) {
        rc = sqlite3_bind_int64(stmt, index, *v);
      } else if (const auto* d = std::get_if<double>(&p)) {
        rc = sqlite3_bind_double(stmt, index, *d);
      } else if (const auto* s = std::get_if<std::string>(&p)) {
        rc = sqlite3_bind_text(stmt, index, s->data(), static_cast<int>(s->size()),
                               SQLITE_TRANSIENT);
      } else {
        rc = sqlite3_bind_null(stmt, index);
      }
      if (rc != SQLITE_OK) return Error("bind", rc);
    }
    std::vector<SqlRow> rows;
    while (true) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        Status status = Error(sql, rc);
        sqlite3_reset(stmt);
        return status;
      }
      int n = sqlite3_column_count(stmt);
      SqlRow row;
      row.reserve(n);
      for (int c = 0; c < n; ++c) {
        switch (sqlite3_column_type(stmt, c)) {
          case SQLITE_INTEGER:
            row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(stmt, c)));
            break;
          case SQLITE_FLOAT:
            row.emplace_back(sqlite3_column_double(stmt, c));
            break;
          case SQLITE_NULL:
            row.emplace_back(std::monostate());
            break;
          default: {
            const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
            row.emplace_back(std::string(text, sqlite3_column_bytes(stmt, c)));
          }
        }
      }
      rows.push_back(std::move(row));
    }
    sqlite3_reset(stmt);
    return rows;
  }

  Status Exec(const std::string& sql) override {
    char* error = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
    if (rc == SQLITE_OK) return Status::Ok();
    std::string message = error != nullptr ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    return ErrorFromCode(rc, "sqlite: " + message + " (in \"" + sql.substr(0, 80) + "\")");
  }

  Status Begin(TransactionMode mode) override {
    return Exec(mode == TransactionMode::kWrite ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  }
  Status Commit() override { return Exec("COMMIT"); }
  Status Rollback() override {
    if (sqlite3_get_autocommit(db_) != 0) return Status::Ok();  // Already rolled back.
    return Exec("ROLLBACK");
  }
  bool HasRowLocks() const override { return false; }
  bool healthy() const override { return true; }

 private:
  StatusOr<sqlite3_stmt*> Prepare(const std::string& sql) {
    auto it = statements_.find(sql);
    if (it != statements_.end()) return it->second;
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) return Error(sql, rc);
    statements_.emplace(sql, stmt);
    return stmt;
  }

  static Status ErrorFromCode(int rc, std::string message) {
    switch (rc & 0xff) {
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
        return UnavailableError(std::move(message));
      case SQLITE_CONSTRAINT:
        return AlreadyExistsError(std::move(message));
      default:
        return InternalError(std::move(message));
    }
  }

  Status Error(const std::string& context, int rc) {
    return ErrorFromCode(rc, "sqlite: " + std::string(sqlite3_errmsg(db_)) + " (in \"" +
                                 context.substr(0, 80) + "\")");
  }

  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace

StatusOr<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path) {
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) {
    return InvalidArgumentError("sqlite: path \"" + path +
                                "\" is not a file path (in-memory databases are not shared "
                                "between connections)");
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return UnavailableError("sqlite: cannot open \"" + path + "\": " + message);
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto connection = std::make_unique<SqliteConnection>(db);
  // WAL: readers never block the writer; synchronous=NORMAL in WAL mode loses
  // no committed transaction when the process dies (only on power loss).
  // No automatic checkpoints: they fsync inside a request's commit; the
  // store checkpoints from a background thread instead.
  Status status = connection->Exec(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;");
  if (!status.ok()) return status.WithContext("sqlite: configuring \"" + path + "\"");
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace zeus::server_internal
