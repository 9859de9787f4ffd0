// pg_known_files: the import is one transaction that COPYs the hashes of the lines (read by
// known_hash_reader) into a temporary table, then merges them into known_file (ON CONFLICT DO
// NOTHING).
#include "adapters/db/pg_known_files.hpp"

#include <utility>

#include <libpq-fe.h>

#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::param;

constexpr pg::statement add_sql{"ingestd_known_files_add", R"sql(
INSERT INTO known_file (hash, algorithm, source)
SELECT DISTINCT ON (h.hash) h.hash, h.algorithm, h.source
  FROM unnest($1::text[], $2::text[], $3::text[]) AS h(hash, algorithm, source)
 ORDER BY h.hash
ON CONFLICT (hash) DO NOTHING
)sql"};

constexpr pg::statement count_sql{"ingestd_known_files_count", "SELECT count(*) FROM known_file"};

constexpr const char* stage_sql = "CREATE TEMPORARY TABLE known_file_import (hash text COLLATE "
                                  "\"C\", algorithm text) ON COMMIT DROP";
// The merge sorts millions of hashes: in memory rather than in many temporary files.
constexpr const char* work_mem_sql = "SET LOCAL work_mem = '256MB'";
constexpr const char* copy_sql = "COPY known_file_import (hash, algorithm) FROM STDIN";

// The anti-join leaves out what the set holds before the insert (a second import of a list costs
// a merge, not a million speculative insertions); ON CONFLICT covers a concurrent import.
constexpr pg::statement merge_sql{"ingestd_known_files_merge", R"sql(
INSERT INTO known_file (hash, algorithm, source)
SELECT i.hash, i.algorithm, $1
  FROM (SELECT DISTINCT ON (hash) hash, algorithm FROM known_file_import ORDER BY hash) AS i
 WHERE NOT EXISTS (SELECT 1 FROM known_file AS k WHERE k.hash = i.hash)
ON CONFLICT (hash) DO NOTHING
)sql"};

/// Hashes per COPY chunk handed to libpq.
constexpr size_t chunk_hashes = 20000;

} // namespace

pg_known_files::pg_known_files(std::string database_url)
    : conn_(std::move(database_url), pg::session_options::tcp_only()) {}

result<known_files_import_report> pg_known_files::import(std::istream& in,
                                                         const std::string& source) {
  if (auto c = conn_.ensure(true); !c)
    return c.error();
  known_files_import_report report;
  // Also when the connection is gone: the ROLLBACK ends the transaction lost with it, so the
  // next call may connect again (pg::connection::ensure).
  auto rollback = [&](error e) -> result<known_files_import_report> {
    if (conn_.raw() == nullptr || PQtransactionStatus(conn_.raw()) != PQTRANS_IDLE)
      (void)conn_.exec_simple("ROLLBACK");
    return e;
  };
  for (const char* sql : {"BEGIN", work_mem_sql, stage_sql})
    if (auto r = conn_.exec_simple(sql); !r)
      return rollback(r.error());
  ::PGresult* started = PQexec(conn_.raw(), copy_sql);
  if (PQresultStatus(started) != PGRES_COPY_IN) {
    auto err = pg::classify(started, conn_.raw(), "known_files.copy");
    PQclear(started);
    return rollback(err);
  }
  PQclear(started);
  known_hash_reader reader{in};
  std::vector<known_hash> batch;
  std::string buf;
  result<void> failed;
  for (;;) {
    batch.clear();
    auto more = reader.next(batch, chunk_hashes);
    if (!more) {
      failed = more.error();
      break;
    }
    buf.clear();
    for (auto& h : batch) {
      buf += h.hash;
      buf += '\t';
      buf += h.algorithm;
      buf += '\n';
    }
    report.hashes += static_cast<int64_t>(batch.size());
    if (!buf.empty() && PQputCopyData(conn_.raw(), buf.data(), static_cast<int>(buf.size())) != 1) {
      failed = pg::classify(nullptr, conn_.raw(), "known_files.copy");
      break;
    }
    if (!*more)
      break;
  }
  report.lines = reader.lines();
  // A bad line ends the COPY with an error: the server drops what it received.
  PQputCopyEnd(conn_.raw(), failed ? nullptr : "the input had a bad line");
  bool copy_ok = true;
  error copy_error;
  while (::PGresult* res = PQgetResult(conn_.raw())) {
    if (PQresultStatus(res) != PGRES_COMMAND_OK && copy_ok) {
      copy_ok = false;
      copy_error = pg::classify(res, conn_.raw(), "known_files.copy");
    }
    PQclear(res);
  }
  if (!failed)
    return rollback(failed.error());
  if (!copy_ok)
    return rollback(copy_error);
  auto merged = conn_.exec(merge_sql, {pg::clean(source)});
  if (!merged)
    return rollback(merged.error());
  report.added = merged->affected();
  if (auto r = conn_.exec_simple("COMMIT"); !r)
    return rollback(r.error());
  return report;
}

result<int64_t> pg_known_files::add(const std::vector<known_hash>& hashes,
                                    const std::vector<std::string>& sources) {
  if (auto c = conn_.ensure(true); !c)
    return c.error();
  std::vector<param> h, a, s;
  for (size_t i = 0; i < hashes.size(); ++i) {
    auto checked = checked_known_hash(hashes[i]);
    if (!checked)
      return checked.error();
    h.emplace_back(std::move(checked->hash));
    a.emplace_back(std::move(checked->algorithm));
    s.push_back(i < sources.size() ? pg::opt_clean(sources[i]) : param{});
  }
  auto res
      = conn_.exec(add_sql, {pg::array_literal(h), pg::array_literal(a), pg::array_literal(s)});
  if (!res)
    return res.error();
  return res->affected();
}

result<int64_t> pg_known_files::count() {
  if (auto c = conn_.ensure(true); !c)
    return c.error();
  auto res = conn_.exec(count_sql, {});
  if (!res)
    return res.error();
  return res->i64(0, 0);
}

} // namespace ingestd
