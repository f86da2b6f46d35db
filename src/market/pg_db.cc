// SPDX-License-Identifier: Apache-2.0
// PostgreSQL behind Db: PQexecParams with text parameters, SQLSTATE mapped to retry/unique.
#include "market/pg_db.h"

#include <libpq-fe.h>

#include <cstring>

#include "market/market.h"

namespace corral::market {
namespace {

class PgDb final : public Db {
 public:
  explicit PgDb(PGconn* conn) : conn_(conn) {}
  ~PgDb() override { PQfinish(conn_); }
  PgDb(const PgDb&) = delete;
  PgDb& operator=(const PgDb&) = delete;

  Dialect dialect() const override { return Dialect::kPostgres; }
  Result<void> begin() override {
    auto r = exec("BEGIN ISOLATION LEVEL READ COMMITTED", {});
    if (!r) return r.error();
    return {};
  }

  Result<Rows> exec(std::string_view sql, const Params& params) override {
    // The crash test's kill point between any two statements (BEGIN and COMMIT included).
    failpoint("db.statement");
    const std::string numbered = numberPlaceholders(sql);
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      if (auto* n = std::get_if<int64_t>(&params[i])) {
        texts[i] = std::to_string(*n);
        values[i] = texts[i].c_str();
      } else if (auto* s = std::get_if<std::string>(&params[i])) {
        values[i] = s->c_str();
      }
    }
    std::unique_ptr<PGresult, void (*)(PGresult*)> res(
        PQexecParams(conn_, numbered.c_str(), static_cast<int>(params.size()), nullptr, values.data(), nullptr,
                     nullptr, 0),
        PQclear);
    if (!res) return Error(Errc::kIo, "postgres: no result (connection lost)");
    const ExecStatusType st = PQresultStatus(res.get());
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const char* state = PQresultErrorField(res.get(), PG_DIAG_SQLSTATE);
      const std::string code = state ? state : "";
      // 40001 serialization failure, 40P01 deadlock: retry the transaction. The message
      // names the SQLSTATE only: PostgreSQL's text can quote the values of a failed row.
      if (code == "40001" || code == "40P01") return Error(kRetryCode, "postgres conflict " + code);
      if (code == "23505") return Error(kUniqueCode, "postgres unique violation");
      return Error(Errc::kIo, "postgres error sqlstate " + (code.empty() ? std::string("none") : code));
    }
    Rows out;
    const int n = PQntuples(res.get());
    const int cols = PQnfields(res.get());
    out.rows.reserve(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      auto& row = out.rows.emplace_back();
      for (int c = 0; c < cols; ++c) {
        if (PQgetisnull(res.get(), r, c)) {
          row.emplace_back(std::nullopt);
        } else {
          row.emplace_back(std::string(PQgetvalue(res.get(), r, c), static_cast<size_t>(PQgetlength(res.get(), r, c))));
        }
      }
    }
    const char* tuples = PQcmdTuples(res.get());
    out.affected = (tuples && *tuples) ? std::strtoll(tuples, nullptr, 10) : 0;
    return out;
  }

 private:
  PGconn* conn_;
};

}  // namespace

std::string numberPlaceholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  bool in_literal = false;
  int n = 0;
  for (char c : sql) {
    if (c == '\'') in_literal = !in_literal;
    if (c == '?' && !in_literal) {
      out += '$';
      out += std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::unique_ptr<Db>> openPostgres(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    // PQerrorMessage can carry the password of a URL; say only that it failed.
    PQfinish(conn);
    return Error(Errc::kIo, "postgres: cannot connect to the --db server");
  }
  auto db = std::make_unique<PgDb>(conn);
  // The notices PostgreSQL prints on stderr (e.g. "no transaction in progress") are noise.
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Db>(std::move(db));
}

}  // namespace corral::market
