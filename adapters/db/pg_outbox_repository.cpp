#include "adapters/db/pg_outbox_repository.hpp"

#include <algorithm>

#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

using pg::param;

// A take first lets go of the keys the previous take locked: their rows are sent or given back
// by then (a relay takes again only when its round is over).
constexpr pg::statement unlock_all_sql{"ingestd_outbox_unlock_all",
                                       "SELECT pg_advisory_unlock_all()"};

// Keyed rows (one document's events for one sink) go out under a session advisory lock on the
// key (schema, destination, ordering key; a hash collision only makes two keys take turns).
// First the keys of the oldest rows still to send, at most one per row asked for, each locked
// for this session unless another relay holds it; the candidates come from a window of the
// oldest rows, so that keys locked elsewhere do not hide the rest for long.
constexpr pg::statement lock_keys_sql{"ingestd_outbox_lock_keys", R"sql(
WITH candidates AS MATERIALIZED (
  SELECT w.destination, w.ordering_key, min(w.id) AS first_id
    FROM (SELECT o.id, o.destination, o.ordering_key FROM event_outbox AS o
           WHERE o.sent_at IS NULL AND o.dead_at IS NULL AND o.ordering_key IS NOT NULL
             AND (o.destination NOT LIKE 'events:%' OR o.destination = ANY($2::text[]))
           ORDER BY o.id
           LIMIT $1 * 4) AS w
   GROUP BY w.destination, w.ordering_key
   ORDER BY first_id
   LIMIT $1
)
SELECT destination, ordering_key FROM candidates
 WHERE pg_try_advisory_lock(1769108, hashtext(current_schema() || ':' || destination || ':'
                                             || ordering_key))
)sql"};

// Then every row still to send of the locked keys, oldest first. The lock, not the hold, keeps
// other relays off them: a send slower than the hold does not let a second relay split a
// document's events. The hold is set all the same, for relays of an earlier version.
constexpr pg::statement take_keyed_sql{"ingestd_outbox_take_keyed", R"sql(
WITH picked AS (
  SELECT o.id FROM event_outbox AS o
    JOIN unnest($3::text[], $4::text[]) AS k(destination, ordering_key) USING (destination, ordering_key)
   WHERE o.sent_at IS NULL AND o.dead_at IS NULL
   ORDER BY o.id
   LIMIT $1
)
UPDATE event_outbox AS o
   SET claimed_until = now() + make_interval(secs => $2::integer)
  FROM picked
 WHERE o.id = picked.id
RETURNING o.id, o.destination, o.body, COALESCE(o.event_id::text, ''), COALESCE(o.ordering_key, ''),
          COALESCE(o.priority, 50), COALESCE(o.tenant_id::text, '')
)sql"};

// Keys locked whose rows were not taken (beyond the limit, or sent meanwhile) are let go.
constexpr pg::statement unlock_keys_sql{"ingestd_outbox_unlock_keys", R"sql(
SELECT pg_advisory_unlock(1769108, hashtext(current_schema() || ':' || k.destination || ':'
                                            || k.ordering_key))
  FROM unnest($1::text[], $2::text[]) AS k(destination, ordering_key)
)sql"};

// Rows without a key (queue messages of hand-offs) nobody holds, oldest first; SKIP LOCKED keeps
// two relays off the same rows, the hold keeps them off while they are sent.
constexpr pg::statement take_sql{"ingestd_outbox_take", R"sql(
WITH picked AS (
  SELECT o.id FROM event_outbox AS o
   WHERE o.sent_at IS NULL AND o.dead_at IS NULL AND o.ordering_key IS NULL
     AND (o.claimed_until IS NULL OR o.claimed_until < now())
     AND (o.destination NOT LIKE 'events:%' OR o.destination = ANY($3::text[]))
   ORDER BY o.id
   LIMIT $1
   FOR UPDATE SKIP LOCKED
)
UPDATE event_outbox AS o
   SET claimed_until = now() + make_interval(secs => $2::integer)
  FROM picked
 WHERE o.id = picked.id
RETURNING o.id, o.destination, o.body, COALESCE(o.event_id::text, ''), COALESCE(o.ordering_key, ''),
          COALESCE(o.priority, 50), COALESCE(o.tenant_id::text, '')
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

// Answers one row per row that became dead.
constexpr pg::statement failed_sql{"ingestd_outbox_failed", R"sql(
UPDATE event_outbox
   SET claimed_until = NULL, attempts = attempts + 1, last_error = $2,
       dead_at = CASE WHEN attempts + 1 >= $3::integer THEN now() END
 WHERE id = ANY($1::bigint[]) AND sent_at IS NULL AND dead_at IS NULL
RETURNING dead_at IS NOT NULL
)sql"};

constexpr pg::statement prune_sql{"ingestd_outbox_prune", R"sql(
DELETE FROM event_outbox
 WHERE (sent_at IS NOT NULL AND sent_at < now() - make_interval(secs => $1::integer))
    OR (dead_at IS NOT NULL AND dead_at < now() - make_interval(secs => $1::integer))
)sql"};

constexpr pg::statement dead_sql{"ingestd_outbox_dead", R"sql(
SELECT id, destination, body, attempts, COALESCE(last_error, ''),
       to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       to_char(dead_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
  FROM event_outbox WHERE dead_at IS NOT NULL
 ORDER BY dead_at DESC, id DESC
 LIMIT $1
)sql"};

// NULL ids: every dead row.
constexpr pg::statement redeliver_sql{"ingestd_outbox_redeliver", R"sql(
UPDATE event_outbox SET dead_at = NULL, attempts = 0, claimed_until = NULL
 WHERE dead_at IS NOT NULL AND ($1::bigint[] IS NULL OR id = ANY($1::bigint[]))
)sql"};

constexpr pg::statement figures_sql{"ingestd_outbox_figures", R"sql(
SELECT (SELECT count(*) FROM event_outbox WHERE sent_at IS NULL AND dead_at IS NULL),
       COALESCE((SELECT extract(epoch FROM now() - min(created_at))::float8 FROM event_outbox
                  WHERE sent_at IS NULL AND dead_at IS NULL), 0),
       (SELECT count(*) FROM event_outbox WHERE dead_at IS NOT NULL)
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
  pool_->call(std::move(done), [this, limit, hold, sinks = std::move(sinks)](pg::connection& conn,
                                                                             const auto& done) {
    std::vector<param> names(sinks.begin(), sinks.end());
    auto sink_list = pg::array_literal(names);
    std::vector<outbox_row> rows;
    auto read = [&rows](const pg::rows& res) {
      for (int r = 0; r < res.size(); ++r)
        rows.push_back(outbox_row{res.i64(r, 0), res.str(r, 1), res.str(r, 2), res.str(r, 3),
                                  res.str(r, 4), static_cast<int32_t>(res.i64(r, 5)),
                                  res.str(r, 6)});
    };
    // Only this pool's one thread runs these bodies: holds_keys_ needs no lock.
    if (holds_keys_) {
      if (auto unlocked = conn.exec(unlock_all_sql, {}); !unlocked)
        return done(unlocked.error());
      holds_keys_ = false;
    }
    auto locked = conn.exec(lock_keys_sql, {std::to_string(limit), sink_list});
    if (!locked)
      return done(locked.error());
    if (locked->size() > 0) {
      holds_keys_ = true;
      std::vector<param> destinations, keys;
      for (int r = 0; r < locked->size(); ++r) {
        destinations.emplace_back(locked->str(r, 0));
        keys.emplace_back(locked->str(r, 1));
      }
      auto keyed
          = conn.exec(take_keyed_sql, {std::to_string(limit), std::to_string(hold.count()),
                                       pg::array_literal(destinations), pg::array_literal(keys)});
      if (!keyed)
        return done(keyed.error());
      read(*keyed);
      std::vector<param> idle_destinations, idle_keys;
      for (size_t k = 0; k < keys.size(); ++k) {
        auto taken = std::any_of(rows.begin(), rows.end(), [&](const outbox_row& row) {
          return row.destination == destinations[k] && row.ordering_key == keys[k];
        });
        if (!taken) {
          idle_destinations.push_back(destinations[k]);
          idle_keys.push_back(keys[k]);
        }
      }
      if (!idle_keys.empty()) {
        auto unlocked = conn.exec(
            unlock_keys_sql, {pg::array_literal(idle_destinations), pg::array_literal(idle_keys)});
        if (!unlocked)
          return done(unlocked.error());
      }
    }
    if (static_cast<int>(rows.size()) < limit) {
      auto plain = conn.exec(take_sql, {std::to_string(limit - static_cast<int>(rows.size())),
                                        std::to_string(hold.count()), sink_list});
      if (!plain)
        return done(plain.error());
      read(*plain);
    }
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
                                       int max_attempts, callback<int64_t> done) {
  pool_->call(std::move(done), [ids = std::move(ids), error = std::move(error),
                                max_attempts](pg::connection& conn, const auto& done) {
    auto res
        = conn.exec(failed_sql, {id_array(ids), pg::clean(error), std::to_string(max_attempts)});
    if (!res)
      return done(res.error());
    int64_t dead = 0;
    for (int r = 0; r < res->size(); ++r)
      dead += res->text(r, 0) == "t" ? 1 : 0;
    done(dead);
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

void pg_outbox_repository::dead_rows(int limit, callback<std::vector<dead_outbox_row>> done) {
  pool_->call(std::move(done), [limit](pg::connection& conn, const auto& done) {
    auto res = conn.exec(dead_sql, {std::to_string(limit)});
    if (!res)
      return done(res.error());
    std::vector<dead_outbox_row> out;
    out.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      out.push_back(dead_outbox_row{res->i64(r, 0), res->str(r, 1), res->str(r, 2),
                                    static_cast<int32_t>(res->i64(r, 3)), res->str(r, 4),
                                    res->str(r, 5), res->str(r, 6)});
    done(std::move(out));
  });
}

void pg_outbox_repository::redeliver(std::vector<int64_t> ids, callback<int64_t> done) {
  pool_->call(std::move(done), [ids = std::move(ids)](pg::connection& conn, const auto& done) {
    auto res = conn.exec(redeliver_sql, {ids.empty() ? param{} : id_array(ids)});
    if (!res)
      return done(res.error());
    done(res->affected());
  });
}

void pg_outbox_repository::figures(callback<outbox_figures> done) {
  pool_->call(std::move(done), [](pg::connection& conn, const auto& done) {
    auto res = conn.exec(figures_sql, {});
    if (!res)
      return done(res.error());
    done(outbox_figures{res->i64(0, 0), res->f64(0, 1), res->i64(0, 2)});
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
