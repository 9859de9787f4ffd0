#include "adapters/db/pg_outbox_repository.hpp"

#include <algorithm>

#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::param;

// Unsent rows nobody holds, oldest first; SKIP LOCKED keeps two relays off the same rows. A row
// whose key has an earlier unsent row held by a relay (sending it now, or backing off) waits: the
// earlier one is either sent or given back, and then both go in order.
constexpr pg::statement take_sql{"ingestd_outbox_take", R"sql(
WITH picked AS (
  SELECT o.id FROM event_outbox AS o
   WHERE o.sent_at IS NULL AND (o.claimed_until IS NULL OR o.claimed_until < now())
     AND (o.destination NOT LIKE 'events:%' OR o.destination = ANY($3::text[]))
     AND (o.ordering_key IS NULL OR NOT EXISTS (
       SELECT 1 FROM event_outbox AS e
        WHERE e.destination = o.destination AND e.ordering_key = o.ordering_key
          AND e.sent_at IS NULL AND e.id < o.id AND e.claimed_until >= now()))
   ORDER BY o.id
   LIMIT $1
   FOR UPDATE SKIP LOCKED
)
UPDATE event_outbox AS o
   SET claimed_until = now() + make_interval(secs => $2::integer)
  FROM picked
 WHERE o.id = picked.id
RETURNING o.id, o.destination, o.body, COALESCE(o.event_id::text, ''), COALESCE(o.ordering_key, ''),
          COALESCE(o.priority, 50)
)sql"};

// A sink's types: NULL takes every event.
constexpr pg::statement register_sql{"ingestd_outbox_register_sink", R"sql(
INSERT INTO event_sink (name, types) VALUES ($1, $2::text[])
ON CONFLICT (name) DO UPDATE SET types = EXCLUDED.types
)sql"};

constexpr pg::statement emit_sql{"ingestd_outbox_emit",
                                 "SELECT ingestd_emit_event($1, NULL, NULL, NULL, $2::jsonb, $3)"};

constexpr pg::statement stream_sql{"ingestd_outbox_stream", R"sql(
SELECT id, body FROM event_outbox WHERE destination = 'events' AND id > $1 ORDER BY id LIMIT $2
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
                                std::vector<std::string> sinks,
                                callback<std::vector<outbox_row>> done) {
  pool_->call(std::move(done), [limit, hold, sinks = std::move(sinks)](pg::connection& conn,
                                                                       const auto& done) {
    std::vector<param> names(sinks.begin(), sinks.end());
    auto res = conn.exec(
        take_sql, {std::to_string(limit), std::to_string(hold.count()), pg::array_literal(names)});
    if (!res)
      return done(res.error());
    std::vector<outbox_row> rows;
    rows.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      rows.push_back(outbox_row{res->i64(r, 0), res->str(r, 1), res->str(r, 2), res->str(r, 3),
                                res->str(r, 4), static_cast<int32_t>(res->i64(r, 5))});
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

void pg_outbox_repository::register_sinks(std::vector<registered_sink> sinks, callback<void> done) {
  pool_->call(std::move(done), [sinks = std::move(sinks)](pg::connection& conn, const auto& done) {
    for (auto& sink : sinks) {
      std::vector<param> types(sink.types.begin(), sink.types.end());
      auto res = conn.exec(register_sql,
                           {sink.name, types.empty() ? param{} : param{pg::array_literal(types)}});
      if (!res)
        return done(res.error());
    }
    done({});
  });
}

void pg_outbox_repository::emit(std::string type, std::string payload, std::string ordering_key,
                                callback<void> done) {
  if (!pg::valid_json(payload))
    return done(error::make_permanent("pg.invalid_json", "the event's payload is not valid JSON"));
  pool_->call(std::move(done),
              [type = std::move(type), payload = std::move(payload),
               key = std::move(ordering_key)](pg::connection& conn, const auto& done) {
                auto res = conn.exec(emit_sql, {type, payload, pg::opt_clean(key)});
                if (!res)
                  return done(res.error());
                done({});
              });
}

void pg_outbox_repository::read_stream(int64_t after_id, int limit,
                                       callback<std::vector<stream_event>> done) {
  pool_->call(std::move(done), [after_id, limit](pg::connection& conn, const auto& done) {
    auto res = conn.exec(stream_sql, {std::to_string(after_id), std::to_string(limit)});
    if (!res)
      return done(res.error());
    std::vector<stream_event> out;
    out.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      out.push_back(stream_event{res->i64(r, 0), res->str(r, 1)});
    done(std::move(out));
  });
}

} // namespace ingestd
