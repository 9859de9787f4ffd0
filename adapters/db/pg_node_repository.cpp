// The node registry's SQL. "lost" is computed when read: a row not stopped whose node has not
// refreshed it for its lease.
#include "adapters/db/pg_node_repository.hpp"

#include "adapters/db/pg_values.hpp"

namespace ingestd {

namespace {

// A restarted node with the same id takes the row over: a new incarnation, running, no drain.
constexpr pg::statement node_register_sql{"ingestd_node_register", R"sql(
INSERT INTO worker_node AS n (id, incarnation, host, pid, version, stages, capacity, lease_seconds,
                              in_flight, done_last_minute, started_at, last_seen, state,
                              drain_requested_at, classes, capacity_usage)
VALUES ($1, $2::uuid, $3, $4::integer, $5, $6, $7::integer, $8::integer, 0, 0, now(), now(),
        'running', NULL, $9, 0)
ON CONFLICT (id) DO UPDATE
   SET incarnation = EXCLUDED.incarnation, host = EXCLUDED.host, pid = EXCLUDED.pid,
       version = EXCLUDED.version, stages = EXCLUDED.stages, capacity = EXCLUDED.capacity,
       lease_seconds = EXCLUDED.lease_seconds, in_flight = 0, done_last_minute = 0,
       started_at = now(), last_seen = now(), state = 'running', drain_requested_at = NULL,
       classes = EXCLUDED.classes, capacity_usage = 0
)sql"};

// A stopped row stays stopped: a refresh that was on its way when the node stopped changes
// nothing.
constexpr pg::statement refresh_sql{"ingestd_node_refresh", R"sql(
UPDATE worker_node
   SET last_seen = now(), in_flight = $3::integer, done_last_minute = $4::integer,
       state = CASE WHEN $5::boolean THEN 'draining' ELSE 'running' END,
       capacity_usage = $6::real
 WHERE id = $1 AND incarnation = $2::uuid AND state <> 'stopped'
RETURNING drain_requested_at IS NOT NULL
)sql"};

constexpr pg::statement stopped_sql{"ingestd_node_stopped", R"sql(
UPDATE worker_node SET state = 'stopped', in_flight = 0, last_seen = now()
 WHERE id = $1 AND incarnation = $2::uuid
)sql"};

constexpr pg::statement node_list_sql{"ingestd_node_list", R"sql(
SELECT id, host, pid, version, stages, capacity, in_flight, done_last_minute,
       CASE WHEN state <> 'stopped' AND last_seen < now() - make_interval(secs => lease_seconds)
            THEN 'lost' ELSE state END,
       drain_requested_at IS NOT NULL,
       to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       to_char(last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       greatest(0, floor(extract(epoch FROM now() - last_seen)))::bigint,
       classes, capacity_usage::float8
  FROM worker_node
 ORDER BY id
)sql"};

constexpr pg::statement drain_one_sql{"ingestd_node_drain_one", R"sql(
UPDATE worker_node SET drain_requested_at = coalesce(drain_requested_at, now())
 WHERE id = $1 AND state <> 'stopped'
RETURNING id
)sql"};

constexpr pg::statement drain_all_sql{"ingestd_node_drain_all", R"sql(
UPDATE worker_node SET drain_requested_at = coalesce(drain_requested_at, now())
 WHERE state <> 'stopped'
RETURNING id
)sql"};

constexpr pg::statement node_prune_sql{"ingestd_node_prune", R"sql(
DELETE FROM worker_node WHERE last_seen < now() - make_interval(secs => $1::integer)
)sql"};

} // namespace

pg_node_repository::pg_node_repository(std::string database_url, pg::session_options session)
    : pool_(std::make_unique<pg::pool>(std::move(database_url),
                                       pg::pool_options{1, "ingestd-nodes", session})) {}

pg_node_repository::~pg_node_repository() = default;

void pg_node_repository::register_node(node_registration node, callback<void> done) {
  pool_->call(std::move(done), [node = std::move(node)](pg::connection& conn, const auto& done) {
    auto res = conn.exec(node_register_sql,
                         {pg::clean(node.id), node.incarnation.str(), pg::clean(node.host),
                          std::to_string(node.pid), pg::clean(node.version), pg::clean(node.stages),
                          std::to_string(node.capacity), std::to_string(node.lease.count()),
                          pg::clean(node.classes)});
    if (!res)
      return done(res.error());
    done({});
  });
}

void pg_node_repository::refresh(node_refresh node, callback<node_refresh_answer> done) {
  pool_->call(std::move(done), [node = std::move(node)](pg::connection& conn, const auto& done) {
    auto res = conn.exec(refresh_sql,
                         {pg::clean(node.id), node.incarnation.str(),
                          std::to_string(node.in_flight), std::to_string(node.done_last_minute),
                          node.draining ? "true" : "false", std::to_string(node.capacity_usage)});
    if (!res)
      return done(res.error());
    node_refresh_answer answer;
    answer.found = res->size() > 0;
    answer.drain_requested = answer.found && res->boolean(0, 0);
    done(answer);
  });
}

void pg_node_repository::mark_stopped(std::string id, uuid incarnation, callback<void> done) {
  pool_->call(std::move(done),
              [id = std::move(id), incarnation](pg::connection& conn, const auto& done) {
                auto res = conn.exec(stopped_sql, {pg::clean(id), incarnation.str()});
                if (!res)
                  return done(res.error());
                done({});
              });
}

void pg_node_repository::list(callback<std::vector<node_info>> done) {
  pool_->call(std::move(done), [](pg::connection& conn, const auto& done) {
    auto res = conn.exec(node_list_sql, {});
    if (!res)
      return done(res.error());
    std::vector<node_info> nodes;
    nodes.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r) {
      node_info n;
      n.id = res->str(r, 0);
      n.host = res->str(r, 1);
      n.pid = static_cast<int32_t>(res->i64(r, 2));
      n.version = res->str(r, 3);
      n.stages = res->str(r, 4);
      n.capacity = static_cast<int32_t>(res->i64(r, 5));
      n.in_flight = static_cast<int32_t>(res->i64(r, 6));
      n.done_last_minute = static_cast<int32_t>(res->i64(r, 7));
      n.state = res->str(r, 8);
      n.drain_requested = res->boolean(r, 9);
      n.started_at = res->str(r, 10);
      n.last_seen = res->str(r, 11);
      n.last_seen_seconds_ago = res->i64(r, 12);
      n.classes = res->str(r, 13);
      n.capacity_usage = res->f64(r, 14);
      nodes.push_back(std::move(n));
    }
    done(std::move(nodes));
  });
}

void pg_node_repository::request_drain(std::optional<std::string> id,
                                       callback<std::vector<std::string>> done) {
  pool_->call(std::move(done), [id = std::move(id)](pg::connection& conn, const auto& done) {
    auto res = id ? conn.exec(drain_one_sql, {pg::clean(*id)}) : conn.exec(drain_all_sql, {});
    if (!res)
      return done(res.error());
    std::vector<std::string> ids;
    ids.reserve(static_cast<size_t>(res->size()));
    for (int r = 0; r < res->size(); ++r)
      ids.push_back(res->str(r, 0));
    done(std::move(ids));
  });
}

void pg_node_repository::prune(std::chrono::seconds retention, callback<int64_t> done) {
  pool_->call(std::move(done), [retention](pg::connection& conn, const auto& done) {
    auto res = conn.exec(node_prune_sql, {std::to_string(retention.count())});
    if (!res)
      return done(res.error());
    done(res->affected());
  });
}

} // namespace ingestd
