// PostgreSQL backend of SqlConnection (libpq): statements prepared once per
// connection, parameters and results in text form (doubles written in their
// shortest exact form, read back exactly since PostgreSQL 12).

#include <string>
#include <unordered_map>

#include <fmt/format.h>
#include <libpq-fe.h>

#include "src/server/store/sql_connection.h"

namespace zeus::server_internal {
namespace {

// "?" placeholders -> "$1", "$2", ... (our SQL has no '?' inside literals).
std::string NumberPlaceholders(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  for (char c : sql) {
    if (c == '?') {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

void IgnoreNotice(void*, const char*) {}

class PostgresConnection final : public SqlConnection {
 public:
  explicit PostgresConnection(PGconn* conn) : conn_(conn) {
    PQsetNoticeProcessor(conn_, IgnoreNotice, nullptr);
  }
  ~PostgresConnection() override { PQfinish(conn_); }

  StatusOr<std::vector<SqlRow>> Query(const std::string& sql,
                                      const std::vector<SqlValue>& params) override {
    ZEUS_ASSIGN_OR_RETURN(const std::string* name, Prepare(sql, static_cast<int>(params.size())));
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      const SqlValue& p = params[i];
      if (const auto* v = std::get_if<int64_t>(&p)) {
        texts[i] = std::to_string(*v);
      } else if (const auto* d = std::get_if<double>(&p)) {
        texts[i] = fmt::format("{}", *d);
      } else if (const auto* s = std::get_if<std::string>(&p)) {
        texts[i] = *s;
      } else {
        continue;  // NULL.
      }
      values[i] = texts[i].c_str();
    }
    PGresult* result = PQexecPrepared(conn_, name->c_str(), static_cast<int>(params.size()),
                                      values.data(), nullptr, nullptr, 0);
    Status status = Check(result, sql);
    if (!status.ok()) {
      PQclear(result);
      return status;
    }
    std::vector<SqlRow> rows;
    int n_rows = PQntuples(result);
    int n_cols = PQnfields(result);
    rows.reserve(n_rows);
    for (int r = 0; r < n_rows; ++r) {
      SqlRow row;
      row.reserve(n_cols);
      for (int c = 0; c < n_cols; ++c) {
        if (PQgetisnull(result, r, c)) {
          row.emplace_back(std::monostate());
        } else {
          row.emplace_back(std::string(PQgetvalue(result, r, c), PQgetlength(result, r, c)));
        }
      }
      rows.push_back(std::move(row));
    }
    PQclear(result);
    return rows;
  }

  Status Exec(const std::string& sql) override {
    PGresult* result = PQexec(conn_, sql.c_str());
    Status status = Check(result, sql);
    PQclear(result);
    return status;
  }

  Status Begin(TransactionMode mode) override {
    return Exec(mode == TransactionMode::kWrite
                    ? "BEGIN"
                    : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  }
  Status Commit() override { return Exec("COMMIT"); }
  Status Rollback() override {
    if (PQtransactionStatus(conn_) == PQTRANS_IDLE) return Status::Ok();
    return Exec("ROLLBACK");
  }
  bool HasRowLocks() const override { return true; }
  bool healthy() const override { return PQstatus(conn_) == CONNECTION_OK; }

 private:
  StatusOr<const std::string*> Prepare(const std::string& sql, int n_params) {
    auto it = prepared_.find(sql);
    if (it != prepared_.end()) return &it->second;
    std::string name = "zeus_s" + std::to_string(prepared_.size() + 1);
    PGresult* result =
        PQprepare(conn_, name.c_str(), NumberPlaceholders(sql).c_str(), n_params, nullptr);
    Status status = Check(result, sql);
    PQclear(result);
    if (!status.ok()) return status;
    return &prepared_.emplace(sql, std::move(name)).first->second;
  }

  Status Check(PGresult* result, const std::string& sql) {
    ExecStatusType rc = result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
    if (rc == PGRES_COMMAND_OK || rc == PGRES_TUPLES_OK) return Status::Ok();
    std::string message = "postgresql: ";
    message += result != nullptr ? PQresultErrorMessage(result) : PQerrorMessage(conn_);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    message += " (in \"" + sql.substr(0, 80) + "\")";
    const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    std::string sqlstate = state != nullptr ? state : "";
    if (PQstatus(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 ||
        sqlstate.rfind("57P", 0) == 0) {
      return UnavailableError(message);
    }
    if (sqlstate == "23505") return AlreadyExistsError(message);
    if (sqlstate == "40001" || sqlstate == "40P01") return AbortedError(message);
    return InternalError(message);
  }

  PGconn* conn_;
  std::unordered_map<std::string, std::string> prepared_;
};

}  // namespace

StatusOr<std::unique_ptr<SqlConnection>> OpenPostgresConnection(const std::string& uri) {
  PGconn* conn = PQconnectdb(uri.c_str());
  if (conn == nullptr) return UnavailableError("postgresql: out of memory connecting");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    PQfinish(conn);
    return UnavailableError("postgresql: cannot connect: " + message);
  }
  return std::unique_ptr<SqlConnection>(std::make_unique<PostgresConnection>(conn));
}

}  // namespace zeus::server_internal
