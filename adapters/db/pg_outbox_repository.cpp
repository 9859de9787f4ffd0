#include "adapters/db/pg_outbox_repository.hpp"

#include <algorithm>

#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::param;

// Unsent rows nobody holds, oldest first; SKIP LOCKED keeps two relays off the same rows.
constexpr pg::statement take_sql{"ingestd_outbox_take", R"sql(
WITH picked AS (
  SELECT id FROM event_outbox
   WHERE sent_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
   ORDER BY id
   LIMIT $1
   FOR UPDATE SKIP LOCKED
)
UPDATE event_outbox AS o
   SET claimed_until = now() + make_interval(secs => $2::integer)
  FROM picked
 WHERE o.id = picked.id
RETURNING o.id, o.destination, o.body
)sql"};

constexpr pg::statement sent_sql{"ingestd_outbox_sent", R"sql(
UPDATE event_outbox SET sent_at = now(), claimed_until = NULL, attempts = attempts + 1
 WHERE id = ANY($1::bigint[])
)sql"};

constexpr pg::statement failed_sql{"ingestd_outbox_failed", R"sql(
UPDATE event_outbox SET claimed_until = NULL, attempts = attempts + 1, last_error = $2
 WHERE id = ANY($1::bigint[])
)sql"};

constexpr pg::statement prune_sql{"ingestd_outbox_prune", R"sql(
DELETE FROM event_outbox
 WHERE sent_at IS NOT NULL AND sent_at < now() - make_interval(secs => $1::integer)
)sql"};

param id_array(const std::vector<int64_t>& ids) {
  std::vector<param> items;
  items.reserve(ids.size());
  for (auto id : ids)
    items.emplace_back(std::to_string(id));
  return pg::array_literal(items);
}

} // namespace

pg_outbox_repository::pg_outbox_repository(std::string database_url, pg::session_options session)
  : pool_(std::make_unique<pg::pool>(std::move(database_url),
                                     pg::pool_options{1, "ingestd-outbox", session})) {}

pg_outbox_repository::~pg_outbox_repository() = default;

void pg_outbox_repository::take(int limit, std::chrono::seconds hold,
                                callback<std::vector<outbox_row>> done) {
  pool_->call(std::move(done), [limit, hold](pg::connection& conn, const auto& done) {
    auto res = conn.exec(take_sql, {std::to_string(limit), std::to_string(hold.count())});
    if (!res)
      return done(res.error());
    std::vector<outbox_row> rows;
    rows.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      rows.push_back(outbox_row{res->i64(r, 0), std::string{res->text(r, 1)}, std::string{res->text(r, 2)}});
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.id < b.id; });
    done(std::move(rows));
  });
}

void pg_outbox_repository::mark_sent(std::vector<int64_t> ids, callback<void> done) {
  pool_->call(std::move(done), [ids = std::move(ids)](pg::connection& conn, const auto& done) {
    auto res = conn.exec(sent_sql, {id_array(ids)});
    if (!res)
      return done(res.error());
    done({});
  });
}

void pg_outbox_repository::mark_failed(std::vector<int64_t> ids, std::string error,
                                       callback<void> done) {
  pool_->call(std::move(done), [ids = std::move(ids),
                                error = std::move(error)](pg::connection& conn, const auto& done) {
    auto res = conn.exec(failed_sql, {id_array(ids), pg::clean(error)});
    if (!res)
      return done(res.error());
    done({});
  });
}

void pg_outbox_repository::prune(std::chrono::seconds retention, callback<int64_t> done) {
  pool_->call(std::move(done), [retention](pg::connection& conn, const auto& done) {
    auto res = conn.exec(prune_sql, {std::to_string(retention.count())});
    if (!res)
      return done(res.error());
    done(res->affected());
  });
}

} // namespace ingestd
