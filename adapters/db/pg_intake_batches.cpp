// pg_intake_repository's batches: opened by name, sealed, listed and looked up; the counting
// itself is the database's (migration 023's triggers on the ingestions of a batch).
#include <utility>

#include <rapidjson/document.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_intake_session.hpp"
#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::param;

// Created (its trigger emits BATCH_STARTED) or found; a sealed one is open again. A concurrent
// creation of the same name may commit between the insert and the update: then no row comes
// back and the caller runs the statement again.
constexpr pg::statement open_sql{"ingestd_batch_open", R"sql(
WITH created AS (
  INSERT INTO batch (id, tenant_id, name) VALUES ($1, $2, $3)
  ON CONFLICT (tenant_id, name) DO NOTHING
  RETURNING ingestd_batch_json(batch.*)::text AS json
), reopened AS (
  UPDATE batch SET sealed_at = NULL
   WHERE tenant_id = $2 AND name = $3 AND NOT EXISTS (SELECT 1 FROM created)
  RETURNING ingestd_batch_json(batch.*)::text AS json
)
SELECT json FROM created UNION ALL SELECT json FROM reopened
)sql"};

constexpr pg::statement seal_sql{"ingestd_batch_seal", R"sql(
SELECT ingestd_batch_json(b)::text FROM ingestd_batch_seal($1, $2) AS b
)sql"};

constexpr pg::statement duplicate_sql{"ingestd_batch_duplicate", R"sql(
UPDATE batch SET duplicates = duplicates + 1
 WHERE id = $1
   AND NOT EXISTS (SELECT 1 FROM ingestion WHERE id = $2 AND batch_id = $1)
)sql"};

constexpr pg::statement batch_find_sql{"ingestd_batch_find", R"sql(
SELECT ingestd_batch_json(b)::text FROM batch AS b
 WHERE b.id = $1 AND ($2::uuid IS NULL OR b.tenant_id = $2)
)sql"};

constexpr pg::statement batch_list_sql{"ingestd_batch_list", R"sql(
SELECT ingestd_batch_json(b)::text FROM batch AS b
 WHERE $1::uuid IS NULL OR b.tenant_id = $1
 ORDER BY b.created_at DESC, b.id DESC
 LIMIT $2
)sql"};

constexpr pg::statement in_progress_sql{"ingestd_batch_in_progress", R"sql(
SELECT id FROM ingestion WHERE batch_id = $1 AND status = 'in-progress' ORDER BY created_at, id
)sql"};

/// A batch from its JSON (ingestd_batch_json).
batch_info batch_of_row(const pg::rows& rows, int r) {
  batch_info b;
  b.json = rows.str(r, 0);
  rapidjson::Document doc;
  doc.Parse(b.json.c_str(), b.json.size());
  if (doc.HasParseError() || !doc.IsObject())
    return b;
  auto text = [&](const char* key) {
    auto it = doc.FindMember(key);
    return it != doc.MemberEnd() && it->value.IsString()
               ? std::string{it->value.GetString(), it->value.GetStringLength()}
               : std::string{};
  };
  auto count = [&](const char* key) -> int64_t {
    auto it = doc.FindMember(key);
    return it != doc.MemberEnd() && it->value.IsInt64() ? it->value.GetInt64() : 0;
  };
  b.id = uuid::parse(text("batch_id")).value_or(uuid{});
  b.tenant_id = uuid::parse(text("tenant_id")).value_or(uuid{});
  b.name = text("name");
  b.state = text("state");
  b.created_at = text("created_at");
  b.finished_at = text("finished_at");
  b.documents = count("documents");
  b.in_progress = count("in_progress");
  b.completed = count("completed");
  b.for_review = count("for_review");
  b.failed = count("failed");
  b.skipped = count("skipped");
  b.cancelled = count("cancelled");
  b.duplicates = count("duplicates");
  return b;
}

/// The batch a statement answered, if any.
result<std::optional<batch_info>> at_most_one(const result<pg::rows>& res) {
  if (!res)
    return res.error();
  if (res->size() == 0)
    return std::optional<batch_info>{};
  return std::optional<batch_info>{batch_of_row(*res, 0)};
}

param opt_id(const std::optional<uuid>& id) {
  return id ? param{id->str()} : param{};
}

} // namespace

result<batch_info> pg_intake_repository::open_batch(uuid tenant_id, const std::string& name,
                                                    timeout t) {
  borrowed s{*this};
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto res = s->run(open_sql, {uuid::v7().str(), tenant_id.str(), pg::clean(name)}, t);
    if (!res)
      return res.error();
    if (res->size() > 0)
      return batch_of_row(*res, 0);
  }
  return error::make_transient("pg.batch_race", "the batch was neither created nor found; retry");
}

result<std::optional<batch_info>>
pg_intake_repository::seal_batch(uuid batch_id, std::optional<uuid> tenant_id, timeout t) {
  borrowed s{*this};
  return at_most_one(s->run(seal_sql, {batch_id.str(), opt_id(tenant_id)}, t));
}

result<void> pg_intake_repository::note_duplicate(uuid batch_id, uuid live_ingestion_id,
                                                  timeout t) {
  borrowed s{*this};
  if (auto res = s->run(duplicate_sql, {batch_id.str(), live_ingestion_id.str()}, t); !res)
    return res.error();
  return {};
}

result<std::optional<batch_info>>
pg_intake_repository::find_batch(uuid batch_id, std::optional<uuid> tenant_id, timeout t) {
  borrowed s{*this};
  return at_most_one(s->run(batch_find_sql, {batch_id.str(), opt_id(tenant_id)}, t));
}

result<std::vector<batch_info>> pg_intake_repository::list_batches(std::optional<uuid> tenant_id,
                                                                   int limit, timeout t) {
  borrowed s{*this};
  auto res = s->run(batch_list_sql, {opt_id(tenant_id), std::to_string(limit)}, t);
  if (!res)
    return res.error();
  std::vector<batch_info> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(batch_of_row(*res, r));
  return out;
}

result<std::vector<uuid>> pg_intake_repository::batch_in_progress(uuid batch_id, timeout t) {
  borrowed s{*this};
  auto res = s->run(in_progress_sql, {batch_id.str()}, t);
  if (!res)
    return res.error();
  std::vector<uuid> out;
  out.reserve(static_cast<size_t>(res->size()));
  for (int r = 0; r < res->size(); ++r)
    out.push_back(pg::parse_uuid(res->text(r, 0)));
  return out;
}

} // namespace ingestd
