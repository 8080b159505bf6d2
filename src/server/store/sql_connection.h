// One database connection behind a small interface, so the store's SQL is
// written once for SQLite and PostgreSQL. SQL uses `?` placeholders.
//
// Thread-safety: a connection is used by one thread at a time.

#ifndef ZEUS_SRC_SERVER_STORE_SQL_CONNECTION_H_
#define ZEUS_SRC_SERVER_STORE_SQL_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "zeus/server/store.h"
#include "zeus/status.h"

namespace zeus::server_internal {

// NULL, integer, double or text. PostgreSQL rows hold text only; the
// accessors below convert.
using SqlValue = std::variant<std::monostate, int64_t, double, std::string>;
using SqlRow = std::vector<SqlValue>;

bool IsNull(const SqlValue& value);
StatusOr<int64_t> AsInt(const SqlValue& value);
StatusOr<double> AsDouble(const SqlValue& value);
StatusOr<std::string> AsString(const SqlValue& value);
StatusOr<std::optional<double>> AsOptionalDouble(const SqlValue& value);
StatusOr<std::optional<int64_t>> AsOptionalInt(const SqlValue& value);
SqlValue FromOptional(const std::optional<double>& value);
SqlValue FromOptional(const std::optional<int64_t>& value);

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  // Runs one statement with `?` placeholders bound to `params`; returns its
  // rows. kAlreadyExists for a uniqueness violation, kUnavailable when the
  // database is busy or unreachable, kInternal otherwise.
  virtual StatusOr<std::vector<SqlRow>> Query(const std::string& sql,
                                              const std::vector<SqlValue>& params) = 0;
  // Runs one or more statements without parameters.
  virtual Status Exec(const std::string& sql) = 0;
  // Starts a transaction. kWrite takes SQLite's write lock at once
  // (BEGIN IMMEDIATE); in PostgreSQL, row locks are taken by the queries.
  virtual Status Begin(TransactionMode mode) = 0;
  virtual Status Commit() = 0;
  virtual Status Rollback() = 0;
  // True when `SELECT ... FOR UPDATE` is available (PostgreSQL).
  virtual bool HasRowLocks() const = 0;
  // False once the connection is broken; the pool then drops it.
  virtual bool healthy() const = 0;
};

// Opens a SQLite connection with WAL, synchronous=NORMAL and a busy timeout.
StatusOr<std::unique_ptr<SqlConnection>> OpenSqliteConnection(const std::string& path);
// Opens a PostgreSQL connection from a libpq URI.
StatusOr<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& uri);

}  // namespace zeus::server_internal

#endif  // ZEUS_SRC_SERVER_STORE_SQL_CONNECTION_H_
