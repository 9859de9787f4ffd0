// pg_work_repository: the fenced claim of any stage's work item, the writes that carry its token,
// the heartbeat's lease renewal and the sweeper's revival, as prepared statements.
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/db/lifecycle_sql.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "adapters/db/pg_batch.hpp"
#include "adapters/db/pg_values.hpp"
#include "adapters/db/pg_work.hpp"
#include "adapters/support/coalescing_queue.hpp"

namespace ingestd {

namespace {

using pg::param;
using pg::parse_uuid;
using pg::uuid_array;

// -- statements ------------------------------------------------------------------------------

// The conditional claim, fenced: the token and the lease are the lock, and a lease that ran out
// (its holder died) can be claimed again. Rows are locked in id order so that two batches over
// the same items (a duplicate delivery, the heartbeat beside a completion) wait for each other.
// For each item of the request's stage in progress, one verdict:
//   moved    it is in another size class than the claimer's (its message is in that queue)
//   held     another worker's lease is live
//   skipped  its document is a known file (skip_known): it ends `skipped`
//   poison   it crashed (a lease ran out with its token set) and this crash reaches the
//            request's max_attempts: it ends `failed` with class poison
//   move     it crashed and the request moves crashes to another class: moved there, its
//            message sent to that class's queue
//   granted  claimed: token, worker, lease; a crash taken over counts as an attempt. The answer
//            says whether it is the item's first claim (no started_at yet)
// Every item asked for records that its message was seen (message_seen_at: see revive). Crashes,
// poison, known files and moves leave audit rows for the stages that keep an audit trail.
// The answer has a row for each item the claim changed (its verdict), and one for each item asked
// for that was not in progress as the statement found it: `finished` with that status, or
// `unknown` to the stage (looked up by key: OFFSET 0 keeps the planner from reading the whole table
// into a hash for a large batch instead). An item with neither was in progress and ended before
// the claim could lock it: finished too. Joining the list asked for to the changed rows instead
// compared every row with every other (a CTE's rows are not hashed for a join the planner expects
// one row from). Each item is asked for once (claim_batch). Every batch runs on one generic plan:
// nothing in it joins two of the batch's lists, and each item is found by key.
constexpr pg::statement claim_sql{"ingestd_work_claim", R"sql(
WITH req AS (
  SELECT r.id, r.ord, r.token, r.stage, r.class, greatest(r.max_attempts, 1) AS max_attempts,
         r.skip_known, r.move_class, r.move_queue, r.audit
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::integer[], $6::boolean[],
                $7::text[], $8::text[], $9::boolean[]) WITH ORDINALITY
         AS r(id, token, stage, class, max_attempts, skip_known, move_class, move_queue, audit, ord)
), lock AS (
  SELECT w.id, req.ord, w.attempt_count, req.token, req.max_attempts, req.move_class,
         req.move_queue, req.audit, w.started_at IS NULL AS first_claim,
         req.class <> '' AND w.size_class <> req.class AS elsewhere,
         w.claim_token IS NULL OR w.lease_expires_at IS NULL OR w.lease_expires_at < now() AS free,
         w.claim_token IS NOT NULL AND (w.lease_expires_at IS NULL OR w.lease_expires_at < now())
           AS crashed,
         req.skip_known
           AND (EXISTS (SELECT 1 FROM known_file AS k WHERE k.hash = d.content_hash)
                OR EXISTS (SELECT 1 FROM known_file AS k WHERE k.hash = d.content_md5)) AS known
    FROM work_item AS w
    JOIN req ON req.id = w.id AND req.stage = w.stage
    JOIN document AS d ON d.id = w.document_id
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
), decided AS (
  SELECT l.*,
         CASE WHEN l.elsewhere THEN 'moved'
              WHEN NOT l.free THEN 'held'
              WHEN l.known THEN 'skipped'
              WHEN l.crashed AND l.attempt_count + 1 >= l.max_attempts THEN 'poison'
              WHEN l.crashed AND l.move_class <> '' THEN 'move'
              ELSE 'granted' END AS verdict,
         l.crashed AND NOT l.elsewhere AND l.free AND NOT l.known AS crash_counted
    FROM lock AS l
), changed AS (
  UPDATE work_item AS w
     SET message_seen_at = now(),
         attempt_count = w.attempt_count + CASE WHEN d.crash_counted THEN 1 ELSE 0 END,
         crash_count = w.crash_count + CASE WHEN d.crash_counted THEN 1 ELSE 0 END,
         status = CASE d.verdict WHEN 'skipped' THEN 'skipped' WHEN 'poison' THEN 'failed'
                                 ELSE w.status END,
         completed_at = CASE WHEN d.verdict IN ('skipped', 'poison') THEN now() ELSE w.completed_at END,
         last_error = CASE WHEN d.verdict = 'skipped' THEN 'known_file: its hash is in the known-file set'
                           WHEN d.crash_counted
                           THEN CASE WHEN d.verdict = 'poison' THEN 'poison: ' ELSE 'worker.crash: ' END
                                || 'the claim of ' || coalesce(w.claimed_by, 'a worker')
                                || ' expired without an outcome or give-back (attempt '
                                || (w.attempt_count + 1) || ' of ' || d.max_attempts || ')'
                           ELSE w.last_error END,
         error_class = CASE WHEN d.verdict = 'poison' THEN 'poison' ELSE w.error_class END,
         size_class = CASE WHEN d.verdict = 'move' THEN d.move_class ELSE w.size_class END,
         class_attempts_base = CASE WHEN d.verdict = 'move' THEN w.attempt_count + 1
                                    ELSE w.class_attempts_base END,
         claim_token = CASE WHEN d.verdict = 'granted' THEN d.token
                            WHEN d.verdict IN ('skipped', 'poison', 'move') THEN NULL
                            ELSE w.claim_token END,
         claimed_by = CASE WHEN d.verdict = 'granted' THEN $10 ELSE w.claimed_by END,
         started_at = CASE WHEN d.verdict = 'granted' THEN now() ELSE w.started_at END,
         lease_expires_at = CASE WHEN d.verdict = 'granted'
                                 THEN now() + make_interval(secs => $11::double precision)
                                 WHEN d.verdict IN ('skipped', 'poison', 'move') THEN NULL
                                 ELSE w.lease_expires_at END,
         due_at = CASE WHEN d.verdict = 'move' THEN now() ELSE w.due_at END
    FROM decided AS d
   WHERE w.id = d.id
  RETURNING w.id, d.ord, w.document_id, w.tenant_id, w.claim_token, w.attempt_count, w.priority,
            w.size_class, w.class_attempts_base, w.last_error, d.verdict, d.crash_counted,
            d.move_queue, d.audit, d.first_claim
), sent AS (
  SELECT count(ingestd_send(c.move_queue, c.id::text, c.priority, $12::boolean, c.tenant_id)) AS n
    FROM changed AS c WHERE c.verdict = 'move'
), audit AS (
  INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, worker_id)
  SELECT c.id, 'claim',
         CASE c.verdict WHEN 'skipped' THEN 'skipped' WHEN 'poison' THEN 'poison'
                        WHEN 'move' THEN 'moved' ELSE 'crash' END,
         CASE WHEN c.verdict = 'move' THEN c.last_error || '; moved to the ' || c.size_class || ' class'
              ELSE c.last_error END,
         $10
    FROM changed AS c
   WHERE c.audit AND (c.crash_counted OR c.verdict = 'skipped')
)
SELECT c.ord, c.verdict, c.document_id, c.tenant_id, c.claim_token AS token, c.attempt_count,
       c.priority, c.size_class, c.class_attempts_base,
       CASE WHEN c.verdict IN ('moved', 'move') THEN c.size_class
            ELSE COALESCE(c.last_error, '') END AS detail,
       (SELECT n FROM sent) AS moved, c.first_claim
  FROM changed AS c
UNION ALL
SELECT r.ord, CASE WHEN w.id IS NULL THEN 'unknown' ELSE 'finished' END, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, COALESCE(w.status, ''), (SELECT n FROM sent), false
  FROM unnest($1::uuid[], $3::text[]) WITH ORDINALITY AS r(id, stage, ord)
  LEFT JOIN LATERAL (SELECT w.id, w.status FROM work_item AS w
                      WHERE w.id = r.id AND w.stage = r.stage OFFSET 0) AS w ON true
 WHERE w.id IS NULL OR w.status <> 'in-progress'
)sql",
                                  pg::plans::generic};

// One statement for the heartbeat's whole batch; answers the claims that were lost. The heartbeat
// extends the message's visibility at the same tick: the message is seen. A row locked by another
// statement (this node's completion of it, mostly) is skipped rather than waited for: it is
// renewed at the next tick if it is still held then, and it counts as lost only if the row as it
// stood when the statement began no longer carries the claim. Waiting held a renewal of thousands
// of items for as long as every completion before it, and every claim and completion after it
// behind the rows it had locked.
constexpr pg::statement renew_sql{"ingestd_work_renew", R"sql(
WITH r AS (
  SELECT r.id, r.token FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
), lock AS (
  SELECT w.id, w.claim_token FROM work_item AS w JOIN r ON r.id = w.id AND r.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w SKIP LOCKED
), renewed AS (
  UPDATE work_item AS w
     SET lease_expires_at = now() + make_interval(secs => $3::double precision),
         message_seen_at = now()
    FROM lock
   WHERE w.id = lock.id AND w.claim_token = lock.claim_token AND w.status = 'in-progress'
  RETURNING w.id, w.claim_token
)
SELECT r.id, r.token FROM r
 WHERE NOT EXISTS (SELECT 1 FROM renewed AS n WHERE n.id = r.id AND n.claim_token = r.token)
   AND NOT EXISTS (SELECT 1 FROM work_item AS w
                    WHERE w.id = r.id AND w.claim_token = r.token AND w.status = 'in-progress')
)sql"};

constexpr pg::statement cancel_requests_sql{"ingestd_work_cancel_requests", R"sql(
SELECT w.id FROM work_item AS w
 WHERE w.id = ANY($1::uuid[]) AND w.cancel_requested_at IS NOT NULL AND w.status = 'in-progress'
)sql"};

// A failed attempt, fenced: a permanent error ($3) fails at once, otherwise the attempt that
// reaches max_attempts ($4) does; a move ($8, its class; $9 its queue) keeps it in progress in
// that class and sends its message there. The claim is cleared so that the next delivery claims
// at once, and due_at says when that delivery is expected. The audit rows are written whatever
// the fence says; the last SELECT answers one row at least so that they are.
constexpr pg::statement failure_sql{"ingestd_work_failure", R"sql(
WITH f AS (
  UPDATE work_item
     SET attempt_count = attempt_count + 1,
         crash_count = crash_count + CASE WHEN $18::boolean THEN 1 ELSE 0 END,
         status = CASE WHEN $8 = '' AND ($3::boolean OR attempt_count + 1 >= $4::integer)
                       THEN 'failed' ELSE status END,
         completed_at = CASE WHEN $8 = '' AND ($3::boolean OR attempt_count + 1 >= $4::integer)
                             THEN now() ELSE completed_at END,
         last_error = CASE WHEN $18::boolean AND $8 = '' AND attempt_count + 1 >= $4::integer
                           THEN 'poison: ' || $5 || ' (attempt ' || (attempt_count + 1) || ' of '
                                || $4::integer || ')'
                           ELSE $5 END,
         error_class = CASE WHEN $18::boolean AND $8 = '' AND attempt_count + 1 >= $4::integer
                            THEN 'poison' ELSE $6 END,
         claim_token = NULL,
         lease_expires_at = NULL,
         due_at = CASE WHEN $8 = '' AND ($3::boolean OR attempt_count + 1 >= $4::integer) THEN due_at
                       WHEN $8 <> '' THEN now()
                       ELSE now() + make_interval(secs => $7::double precision) END,
         size_class = CASE WHEN $8 <> '' THEN $8 ELSE size_class END,
         class_attempts_base = CASE WHEN $8 <> '' THEN attempt_count + 1 ELSE class_attempts_base END,
         message_seen_at = now()
   WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
  RETURNING id, attempt_count, status, priority, tenant_id
), sent AS (
  SELECT count(ingestd_send($9, f.id::text, f.priority, $10::boolean, f.tenant_id)) AS n FROM f WHERE $8 <> ''
), audit AS (
  SELECT ingestd_append_audit($11::uuid[], $12::text[], $13::text[], $14::text[], $15::text[],
                              $16::text[], $17::text[]) AS appended
)
SELECT f.attempt_count, f.status, (SELECT n FROM sent), (SELECT appended FROM audit)
  FROM (SELECT 1) AS one LEFT JOIN f ON true
)sql"};

// A give-back: the cleared token records it (the next claim counts no crash), and the message,
// made visible again by the caller after $10 seconds, is seen; the item is due then.
constexpr pg::statement release_sql{"ingestd_work_release", R"sql(
WITH r AS (
  UPDATE work_item
     SET claim_token = NULL, lease_expires_at = NULL,
         due_at = now() + make_interval(secs => $10::double precision), message_seen_at = now()
   WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
  RETURNING id
), audit AS (
  SELECT ingestd_append_audit($3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[],
                              $8::text[], $9::text[]) AS appended
)
SELECT (SELECT count(*) FROM r), (SELECT appended FROM audit)
)sql"};

constexpr pg::statement cancelled_sql{"ingestd_work_cancelled", R"sql(
WITH c AS (
  UPDATE work_item
     SET status = 'cancelled', completed_at = now(), claim_token = NULL, lease_expires_at = NULL,
         last_error = 'cancelled', message_seen_at = now()
   WHERE id = $1 AND claim_token = $2 AND status = 'in-progress'
  RETURNING id
), audit AS (
  SELECT ingestd_append_audit($3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[],
                              $8::text[], $9::text[]) AS appended
)
SELECT (SELECT count(*) FROM c), (SELECT appended FROM audit)
)sql"};

constexpr pg::statement audit_sql{"ingestd_work_audit", R"sql(
SELECT ingestd_append_audit($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[],
                            $6::text[], $7::text[])
)sql"};

// The sweeper's net, one node at a time per stage and class (a transaction-scoped advisory lock
// keyed by the schema, the cluster's namespace). It sends a message only for items that truly
// have none; one more for an item that merely waits in a backlog would duplicate it at every
// sweep. Nobody holds the item (no live lease), it is past due (a back-off has run out) and no
// message exists on the stage's queue:
// - Postgres queue: every message is a row of queue_message until it is deleted, visible or
//   not: the anti-join over the stage's queue ($3) is exact. A body names the item as the job
//   reads it: the id in either case, surrounded by any white space. A message the redrive moved
//   to a dead-letter queue while its item was still in progress (give-backs and held claims count
//   receives too) no longer reaches a worker: the item is stranded and gets a new one, as on
//   SQS; the dead letter stays for an operator. (With SQS the table is empty and the condition
//   holds.)
// - SQS: the database cannot look into the queue, so message_seen_at stands in. Each receive
//   refreshes it (the claim, granted or not), so does each visibility extension (the lease
//   renewal), each give-back, each hand-off and each revival. The caller passes a threshold
//   longer than any invisibility the queue gives a message (receive visibility, heartbeat
//   extension; a back-off is covered by due_at), so a message that was received and still
//   exists has been seen within it. A message that waits unreceived in a backlog is never seen:
//   the sweeper does not sweep a stage while its queue reports visible or delayed messages.
// A finished item (failed, poison included) is never in progress again: nothing revives it.
constexpr pg::statement revive_sql{"ingestd_work_revive", R"sql(
WITH lock AS (
  SELECT pg_try_advisory_xact_lock(1769104, hashtext(current_schema() || ':' || $1 || ':' || $2))
           AS held
), stranded AS (
  SELECT w.id FROM work_item AS w
   WHERE (SELECT held FROM lock)
     AND w.status = 'in-progress'
     AND w.stage = $1
     AND ($2 = '' OR w.size_class = $2)
     AND (w.claim_token IS NULL OR w.lease_expires_at < now())
     AND w.due_at < now() - make_interval(secs => $4::double precision)
     AND w.message_seen_at < now() - make_interval(secs => $4::double precision)
     AND NOT EXISTS (SELECT 1 FROM queue_message AS q
                      WHERE q.queue_name = $3
                        AND lower(btrim(q.body, E' \t\n\r\f\x0B')) = w.id::text)
   ORDER BY w.due_at
   LIMIT $5
   FOR UPDATE SKIP LOCKED
), revived AS (
  UPDATE work_item AS w SET due_at = now(), message_seen_at = now()
    FROM stranded WHERE w.id = stranded.id
  RETURNING w.id, w.priority, w.tenant_id
)
SELECT count(ingestd_send($3, r.id::text, r.priority, $6::boolean, r.tenant_id)) FROM revived AS r
)sql"};

std::string bool_text(bool b) {
  return b ? "t" : "f";
}

claim_outcome outcome_of(std::string_view verdict) {
  if (verdict == "granted")
    return claim_outcome::granted;
  if (verdict == "held")
    return claim_outcome::held;
  if (verdict == "moved" || verdict == "move")
    return claim_outcome::moved;
  if (verdict == "unknown")
    return claim_outcome::unknown;
  return claim_outcome::finished; // skipped, poison, or a final status
}

/// Audit parameters for one call.
std::vector<param> with_audit(std::vector<param> params, const std::vector<audit_event>& audit) {
  pg::add_audit_params(params, audit);
  return params;
}

} // namespace

pg_work_repository::pg_work_repository(std::string database_url, const pg_work_options& opts)
    : via_outbox_(opts.via_outbox), max_batch_(std::max<size_t>(opts.max_batch, 1)),
      pool_(std::make_unique<pg::pool>(
          std::move(database_url),
          pg::pool_options{opts.pool_size, "ingestd-work", opts.session})) {}

// The pool goes first: it runs what was submitted (which uses the claim queue) before it goes.
pg_work_repository::~pg_work_repository() {
  pool_.reset();
}

namespace {

/// One claim statement over `requests`: an answer per request in its order, or the statement's
/// error.
result<std::vector<claim_answer>> claim_batch(pg::connection& conn,
                                              const std::vector<const claim_request*>& requests,
                                              const std::string& worker_id,
                                              std::chrono::seconds lease, bool via_outbox) {
  std::vector<claim_answer> out(requests.size());
  if (requests.empty())
    return out;
  // An item asked for twice in one batch is claimed once, for its first request: the statement
  // gets each item once, and every request for it the first one's answer (below).
  std::vector<size_t> sent_as(requests.size());
  std::map<uuid, size_t> first;
  std::vector<uuid> ids, tokens;
  std::vector<param> stages, classes, max_attempts, skip_known, move_classes, move_queues, audit;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto* r = requests[i];
    auto [at, added] = first.emplace(r->item, ids.size());
    sent_as[i] = at->second;
    if (!added)
      continue;
    ids.push_back(r->item);
    tokens.push_back(r->token);
    stages.emplace_back(r->stage);
    classes.emplace_back(r->size_class);
    max_attempts.emplace_back(std::to_string(r->max_attempts));
    skip_known.emplace_back(bool_text(r->skip_known_files));
    move_classes.emplace_back(r->crash_move ? r->crash_move->size_class : std::string{});
    move_queues.emplace_back(r->crash_move ? r->crash_move->queue : std::string{});
    audit.emplace_back(bool_text(r->audit));
  }
  auto res
      = conn.exec(claim_sql, {uuid_array(ids), uuid_array(tokens), pg::array_literal(stages),
                              pg::array_literal(classes), pg::array_literal(max_attempts),
                              pg::array_literal(skip_known), pg::array_literal(move_classes),
                              pg::array_literal(move_queues), pg::array_literal(audit), worker_id,
                              std::to_string(lease.count()), bool_text(via_outbox)});
  if (!res)
    return res.error();
  auto& rows = *res;
  std::vector<claim_answer> answers(
      ids.size(), claim_answer{claim_outcome::finished, {}, "ended while the claim waited for it"});
  for (int r = 0; r < rows.size(); ++r) {
    auto index = rows.i64(r, 0) - 1;
    if (index < 0 || index >= static_cast<int64_t>(answers.size()))
      continue;
    auto& a = answers[static_cast<size_t>(index)];
    a = claim_answer{};
    a.outcome = outcome_of(rows.text(r, 1));
    a.detail = rows.str(r, 9);
    if (a.outcome != claim_outcome::granted)
      continue;
    auto& w = a.work;
    w.item = ids[static_cast<size_t>(index)];
    w.token = parse_uuid(rows.text(r, 4));
    w.document_id = parse_uuid(rows.text(r, 2));
    w.tenant_id = parse_uuid(rows.text(r, 3));
    w.attempt_count = static_cast<int32_t>(rows.i64(r, 5));
    w.priority = static_cast<int32_t>(rows.i64(r, 6));
    w.size_class = rows.str(r, 7);
    w.class_attempts_base = static_cast<int32_t>(rows.i64(r, 8));
    w.first_claim = rows.boolean(r, 11);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    out[i] = answers[sent_as[i]];
    // The request whose token was stored holds the claim; another request for the same item
    // does not.
    if (out[i].outcome == claim_outcome::granted && out[i].work.token != requests[i]->token) {
      out[i]
          = claim_answer{claim_outcome::held, {}, "claimed by another request of the same batch"};
    }
  }
  return out;
}

} // namespace

void pg_work_repository::claim(std::vector<claim_request> requests, std::string worker_id,
                               std::chrono::seconds lease,
                               callback<std::vector<claim_answer>> done) {
  if (requests.empty())
    return done(std::vector<claim_answer>{});
  if (claims_->waiting.push({std::move(requests), std::move(worker_id), lease, std::move(done)}))
    pg::submit_coalesced(*pool_, claims_->waiting,
                         [this](pg::connection& conn, std::vector<pending_claim>& batch) {
                           claim_batches(conn, batch);
                         });
}

void pg_work_repository::claim_batches(pg::connection& conn, std::vector<pending_claim>& batch) {
  // Calls that arrived together go in one statement per worker and lease (a node's calls share
  // both), at most max_batch requests each; every caller gets its own answers back.
  size_t from = 0;
  while (from < batch.size()) {
    std::vector<const claim_request*> requests;
    size_t to = from;
    while (to < batch.size() && batch[to].worker_id == batch[from].worker_id
           && batch[to].lease == batch[from].lease
           && (to == from || requests.size() + batch[to].requests.size() <= max_batch_)) {
      for (auto& r : batch[to].requests)
        requests.push_back(&r);
      ++to;
    }
    auto answers
        = claim_batch(conn, requests, batch[from].worker_id, batch[from].lease, via_outbox_);
    ++claims_->statements;
    size_t next = 0;
    for (size_t k = from; k < to; ++k) {
      auto n = batch[k].requests.size();
      if (!answers) {
        batch[k].done(answers.error());
      } else {
        std::vector<claim_answer> mine(
            std::make_move_iterator(answers->begin() + static_cast<std::ptrdiff_t>(next)),
            std::make_move_iterator(answers->begin() + static_cast<std::ptrdiff_t>(next + n)));
        batch[k].done(std::move(mine));
      }
      next += n;
    }
    from = to;
  }
}

uint64_t pg_work_repository::claim_statements() const {
  return claims_->statements.load();
}

void pg_work_repository::renew_leases(std::vector<claim_ref> refs, std::chrono::seconds lease,
                                      callback<std::vector<claim_ref>> done) {
  pool_->call(
      std::move(done), [refs = std::move(refs), lease](pg::connection& conn, const auto& done) {
        if (refs.empty())
          return done(std::vector<claim_ref>{});
        std::vector<uuid> ids, tokens;
        for (auto& r : refs) {
          ids.push_back(r.item);
          tokens.push_back(r.token);
        }
        auto res = conn.exec(renew_sql,
                             {uuid_array(ids), uuid_array(tokens), std::to_string(lease.count())});
        if (!res)
          return done(res.error());
        std::vector<claim_ref> lost;
        lost.reserve(static_cast<size_t>(res->size()));
        for (int r = 0; r < res->size(); ++r)
          lost.push_back(claim_ref{parse_uuid(res->text(r, 0)), parse_uuid(res->text(r, 1))});
        done(std::move(lost));
      });
}

void pg_work_repository::cancel_requests(std::vector<uuid> items,
                                         callback<std::vector<uuid>> done) {
  pool_->call(std::move(done), [items = std::move(items)](pg::connection& conn, const auto& done) {
    std::vector<uuid> out;
    if (items.empty())
      return done(std::move(out));
    auto res = conn.exec(cancel_requests_sql, {uuid_array(items)});
    if (!res)
      return done(res.error());
    for (int r = 0; r < res->size(); ++r)
      out.push_back(parse_uuid(res->text(r, 0)));
    done(std::move(out));
  });
}

void pg_work_repository::complete(std::vector<work_outcome> outcomes,
                                  callback<std::vector<result<void>>> done) {
  pool_->call(std::move(done), [outcomes = std::move(outcomes),
                                via_outbox = via_outbox_](pg::connection& conn, const auto& done) {
    if (outcomes.empty())
      return done(std::vector<result<void>>{});
    auto answers = pg::run_batch<void>(outcomes.size(), [&](const std::vector<size_t>& items) {
      std::vector<const work_outcome*> batch;
      batch.reserve(items.size());
      for (auto i : items)
        batch.push_back(&outcomes[i]);
      auto res = pg::finish_work(conn, batch, via_outbox);
      if (res
          || !(database_unavailable(res.error()) || res.error().code == errc::pg_commit_unknown))
        return res;
      // The connection broke: whether the statement committed is read again, not redone.
      std::vector<uuid> ids;
      ids.reserve(batch.size());
      for (auto* o : batch)
        ids.push_back(o->ref.item);
      auto states = pg::reread_items(conn, ids);
      std::vector<result<void>> out;
      out.reserve(batch.size());
      for (size_t k = 0; k < batch.size(); ++k)
        out.push_back(states ? pg::settled((*states)[k], batch[k]->ref, res.error())
                             : result<void>{res.error()});
      return result<std::vector<result<void>>>{std::move(out)};
    });
    done(std::move(answers));
  });
}

void pg_work_repository::record_failure(claim_ref ref, failure_record record,
                                        std::chrono::seconds retry_delay,
                                        std::vector<audit_event> audit,
                                        callback<failure_outcome> done) {
  pool_->call(std::move(done), [ref, record = std::move(record), retry_delay,
                                audit = std::move(audit),
                                via_outbox = via_outbox_](pg::connection& conn, const auto& done) {
    auto moving = record.move.has_value();
    auto params = with_audit(
        {ref.item.str(), ref.token.str(), bool_text(record.error.permanent() && !moving),
         std::to_string(std::max<int32_t>(record.max_attempts, 1)),
         pg::clean(record.error.describe()), std::string{to_string(record.error.cls)},
         std::to_string(std::max<int64_t>(retry_delay.count(), 0)),
         moving ? record.move->size_class : std::string{},
         moving ? record.move->queue : std::string{}, bool_text(via_outbox)},
        audit);
    params.push_back(bool_text(record.crash));
    auto res = conn.exec(failure_sql, params);
    if (!res)
      return done(res.error());
    if (res->size() == 0 || res->is_null(0, 0))
      return done(pg::claim_lost(ref, "record_failure"));
    failure_outcome outcome;
    outcome.attempt_count = static_cast<int32_t>(res->i64(0, 0));
    outcome.failed = res->text(0, 1) == "failed";
    done(outcome);
  });
}

void pg_work_repository::release(claim_ref ref, std::chrono::seconds delay,
                                 std::vector<audit_event> audit, callback<void> done) {
  pool_->call(std::move(done),
              [ref, delay, audit = std::move(audit)](pg::connection& conn, const auto& done) {
                auto params = with_audit({ref.item.str(), ref.token.str()}, audit);
                params.emplace_back(std::to_string(delay.count()));
                auto res = conn.exec(release_sql, params);
                if (!res)
                  return done(res.error());
                if (res->i64(0, 0) == 0)
                  return done(pg::claim_lost(ref, "release"));
                done(result<void>{});
              });
}

void pg_work_repository::record_cancelled(claim_ref ref, std::vector<audit_event> audit,
                                          callback<void> done) {
  pool_->call(
      std::move(done), [ref, audit = std::move(audit)](pg::connection& conn, const auto& done) {
        auto res = conn.exec(cancelled_sql, with_audit({ref.item.str(), ref.token.str()}, audit));
        if (!res)
          return done(res.error());
        if (res->i64(0, 0) == 0)
          return done(pg::claim_lost(ref, "record_cancelled"));
        done(result<void>{});
      });
}

void pg_work_repository::append_audit(std::vector<audit_event> events, callback<void> done) {
  pool_->call(std::move(done), [events = std::move(events)](pg::connection& conn,
                                                            const auto& done) {
    if (events.empty())
      return done(result<void>{});
    // A row PostgreSQL refuses for its values fails alone; the others are stored.
    auto answers = pg::run_batch<void>(
        events.size(), [&](const std::vector<size_t>& items) -> result<std::vector<result<void>>> {
          std::vector<audit_event> batch;
          batch.reserve(items.size());
          for (auto i : items)
            batch.push_back(events[i]);
          auto res = conn.exec(audit_sql, with_audit({}, batch));
          if (!res)
            return res.error();
          return std::vector<result<void>>(items.size());
        });
    for (auto& a : answers)
      if (!a)
        return done(a.error());
    done(result<void>{});
  });
}

void pg_work_repository::revive(revive_request request, callback<int64_t> done) {
  pool_->call(std::move(done), [request = std::move(request),
                                via_outbox = via_outbox_](pg::connection& conn, const auto& done) {
    auto res = conn.exec(revive_sql,
                         {request.stage, request.size_class, request.queue,
                          std::to_string(std::max<int64_t>(request.stale_after.count(), 0)),
                          std::to_string(std::max(request.limit, 0)), bool_text(via_outbox)});
    if (!res)
      return done(res.error());
    done(res->size() == 0 ? int64_t{0} : res->i64(0, 0));
  });
}

const pg::statement pg::lifecycle_sql::work_claim = claim_sql;
const pg::statement pg::lifecycle_sql::work_renew = renew_sql;

} // namespace ingestd
