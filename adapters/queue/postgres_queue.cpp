// postgres_queue: SQS semantics on table queue_message. Receives lock rows with FOR UPDATE SKIP
// LOCKED; empty long polls park with a listener thread (LISTEN on its own connection) until a
// notification, the next visibility expiry or their deadline, so nothing spins.
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/db/lifecycle_sql.hpp"
#include "adapters/support/coalescing_queue.hpp"
#include "adapters/support/thread_name.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <libpq-fe.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "adapters/db/pg_batch.hpp"
#include "adapters/db/pg_connection.hpp"
#include "messages/text.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

namespace {

using pg::param;
using clock_type = std::chrono::steady_clock;

// Takes up to $2 visible messages of queue $1 by effective priority (rank: priority less the
// ageing the queue grants for the time waited, migration 010), then id: the best of those never
// received (the ready index) and of those received before whose visibility ran out (the held
// index, from its head), so that no receive walks past the messages in flight (migration 031).
// Those already received $4 times (when $4 > 0) move to the dead-letter queue $5 instead of
// being delivered; the rest get a new receipt, a higher receive count and the visibility timeout
// $3. Rows locked by a branch and not picked are free again when the statement ends. One generic
// plan: PostgreSQL planned it anew at every call (its generic estimate, for any LIMIT, looks
// dearer than a plan for 10 rows), 0.28 ms of planning for the same plan each time.
constexpr pg::statement receive_sql{"ingestd_queue_receive", R"sql(
WITH ready AS (
  SELECT id, receive_count, rank FROM queue_message
   WHERE queue_name = $1 AND NOT held AND visible_at <= now()
   ORDER BY rank, id
   LIMIT $2
   FOR UPDATE SKIP LOCKED
), due AS (
  SELECT id, receive_count, rank FROM queue_message
   WHERE queue_name = $1 AND held AND visible_at <= now()
   ORDER BY visible_at
   LIMIT $2
   FOR UPDATE SKIP LOCKED
), picked AS (
  SELECT id, receive_count FROM (SELECT * FROM ready UNION ALL SELECT * FROM due) AS c
   ORDER BY rank, id
   LIMIT $2
), dead AS (
  UPDATE queue_message AS m
     SET queue_name = $5, receipt = NULL, held = false, receive_count = 0, visible_at = now()
    FROM picked AS p
   WHERE m.id = p.id AND $4::integer > 0 AND p.receive_count >= $4::integer
  RETURNING m.id
), got AS (
  UPDATE queue_message AS m
     SET receipt = gen_random_uuid(),
         held = true,
         receive_count = m.receive_count + 1,
         visible_at = now() + make_interval(secs => $3::double precision)
    FROM picked AS p
   WHERE m.id = p.id AND NOT ($4::integer > 0 AND p.receive_count >= $4::integer)
  RETURNING m.id, m.receipt, m.body, m.receive_count, m.sent_at, m.visible_at, m.priority, m.rank
)
SELECT false AS dead, g.id, g.receipt, g.body, g.receive_count,
       floor(extract(epoch FROM g.sent_at) * 1000)::bigint AS sent_at_ms, g.priority, g.rank
  FROM got AS g
UNION ALL
SELECT true, d.id, NULL, NULL, 0, 0, 0, 0 FROM dead AS d
ORDER BY 1, 8, 2
)sql",
                                    pg::plans::generic};

// Seconds until the next message of the queue becomes visible (NULL when the queue is empty).
constexpr pg::statement next_visible_sql{"ingestd_queue_next_visible", R"sql(
SELECT extract(epoch FROM min(visible_at) - now())::double precision
  FROM queue_message WHERE queue_name = $1
)sql"};

// Deletes and visibility changes lock their rows in id order first: a batch of each, running at
// once on two connections over the same messages, then wait for each other instead of
// deadlocking (which failed both, left deleted messages to come back and let held ones become
// visible to another receive). One generic plan for the delete, as for the receive: a job of the
// match stage deletes its message alone, and each was planned anew.
constexpr pg::statement delete_sql{"ingestd_queue_delete", R"sql(
WITH doomed AS (
  SELECT id FROM queue_message
   WHERE queue_name = $1 AND receipt = ANY($2::uuid[])
   ORDER BY id
   FOR UPDATE
)
DELETE FROM queue_message AS m USING doomed WHERE m.id = doomed.id RETURNING m.receipt
)sql",
                                   pg::plans::generic};

constexpr pg::statement visibility_sql{"ingestd_queue_visibility", R"sql(
WITH held AS (
  SELECT m.id, v.secs
    FROM queue_message AS m
    JOIN unnest($2::uuid[], $3::integer[]) AS v(receipt, secs) ON m.receipt = v.receipt
   WHERE m.queue_name = $1
   ORDER BY m.id
   FOR UPDATE OF m
)
UPDATE queue_message AS m
   SET visible_at = now() + make_interval(secs => held.secs)
  FROM held
 WHERE m.id = held.id
RETURNING m.receipt
)sql"};

constexpr pg::statement send_sql{"ingestd_queue_send", R"sql(
INSERT INTO queue_message (id, queue_name, body, visible_at, sent_at, priority, tenant_id)
SELECT m.id, $1, m.body, now() + make_interval(secs => m.delay), now(), m.priority, m.tenant
  FROM unnest($2::uuid[], $3::text[], $4::integer[], $5::smallint[], $6::uuid[])
       AS m(id, body, delay, priority, tenant)
)sql"};

constexpr pg::statement stats_sql{"ingestd_queue_stats", R"sql(
SELECT count(*) FILTER (WHERE visible_at <= now()),
       count(*) FILTER (WHERE visible_at > now() AND receipt IS NOT NULL),
       count(*) FILTER (WHERE visible_at > now() AND receipt IS NULL),
       COALESCE(floor(extract(epoch FROM now() - min(sent_at))), 0)::bigint
  FROM queue_message WHERE queue_name = $1
)sql"};

/// Re-checks a parked poll at least this often even without a notification, so a notification
/// lost with the listener's connection costs latency, not a message.
constexpr std::chrono::milliseconds safety_recheck{5000};
/// How soon a poll retries after a transient database error (within its wait).
constexpr std::chrono::milliseconds error_retry{500};
/// Visible rows that another receive holds locked are released within its statement.
constexpr std::chrono::milliseconds locked_recheck{20};

batch_entry_result ok_entry(std::string ref) {
  batch_entry_result r;
  r.ref = std::move(ref);
  return r;
}

batch_entry_result failed_entry(std::string ref, error err) {
  batch_entry_result r;
  r.ref = std::move(ref);
  r.failed = true;
  r.error = std::move(err);
  return r;
}

} // namespace

struct postgres_queue::pending_delete {
  std::vector<std::string> receipts;
  callback<std::vector<batch_entry_result>> done;
};

struct postgres_queue::impl {
  struct parked_poll {
    int max_messages;
    std::chrono::seconds visibility;
    clock_type::time_point deadline;
    clock_type::time_point recheck_at;
    callback<std::vector<queue_message>> done;
  };

  std::string url;
  std::string queue;
  std::string dlq;
  postgres_queue_options opts;
  std::unique_ptr<pg::pool> pool;

  /// Deletes wait here while one runs, and go together in the next statement: under load, the
  /// acknowledgements of many jobs cost one round trip; when idle, a delete goes at once.
  coalescing_queue<pending_delete> deletes;
  std::atomic<uint64_t> delete_statements{0};

  // Shared with the listener thread.
  std::mutex mtx;
  std::vector<parked_poll> parked;
  uint64_t generation = 0;
  bool stopping = false;
  int wake_fd = -1;
  std::thread listener;

  impl(std::string url_in, std::string queue_in, postgres_queue_options opts_in)
      : url(std::move(url_in)), queue(std::move(queue_in)), opts(std::move(opts_in)) {
    dlq = opts.dead_letter_queue.empty() ? queue + "-dlq" : opts.dead_letter_queue;
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pool = std::make_unique<pg::pool>(
        url, pg::pool_options{opts.pool_size, "ingestd-queue", opts.session});
    listener = std::thread([this] { listen_loop(); });
  }

  ~impl() {
    {
      std::lock_guard guard{mtx};
      stopping = true;
    }
    wake();
    listener.join();
    // Runs what is queued; polls that would park now answer at once (stopping is set).
    pool.reset();
    if (wake_fd >= 0)
      ::close(wake_fd);
  }

  void wake() {
    uint64_t one = 1;
    auto n = ::write(wake_fd, &one, sizeof(one));
    (void)n;
  }

  uint64_t current_generation() {
    std::lock_guard guard{mtx};
    return generation;
  }

  // -- receive ------------------------------------------------------------------------------

  void attempt(parked_poll poll, pg::connection& conn) {
    auto seen = current_generation();
    std::vector<queue_message> out;
    // Redriven messages free batch slots: take again until the batch is full or none moved.
    for (;;) {
      auto want = poll.max_messages - static_cast<int>(out.size());
      auto res = conn.exec(receive_sql,
                           {queue, std::to_string(want), std::to_string(poll.visibility.count()),
                            std::to_string(std::max(opts.max_receive_count, 0)), dlq});
      if (!res) {
        if (!out.empty())
          break;
        // The database is unreachable: retry within the poll's wait rather than answer at once,
        // so that a poller that re-polls on error does not spin; report when the wait ran out.
        if (res.error().transient() && clock_type::now() + error_retry < poll.deadline) {
          poll.recheck_at = clock_type::now() + error_retry;
          return park(std::move(poll), seen);
        }
        return poll.done(res.error());
      }
      int moved = 0;
      for (int r = 0; r < res->size(); ++r) {
        if (res->boolean(r, 0)) {
          ++moved;
          continue;
        }
        queue_message m;
        m.id = res->str(r, 1);
        m.receipt = res->str(r, 2);
        m.body = res->str(r, 3);
        m.receive_count = static_cast<int32_t>(res->i64(r, 4));
        m.sent_at_ms = res->i64(r, 5);
        m.priority = static_cast<int32_t>(res->i64(r, 6));
        out.push_back(std::move(m));
      }
      if (moved == 0 || static_cast<int>(out.size()) >= poll.max_messages)
        break;
    }
    auto now = clock_type::now();
    if (!out.empty() || now >= poll.deadline)
      return poll.done(std::move(out));
    // Nothing visible: park until the next message becomes visible, a notification or the end.
    auto recheck = std::min(poll.deadline, now + safety_recheck);
    if (auto next = conn.exec(next_visible_sql, {queue});
        next && next->size() == 1 && !next->is_null(0, 0)) {
      auto secs = next->f64(0, 0);
      auto delay = secs <= 0
                       ? locked_recheck
                       : std::chrono::milliseconds{static_cast<int64_t>(std::ceil(secs * 1000.0))};
      recheck = std::min(recheck, now + delay);
    }
    poll.recheck_at = recheck;
    park(std::move(poll), seen);
  }

  void park(parked_poll poll, uint64_t seen) {
    std::unique_lock guard{mtx};
    if (stopping) {
      // Shutting down: answer what we have (nothing) rather than wait out the poll.
      poll.done(std::vector<queue_message>{});
      return;
    }
    if (generation == seen) {
      parked.push_back(std::move(poll));
      guard.unlock();
      wake();
      return;
    }
    guard.unlock();
    // A notification arrived while we were looking: look again at once.
    dispatch(std::move(poll));
  }

  void dispatch(parked_poll poll) {
    // poll.done answers once (see receive()): a throwing attempt answers the error.
    auto failed = [done = poll.done](const error& err) { done(err); };
    pool->submit([this, poll = std::move(poll)](
                     pg::connection& conn) mutable { attempt(std::move(poll), conn); },
                 std::move(failed));
  }

  // -- listener -----------------------------------------------------------------------------

  void listen_loop() {
    name_this_thread("ingestd-listen");
    pg::connection conn{url, opts.session};
    bool listening = false;
    for (;;) {
      if (!listening) {
        if (conn.ensure() && conn.exec_simple("LISTEN ingestd_queue")) {
          listening = true;
          // Notifications sent while we were not listening are lost: everyone looks again.
          wake_all();
        }
      }
      // Sleep until a notification, a wake-up, or the earliest parked recheck.
      auto now = clock_type::now();
      auto until = now + (listening ? safety_recheck : std::chrono::milliseconds{500});
      {
        std::lock_guard guard{mtx};
        if (stopping)
          break;
        for (auto& p : parked)
          until = std::min(until, p.recheck_at);
      }
      auto timeout_ms = std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count() + 1);
      pollfd fds[2];
      int nfds = 1;
      fds[0] = {wake_fd, POLLIN, 0};
      if (listening && PQsocket(conn.raw()) >= 0) {
        fds[1] = {PQsocket(conn.raw()), POLLIN, 0};
        nfds = 2;
      }
      ::poll(fds, nfds, static_cast<int>(std::min<int64_t>(timeout_ms, 60000)));
      if (fds[0].revents & POLLIN) {
        uint64_t counter = 0;
        auto n = ::read(wake_fd, &counter, sizeof(counter));
        (void)n;
      }
      bool notified = false;
      if (listening) {
        if (PQconsumeInput(conn.raw()) == 0 || !conn.alive()) {
          conn.drop();
          listening = false;
          continue;
        }
        while (PGnotify* note = PQnotifies(conn.raw())) {
          if (note->extra != nullptr && queue == note->extra)
            notified = true;
          PQfreemem(note);
        }
        if (!conn.alive()) {
          // The server announced the end (FATAL): reconnect now; everyone looks again then.
          conn.drop();
          listening = false;
          continue;
        }
      }
      if (notified)
        wake_all();
      else
        wake_due();
    }
    // Stopping: parked polls answer empty, as a poll whose wait ran out.
    std::vector<parked_poll> left;
    {
      std::lock_guard guard{mtx};
      left.swap(parked);
    }
    for (auto& p : left)
      p.done(std::vector<queue_message>{});
  }

  void wake_all() {
    std::vector<parked_poll> ready;
    {
      std::lock_guard guard{mtx};
      ++generation;
      ready.swap(parked);
    }
    for (auto& p : ready)
      dispatch(std::move(p));
  }

  void wake_due() {
    std::vector<parked_poll> ready;
    auto now = clock_type::now();
    {
      std::lock_guard guard{mtx};
      auto it = std::partition(parked.begin(), parked.end(),
                               [&](const parked_poll& p) { return p.recheck_at > now; });
      std::move(it, parked.end(), std::back_inserter(ready));
      parked.erase(it, parked.end());
    }
    for (auto& p : ready)
      dispatch(std::move(p));
  }
};

postgres_queue::postgres_queue(std::string database_url, std::string queue_name,
                               postgres_queue_options opts)
    : impl_(
        std::make_unique<impl>(std::move(database_url), std::move(queue_name), std::move(opts))) {}

postgres_queue::~postgres_queue() = default;

void postgres_queue::receive(int max_messages, std::chrono::seconds wait,
                             std::chrono::seconds visibility,
                             callback<std::vector<queue_message>> done) {
  impl::parked_poll poll;
  poll.max_messages = std::clamp(max_messages, 1, postgres_queue::max_receive);
  poll.visibility = std::clamp(visibility, std::chrono::seconds{0}, std::chrono::seconds{43200});
  poll.deadline
      = clock_type::now() + std::clamp(wait, std::chrono::seconds{0}, std::chrono::seconds{20});
  poll.done = pg::answer_once(std::move(done));
  impl_->dispatch(std::move(poll));
}

void postgres_queue::remove(std::vector<std::string> receipts,
                            callback<std::vector<batch_entry_result>> done) {
  if (impl_->deletes.push({std::move(receipts), std::move(done)}))
    pg::submit_coalesced(*impl_->pool, impl_->deletes,
                         [this](pg::connection& conn, std::vector<pending_delete>& batch) {
                           run_deletes(conn, batch);
                         });
}

void postgres_queue::run_deletes(pg::connection& conn, std::vector<pending_delete>& batch) {
  std::vector<param> valid;
  std::vector<std::vector<batch_entry_result>> outs;
  for (auto& part : batch) {
    auto& out = outs.emplace_back();
    for (auto& r : part.receipts) {
      if (uuid::parse(r)) {
        valid.emplace_back(r);
        out.push_back(ok_entry(r));
      } else {
        out.push_back(failed_entry(
            r, error::make_permanent("queue.ReceiptHandleIsInvalid", "not a receipt: " + r)));
      }
    }
  }
  if (!valid.empty()) {
    // A stale receipt matches no row: the message was received again or is gone, and the
    // delete does nothing, as SQS does.
    auto res = conn.exec(delete_sql, {impl_->queue, pg::array_literal(valid)});
    if (!res)
      for (auto& out : outs)
        for (auto& e : out)
          if (!e.failed)
            e = failed_entry(e.ref, res.error());
  }
  ++impl_->delete_statements;
  for (size_t i = 0; i < batch.size(); ++i)
    batch[i].done(std::move(outs[i]));
}

uint64_t postgres_queue::delete_statements() const {
  return impl_->delete_statements.load();
}

void postgres_queue::change_visibility(std::vector<visibility_change> changes,
                                       callback<std::vector<batch_entry_result>> done) {
  impl_->pool->call(std::move(done), [this, changes = std::move(changes)](pg::connection& conn,
                                                                          const auto& done) {
    std::vector<batch_entry_result> out;
    std::vector<param> receipts, secs;
    for (auto& c : changes) {
      if (!uuid::parse(c.receipt)) {
        out.push_back(
            failed_entry(c.receipt, error::make_permanent("queue.ReceiptHandleIsInvalid",
                                                          "not a receipt: " + c.receipt)));
      } else if (c.timeout.count() < 0 || c.timeout.count() > 43200) {
        out.push_back(failed_entry(
            c.receipt, error::make_permanent("queue.InvalidParameterValue",
                                             "visibility timeout must be within 0..43200 s")));
      } else {
        receipts.emplace_back(c.receipt);
        secs.emplace_back(std::to_string(c.timeout.count()));
        out.push_back(ok_entry(c.receipt));
      }
    }
    if (!receipts.empty()) {
      auto res = conn.exec(visibility_sql,
                           {impl_->queue, pg::array_literal(receipts), pg::array_literal(secs)});
      if (!res) {
        for (auto& e : out)
          if (!e.failed)
            e = failed_entry(e.ref, res.error());
      } else {
        std::vector<std::string> changed;
        changed.reserve(static_cast<size_t>(res->size()));
        for (int r = 0; r < res->size(); ++r)
          changed.push_back(res->str(r, 0));
        // A stale receipt changes nothing. The entry says so (as SQS's MessageNotInflight
        // does), so that a heartbeat learns that the message is no longer its to extend.
        for (auto& e : out) {
          if (e.failed)
            continue;
          auto canonical = uuid::parse(e.ref)->str();
          if (std::find(changed.begin(), changed.end(), canonical) == changed.end())
            e = failed_entry(
                e.ref, error::make_claim_lost("receipt is stale: the message was received again or "
                                              "deleted"));
        }
      }
    }
    done(std::move(out));
  });
}

void postgres_queue::send(std::vector<outgoing_message> messages,
                          callback<std::vector<batch_entry_result>> done) {
  impl_->pool->call(std::move(done), [this, messages = std::move(messages)](pg::connection& conn,
                                                                            const auto& done) {
    std::vector<batch_entry_result> out;
    std::vector<param> ids, bodies, delays, priorities, tenants;
    for (auto& m : messages) {
      if (clean_text(m.body) != m.body) {
        // Refused alone (as SQS does) rather than failing the statement of the whole batch.
        out.push_back(failed_entry(
            "", error::make_permanent("queue.InvalidMessageContents",
                                      "body contains NUL or bytes that are not UTF-8")));
      } else if (m.delay.count() < 0 || m.delay.count() > 900) {
        out.push_back(failed_entry(
            "", error::make_permanent("queue.InvalidParameterValue", "delay must be 0..900 s")));
      } else if (!valid_priority(m.priority)) {
        out.push_back(failed_entry(
            "", error::make_permanent("queue.InvalidParameterValue", "priority must be 0..100")));
      } else if (!m.tenant.empty() && !uuid::parse(m.tenant)) {
        out.push_back(failed_entry(
            "", error::make_permanent("queue.InvalidParameterValue", "tenant must be a UUID")));
      } else {
        auto id = uuid::v7().str();
        ids.emplace_back(id);
        bodies.emplace_back(m.body);
        delays.emplace_back(std::to_string(m.delay.count()));
        priorities.emplace_back(std::to_string(m.priority));
        tenants.emplace_back(m.tenant.empty() ? param{} : param{m.tenant});
        out.push_back(ok_entry(id));
      }
    }
    if (!ids.empty()) {
      auto res = conn.exec(send_sql, {impl_->queue, pg::array_literal(ids),
                                      pg::array_literal(bodies), pg::array_literal(delays),
                                      pg::array_literal(priorities), pg::array_literal(tenants)});
      if (!res) {
        for (auto& e : out)
          if (!e.failed)
            e = failed_entry(e.ref, res.error());
      }
    }
    done(std::move(out));
  });
}

void postgres_queue::stats(callback<queue_stats> done) {
  impl_->pool->call(std::move(done), [this](pg::connection& conn, const auto& done) {
    auto res = conn.exec(stats_sql, {impl_->queue});
    if (!res)
      return done(res.error());
    queue_stats s;
    if (res->size() == 1) {
      s.visible = res->i64(0, 0);
      s.in_flight = res->i64(0, 1);
      s.delayed = res->i64(0, 2);
      s.oldest_age_seconds = res->i64(0, 3);
    }
    done(s);
  });
}

std::string postgres_queue::name() const {
  return "postgres";
}

const std::string& postgres_queue::queue_name() const {
  return impl_->queue;
}

const std::string& postgres_queue::dead_letter_queue() const {
  return impl_->dlq;
}

namespace {

constexpr pg::statement register_sql{"ingestd_queue_register", R"sql(
INSERT INTO queue (name, dead_letter_queue, max_receive_count, ageing_per_minute,
                   fair_spacing_seconds, tenant_weights)
VALUES ($1, NULLIF($2, ''), $3::integer, $4::double precision, $5::double precision, $6::jsonb)
ON CONFLICT (name) DO UPDATE
   SET dead_letter_queue = EXCLUDED.dead_letter_queue,
       max_receive_count = EXCLUDED.max_receive_count,
       ageing_per_minute = EXCLUDED.ageing_per_minute,
       fair_spacing_seconds = EXCLUDED.fair_spacing_seconds,
       tenant_weights = EXCLUDED.tenant_weights
)sql"};

/// {"<tenant>": weight, ...}; tenant ids are UUIDs (checked with the configuration).
std::string weights_json(const std::vector<std::pair<std::string, double>>& weights) {
  std::string out = "{";
  for (auto& [tenant, weight] : weights) {
    if (out.size() > 1)
      out += ',';
    out += '"' + tenant + "\":" + std::to_string(weight);
  }
  return out + "}";
}

constexpr pg::statement exists_sql{"ingestd_queue_exists", R"sql(
SELECT 1 FROM queue WHERE name = $1
)sql"};

} // namespace

result<void> create_postgres_queue(const std::string& database_url, const std::string& name,
                                   const std::string& dead_letter_queue, int max_receive_count,
                                   const postgres_queue_scheduling& scheduling) {
  if (!(scheduling.ageing_per_minute >= 0 && scheduling.ageing_per_minute <= 100))
    return error::make_permanent("queue.InvalidParameterValue",
                                 "the priority ageing must be 0..100 levels per minute");
  if (!(scheduling.fair_spacing_seconds >= 0 && scheduling.fair_spacing_seconds <= 3600))
    return error::make_permanent("queue.InvalidParameterValue",
                                 "the tenant fair spacing must be 0..3600 seconds");
  auto ageing = std::to_string(scheduling.ageing_per_minute);
  auto spacing = std::to_string(scheduling.fair_spacing_seconds);
  auto weights = weights_json(scheduling.tenant_weights);
  pg::connection conn{database_url};
  if (auto c = conn.ensure(); !c)
    return c.error();
  if (!dead_letter_queue.empty()) {
    if (auto r = conn.exec(register_sql, {dead_letter_queue, std::string{}, std::string{"0"},
                                          ageing, spacing, weights});
        !r)
      return r.error();
  }
  auto r = conn.exec(register_sql, {name, dead_letter_queue, std::to_string(max_receive_count),
                                    ageing, spacing, weights});
  if (!r)
    return r.error();
  return {};
}

result<bool> postgres_queue_exists(const std::string& database_url, const std::string& name) {
  pg::connection conn{database_url};
  if (auto c = conn.ensure(); !c)
    return c.error();
  auto r = conn.exec(exists_sql, {name});
  if (!r)
    return r.error();
  return r->size() > 0;
}

const pg::statement pg::lifecycle_sql::queue_receive = receive_sql;
const pg::statement pg::lifecycle_sql::queue_visibility = visibility_sql;
const pg::statement pg::lifecycle_sql::queue_delete = delete_sql;

} // namespace ingestd
