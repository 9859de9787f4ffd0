// Orchestration throughput: a node embedded in this process (actors/node.hpp: start_node with the
// ingest stage of stages/ingest) over the real postgres_queue, pg_work_repository and
// pg_ingest_repository, instant transcription and extraction, on N ingestions; then, as the
// default configuration goes on, the match stage (stages/match, pg_matching_repository, the local
// matcher) on the N documents the ingestions queued for it; then a pgbench replay of the ingest
// stage's per-job SQL at the same database concurrency, and the ratio: the orchestration's
// overhead against the database's own ceiling. For each stage the SQL statements each document
// costs: every statement the process sent, and for the ingest stage the adapters' own counts and
// the replayed script's.
//
//   bench_orchestration [--ingestions 20000] [--in-flight 500] [--db-pool 4] [--queue-pool 2]
//                       [--store memory|fs] [--match on|off] [--replay on|off]
//                       [--pgbench /usr/lib/postgresql/15/bin/pgbench] [--log-level info]
//
// --db-pool is the connections of each repository (the claimed-work one and each stage's).
// --match off: the ingestions queue no matching and the match stage does not run (the ingest
// stage alone, as the figures before the match stage was measured).
// --replay off: no pgbench replay (a quicker run, for comparing two builds).
// --log-level is the node's (info, the default's, writes a line per job; warn writes none).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include <sys/resource.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/node.hpp"
#include "adapters/db/pg_connection.hpp"
#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/matching/local_matcher.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "adapters/support/log.hpp"
#include "bench/support/database_cpu.hpp"
#include "bench/support/memory_store.hpp"
#include "messages/error_codes.hpp"
#include "stages/ingest/ingest_stage.hpp"
#include "stages/match/match_stage.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

constexpr const char* document_text = "INVOICE INV-1\nAcme Inc.\nTotal 119.00 EUR\n";

/// Instant transcription: the file's bytes are its text.
class instant_transcriber : public transcriber {
public:
  void transcribe(transcription_request request, callback<transcription> done) override {
    transcription t;
    t.text = request.bytes;
    t.pages.push_back(transcription_page{1, request.bytes, 1.0, {}});
    t.page_count = 1;
    t.quality_score = 1.0;
    t.native_text = true;
    t.provider = "instant";
    done(std::move(t));
  }
  std::string name() const override { return "instant"; }
};

/// Instant extraction: a fixed valid invoice that passes the quality gate.
class instant_extractor : public extractor {
public:
  void extract(std::string, callback<extraction> done) override {
    extraction x;
    x.structured_data
        = R"({"invoice_number":"INV-1","invoice_date":"2026-01-15","due_date":null,)"
          R"("supplier_name":"ACME GmbH","supplier_address":null,"supplier_vat_id":null,)"
          R"("customer_name":null,"currency":"EUR","line_items":[],"subtotal":100.0,)"
          R"("vat_amount":19.0,"total":119.0,"extraction_successful":true,)"
          R"("confidence":"high","missing_fields":[]})";
    x.extraction_successful = true;
    x.confidence = "high";
    x.model = "instant";
    done(std::move(x));
  }
  std::string name() const override { return "instant"; }
};

/// The queue as the node uses it, with its calls counted (each call of the Postgres queue is one
/// statement, a parked long poll's re-checks aside; deletes are coalesced: postgres_queue counts
/// their statements itself).
class counting_queue : public queue {
public:
  explicit counting_queue(std::shared_ptr<queue> inner) : inner_(std::move(inner)) {}
  void receive(int max_messages, std::chrono::seconds wait, std::chrono::seconds visibility,
               callback<std::vector<queue_message>> done) override {
    ++receives;
    inner_->receive(max_messages, wait, visibility, std::move(done));
  }
  void remove(std::vector<std::string> receipts,
              callback<std::vector<batch_entry_result>> done) override {
    ++removes;
    inner_->remove(std::move(receipts), std::move(done));
  }
  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override {
    ++visibility_changes;
    inner_->change_visibility(std::move(changes), std::move(done));
  }
  void send(std::vector<outgoing_message> messages,
            callback<std::vector<batch_entry_result>> done) override {
    ++sends;
    inner_->send(std::move(messages), std::move(done));
  }
  void stats(callback<queue_stats> done) override {
    ++stats_calls;
    inner_->stats(std::move(done));
  }
  std::string name() const override { return inner_->name(); }

  std::atomic<uint64_t> receives{0}, removes{0}, visibility_changes{0}, sends{0}, stats_calls{0};

private:
  std::shared_ptr<queue> inner_;
};

/// The claimed-work port with its calls counted: every call but claim() is one statement
/// (pg_work_repository coalesces claims and counts their statements itself).
class counting_work : public work_repository {
public:
  explicit counting_work(std::shared_ptr<pg_work_repository> inner) : inner_(std::move(inner)) {}
  void claim(std::vector<claim_request> requests, std::string worker_id, std::chrono::seconds lease,
             callback<std::vector<claim_answer>> done) override {
    ++claims;
    inner_->claim(std::move(requests), std::move(worker_id), lease, std::move(done));
  }
  void renew_leases(std::vector<claim_ref> refs, std::chrono::seconds lease,
                    callback<std::vector<claim_ref>> done) override {
    ++renewals;
    inner_->renew_leases(std::move(refs), lease, std::move(done));
  }
  void cancel_requests(std::vector<uuid> items, callback<std::vector<uuid>> done) override {
    ++other;
    inner_->cancel_requests(std::move(items), std::move(done));
  }
  void complete(std::vector<work_outcome> outcomes,
                callback<std::vector<result<void>>> done) override {
    ++other;
    inner_->complete(std::move(outcomes), std::move(done));
  }
  void record_failure(claim_ref ref, failure_record record, std::chrono::seconds retry_delay,
                      std::vector<audit_event> audit, callback<failure_outcome> done) override {
    ++other;
    inner_->record_failure(ref, std::move(record), retry_delay, std::move(audit), std::move(done));
  }
  void release(claim_ref ref, std::chrono::seconds delay, std::vector<audit_event> audit,
               callback<void> done) override {
    ++other;
    inner_->release(ref, delay, std::move(audit), std::move(done));
  }
  void record_cancelled(claim_ref ref, std::vector<audit_event> audit,
                        callback<void> done) override {
    ++other;
    inner_->record_cancelled(ref, std::move(audit), std::move(done));
  }
  void append_audit(std::vector<audit_event> events, callback<void> done) override {
    ++other;
    inner_->append_audit(std::move(events), std::move(done));
  }
  void revive(revive_request request, callback<int64_t> done) override {
    ++other;
    inner_->revive(std::move(request), std::move(done));
  }

  std::atomic<uint64_t> claims{0}, renewals{0}, other{0};

private:
  std::shared_ptr<pg_work_repository> inner_;
};

std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name)
      return argv[i + 1];
  return fallback;
}

std::string sh(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
      out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

/// Rows for `n` ingestions (documents/{id}.txt), their work items and their queue messages, as
/// intake writes them, in a few statements.
void populate(test::pg_schema& db, const std::string& queue, int n) {
  db.query("INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type) "
           "SELECT d, gen_random_uuid(), d::text, 'documents/' || d || '.txt', 'text/plain' "
           "FROM (SELECT gen_random_uuid() AS d FROM generate_series(1, $1::integer)) x",
           {std::to_string(n)});
  db.query("INSERT INTO ingestion (id, document_id, uploaded_by) "
           "SELECT gen_random_uuid(), id, gen_random_uuid() FROM document");
  db.query("INSERT INTO work_item (id, stage, document_id, tenant_id) "
           "SELECT i.id, 'ingest', d.id, d.tenant_id FROM ingestion AS i JOIN document AS d ON "
           "d.id = i.document_id");
  db.query("INSERT INTO queue_message (id, queue_name, body) "
           "SELECT gen_random_uuid(), $1, id::text FROM ingestion",
           {queue});
  db.query("ANALYZE");
}

// -- the replay ------------------------------------------------------------------------------

// The statements one job of the ingest stage sends, as the adapters send them (their text in
// adapters/queue/postgres_queue.cpp, adapters/db/pg_work_repository.cpp, pg_ingest_repository.cpp
// and pg_work.cpp), with $n for their parameters; replay_sql() puts pgbench variables in.

// postgres_queue: receive (the node asks for up to 10 per round trip; the replay takes 1, which
// costs the replay more than the node).
constexpr const char* receive_sql = R"sql(
WITH picked AS (
  SELECT id, receive_count FROM queue_message
   WHERE queue_name = $1 AND visible_at <= now()
   ORDER BY rank, id
   LIMIT $2
   FOR UPDATE SKIP LOCKED
), dead AS (
  UPDATE queue_message AS m
     SET queue_name = $5, receipt = NULL, receive_count = 0, visible_at = now()
    FROM picked AS p
   WHERE m.id = p.id AND $4::integer > 0 AND p.receive_count >= $4::integer
  RETURNING m.id
), got AS (
  UPDATE queue_message AS m
     SET receipt = gen_random_uuid(),
         receive_count = m.receive_count + 1,
         visible_at = now() + make_interval(secs => $3::double precision)
    FROM picked AS p
   WHERE m.id = p.id AND NOT ($4::integer > 0 AND p.receive_count >= $4::integer)
  RETURNING m.id, m.receipt, m.body, m.receive_count, m.sent_at, m.visible_at, m.priority, m.rank
)
SELECT false AS dead, g.id, g.receipt AS receipt, g.body AS body, g.receive_count,
       floor(extract(epoch FROM g.sent_at) * 1000)::bigint, g.priority, g.rank
  FROM got AS g
UNION ALL
SELECT true, d.id, NULL, NULL, 0, 0, 0, 0 FROM dead AS d
ORDER BY 1, 8, 2
)sql";

// pg_work_repository: the claim.
constexpr const char* claim_sql = R"sql(
WITH req AS (
  SELECT DISTINCT ON (r.id) r.id, r.token, r.stage, r.class, greatest(r.max_attempts, 1) AS max_attempts,
         r.skip_known, r.move_class, r.move_queue, r.audit
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::integer[], $6::boolean[],
                $7::text[], $8::text[], $9::boolean[]) WITH ORDINALITY
         AS r(id, token, stage, class, max_attempts, skip_known, move_class, move_queue, audit, ord)
   ORDER BY r.id, r.ord
), lock AS (
  SELECT w.id, w.attempt_count, req.token, req.max_attempts, req.move_class, req.move_queue,
         req.audit,
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
  RETURNING w.id, w.document_id, w.tenant_id, w.claim_token, w.attempt_count, w.priority,
            w.size_class, w.class_attempts_base, w.last_error, d.verdict, d.crash_counted,
            d.move_queue, d.audit
), sent AS (
  SELECT count(ingestd_send(c.move_queue, c.id::text, c.priority, $12::boolean)) AS n
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
SELECT r.ord, COALESCE(c.verdict, CASE WHEN w.id IS NULL THEN 'unknown' ELSE 'finished' END),
       c.document_id, c.tenant_id, c.claim_token AS token, c.attempt_count, c.priority, c.size_class,
       c.class_attempts_base, COALESCE(c.last_error, w.status, ''), (SELECT n FROM sent)
  FROM unnest($1::uuid[], $3::text[]) WITH ORDINALITY AS r(id, stage, ord)
  LEFT JOIN changed AS c ON c.id = r.id
  LEFT JOIN work_item AS w ON w.id = r.id AND w.stage = r.stage
 ORDER BY r.ord
)sql";

// The heartbeat: the message's visibility extended (postgres_queue) and the lease renewed
// (pg_work_repository), each a statement for all of a node's claims at that tick.
constexpr const char* visibility_sql = R"sql(
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
)sql";

constexpr const char* renew_sql = R"sql(
WITH r AS (
  SELECT r.id, r.token FROM unnest($1::uuid[], $2::uuid[]) AS r(id, token)
), lock AS (
  SELECT w.id, w.claim_token FROM work_item AS w JOIN r ON r.id = w.id AND r.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
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
)sql";

// pg_ingest_repository: the load, the transcription, and the completion's transaction (the
// results, then pg_work's finish of the work items with their audit trail and next work).
constexpr const char* load_sql = R"sql(
SELECT r.ord, d.file_path, COALESCE(d.mime_type, ''), COALESCE(i.transcription_file_path, ''),
       COALESCE(i.transcription_provider, ''), COALESCE(i.extraction_provider, '')
  FROM unnest($1::uuid[]) WITH ORDINALITY AS r(id, ord)
  JOIN ingestion AS i ON i.id = r.id
  JOIN document AS d ON d.id = i.document_id
)sql";

constexpr const char* transcription_sql = R"sql(
WITH r AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::numeric[])
           AS r(id, token, path, preprocessed, score)
), held AS (
  SELECT w.id, w.claim_token FROM work_item AS w JOIN r ON r.id = w.id AND r.token = w.claim_token
   WHERE w.status = 'in-progress'
)
UPDATE ingestion AS i
   SET transcription_file_path = r.path,
       preprocessed_file_path = r.preprocessed,
       transcription_quality_score = r.score
  FROM r JOIN held ON held.id = r.id AND held.claim_token = r.token
 WHERE i.id = r.id
RETURNING i.id, r.token
)sql";

constexpr const char* result_sql = R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[], $5::integer[],
                       $6::integer[], $7::text[])
           AS c(id, token, data, valid, input_tokens, output_tokens, model)
), lock AS (
  SELECT w.id, w.claim_token FROM work_item AS w JOIN c ON c.id = w.id AND c.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
)
UPDATE ingestion AS i
   SET structured_data = c.data::jsonb,
       valid_structured_data = c.valid,
       extraction_input_tokens = c.input_tokens,
       extraction_output_tokens = c.output_tokens,
       extraction_model = c.model
  FROM c JOIN lock ON lock.id = c.id AND lock.claim_token = c.token
 WHERE i.id = c.id
RETURNING i.id, c.token
)sql";

constexpr const char* finish_sql = R"sql(
WITH c AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $20::text[]) AS c(id, token, remark)
), lock AS (
  SELECT w.id FROM work_item AS w JOIN c ON c.id = w.id AND c.token = w.claim_token
   WHERE w.status = 'in-progress'
   ORDER BY w.id
   FOR UPDATE OF w
), done AS (
  UPDATE work_item AS w
     SET status = 'completed', completed_at = now(), claim_token = NULL, lease_expires_at = NULL,
         last_error = COALESCE(c.remark, w.last_error)
    FROM c
   WHERE w.id = c.id AND w.claim_token = c.token AND w.status = 'in-progress'
     AND w.id IN (SELECT id FROM lock)
  RETURNING w.id, c.token
), next AS (
  SELECT count(*) FILTER (WHERE ingestd_add_work(n.item, n.stage, n.document, n.tenant, n.priority,
                                                 n.class, n.queue, $19::boolean, n.reopen)) AS sent
    FROM unnest($10::uuid[], $11::uuid[], $12::text[], $13::uuid[], $14::uuid[], $15::integer[],
                $16::text[], $17::text[], $18::boolean[])
         AS n(parent, item, stage, document, tenant, priority, class, queue, reopen)
   WHERE n.parent IN (SELECT id FROM done)
), audit AS (
  SELECT ingestd_append_audit($3::uuid[], $4::text[], $5::text[], $6::text[], $7::bigint[],
                              $8::text[], $9::bigint[]) AS appended
)
SELECT d.id, d.token, (SELECT sent FROM next), (SELECT appended FROM audit)
  FROM (SELECT 1) AS one LEFT JOIN done AS d ON true
)sql";

// postgres_queue: the acknowledgement.
constexpr const char* delete_sql = R"sql(
WITH doomed AS (
  SELECT id FROM queue_message
   WHERE queue_name = $1 AND receipt = ANY($2::uuid[])
   ORDER BY id
   FOR UPDATE
)
DELETE FROM queue_message AS m USING doomed WHERE m.id = doomed.id RETURNING m.receipt
)sql";

/// `sql` on one line with its parameters replaced: `args[k]` for $(k+1).
std::string bind(std::string sql, const std::vector<std::string>& args) {
  for (size_t k = args.size(); k-- > 0;)
    sql = std::regex_replace(sql, std::regex{"\\$" + std::to_string(k + 1) + "(?![0-9])"}, args[k]);
  std::string line;
  bool space = false;
  for (char c : sql) {
    bool ws = c == '\n' || c == ' ' || c == '\t';
    if (ws && !line.empty())
      space = true;
    if (ws)
      continue;
    if (space)
      line += ' ';
    space = false;
    line += c;
  }
  return line;
}

struct replay {
  std::string script;
  int statements = 0;
};

/// One job per pgbench transaction: receive, claim, the heartbeat's visibility extension and
/// lease renewal, load, record_transcription, the completion's transaction (BEGIN, results,
/// finish with the audit trail `audit_steps`, COMMIT) and the delete. Commands end with `;`, or
/// with \gset when their answer feeds the next ones.
replay replay_sql(const std::string& queue, const std::vector<std::string>& audit_steps) {
  std::string q = "'" + queue + "'";
  auto steps = std::string{"ARRAY["};
  for (size_t i = 0; i < audit_steps.size(); ++i)
    steps += (i ? ",'" : "'") + audit_steps[i] + "'";
  steps += "]::text[]";
  auto n = std::to_string(audit_steps.size());
  replay r;
  auto add = [&](const std::string& command, bool gset = false) {
    r.script += command + (gset ? "\n\\gset\n" : ";\n");
    ++r.statements;
  };
  add(bind(receive_sql, {q, "1", "60", "0", "'" + queue + "-dlq'"}), true);
  add(bind(claim_sql, {"ARRAY[:body]::uuid[]", "ARRAY[gen_random_uuid()]", "ARRAY['ingest']",
                       "ARRAY['']", "ARRAY[3]", "ARRAY[true]", "ARRAY['']", "ARRAY['']",
                       "ARRAY[true]", "'pgbench'", "300", "false"}),
      true);
  add(bind(visibility_sql, {q, "ARRAY[:receipt]::uuid[]", "ARRAY[345]"}));
  add(bind(renew_sql, {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]", "300"}));
  add(bind(load_sql, {"ARRAY[:body]::uuid[]"}));
  add(bind(transcription_sql, {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]",
                               "ARRAY['transcriptions/x/transcription-output.json']",
                               "ARRAY[NULL]::text[]", "ARRAY[1.0]"}));
  add("BEGIN");
  add(bind(result_sql, {"ARRAY[:body]::uuid[]", "ARRAY[:token]::uuid[]",
                        "ARRAY['{\"invoice_number\":\"INV-1\",\"total\":119.0}']", "ARRAY[true]",
                        "ARRAY[0]", "ARRAY[0]", "ARRAY['instant']"}));
  add(bind(finish_sql, {"ARRAY[:body]::uuid[]",
                        "ARRAY[:token]::uuid[]",
                        "array_fill(:body::uuid, ARRAY[" + n + "])",
                        steps,
                        "array_fill('ok'::text, ARRAY[" + n + "])",
                        "array_fill(NULL::text, ARRAY[" + n + "])",
                        "array_fill(1::bigint, ARRAY[" + n + "])",
                        "array_fill('pgbench'::text, ARRAY[" + n + "])",
                        "array_fill(0::bigint, ARRAY[" + n + "])",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "'{}'",
                        "false",
                        "ARRAY[NULL]::text[]"}));
  add("COMMIT");
  add(bind(delete_sql, {q, "ARRAY[:receipt]::uuid[]"}));
  return r;
}

/// A node of `stages` started on `sys` and run until `n` jobs have an outcome (or 10 minutes):
/// what they came to, and what the run cost.
struct node_run {
  int completed = 0;
  int other = 0;
  std::string first_other;
  double seconds = 0;
  double node_cpu = 0;
  double db_cpu = 0;
  uint64_t statements = 0;
};

node_run run_node(caf::actor_system& sys, std::shared_ptr<work_repository> work,
                  std::vector<std::shared_ptr<const stage>> stages, int n, int in_flight) {
  auto ctx = std::make_shared<node_context>();
  ctx->settings.worker_id = "bench";
  ctx->settings.max_in_flight = in_flight;
  ctx->settings.wait_time = std::chrono::seconds{1};
  ctx->settings.step_timeout = std::chrono::seconds{120};
  ctx->work = std::move(work);
  ctx->stages = std::move(stages);
  std::atomic<int> completed{0}, other{0}, finished{0};
  std::promise<void> all_done;
  std::mutex detail_mtx;
  std::string first_other;
  ctx->observer = [&](const job_outcome& o) {
    if (o.result == job_result::completed) {
      ++completed;
    } else {
      std::lock_guard g{detail_mtx};
      if (first_other.empty())
        first_other = o.detail;
      ++other;
    }
    // One counter, so that exactly one outcome is the n-th (two outcomes at once could both
    // see the sum of two counters at n, and set the promise twice).
    if (++finished == n)
      all_done.set_value();
  };
  std::promise<void> stopped;
  node_options opts;
  opts.sweeper = false;
  opts.on_stopped = [&] { stopped.set_value(); };
  auto sent0 = pg::statements_sent();
  auto cpu0 = process_cpu_seconds();
  auto db_cpu0 = bench::database_cpu_seconds();
  auto t0 = clock_type::now();
  auto node = start_node(sys, ctx, opts);
  if (all_done.get_future().wait_for(std::chrono::minutes{10}) != std::future_status::ready)
    std::printf("  TIMEOUT after 10 min: %d completed, %d other\n", completed.load(), other.load());
  node_run r;
  r.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  r.node_cpu = process_cpu_seconds() - cpu0;
  r.db_cpu = bench::database_cpu_seconds() - db_cpu0;
  r.statements = pg::statements_sent() - sent0;
  caf::anon_send(node.coordinator, shutdown_atom_v);
  stopped.get_future().wait_for(std::chrono::seconds{60});
  r.completed = completed.load();
  r.other = other.load();
  std::lock_guard g{detail_mtx};
  r.first_other = first_other;
  return r;
}

/// "" or " (first: why)": the first outcome that was not a completion.
std::string first_other_note(const node_run& r) {
  return r.first_other.empty() ? "" : " (first: " + r.first_other + ")";
}

/// The match stage alone on a node of its own, until `n` documents are matched; prints its
/// figures.
void run_match_stage(test::pg_schema& db, const std::shared_ptr<object_store>& store,
                     const std::string& queue_name, int n, int in_flight, int db_pool,
                     int queue_pool) {
  caf::actor_system_config cfg;
  configure_scheduler(cfg);
  caf::actor_system sys{cfg};
  auto ports = std::make_shared<match_ports>();
  ports->db = std::make_shared<pg_matching_repository>(db.url(), pg_matching_options{db_pool});
  ports->storage = store;
  ports->match = std::make_shared<local_matcher>();
  match_settings settings;
  settings.queue_name = queue_name;
  settings.queue
      = std::make_shared<postgres_queue>(db.url(), queue_name, postgres_queue_options{queue_pool});
  auto r = run_node(sys, std::make_shared<pg_work_repository>(db.url(), pg_work_options{db_pool}),
                    {make_match_stage(ports, settings)}, n, in_flight);
  auto done = r.completed;
  auto per_doc = [done](double x) { return done > 0 ? x / done : 0.0; };
  std::printf("match stage: %d matched, %d other%s in %.2f s = %.0f documents/s\n", done, r.other,
              first_other_note(r).c_str(), r.seconds, done / r.seconds);
  std::printf("  node process CPU (user + system, all threads): %.2f s = %.0f us per document\n",
              r.node_cpu, per_doc(r.node_cpu * 1e6));
  std::printf("  database CPU (every PostgreSQL process of this machine): %.2f s = %.0f us per "
              "document\n",
              r.db_cpu, per_doc(r.db_cpu * 1e6));
  std::printf("  SQL statements the process sent: %llu; per document %.2f (each matching's write "
              "phase is one transaction of its own: not coalesced)\n",
              static_cast<unsigned long long>(r.statements),
              per_doc(static_cast<double>(r.statements)));
  std::printf("match check: %s completed match work items, %s documents in a cluster\n",
              db.scalar("SELECT count(*) FROM work_item WHERE stage = 'match' AND status = "
                        "'completed'")
                  .c_str(),
              db.scalar("SELECT count(*) FROM document WHERE cluster_id IS NOT NULL").c_str());
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  int n = std::stoi(arg(argc, argv, "ingestions", "20000"));
  int in_flight = std::stoi(arg(argc, argv, "in-flight", "500"));
  int db_pool = std::stoi(arg(argc, argv, "db-pool", "4"));
  int queue_pool = std::stoi(arg(argc, argv, "queue-pool", "2"));
  std::string store_kind = arg(argc, argv, "store", "memory");
  std::string pgbench = arg(argc, argv, "pgbench", "/usr/lib/postgresql/15/bin/pgbench");
  auto log_level = arg(argc, argv, "log-level", "info");
  auto match = arg(argc, argv, "match", "on");
  if (match != "on" && match != "off") {
    std::fprintf(stderr, "--match must be on or off, not %s\n", match.c_str());
    return 2;
  }
  std::string match_queue = match == "on" ? "bench-orchestration-match" : "";
  auto replay = arg(argc, argv, "replay", "on");
  log::setup("text", log_level);

  std::unique_ptr<test::pg_schema> db;
  try {
    db = std::make_unique<test::pg_schema>(true);
  } catch (const std::exception& e) {
    std::fprintf(
        stderr,
        "bench_orchestration: %s\n(set INGESTD_TEST_DATABASE_URL, see deploy/local-stack.sh env)\n",
        e.what());
    return 1;
  }
  std::string queue_name = "bench-orchestration";
  std::printf(
      "orchestration throughput: EMBEDDED node (start_node in this process, the ingest stage of "
      "stages/ingest), real postgres_queue + pg_work_repository + pg_ingest_repository, %s object "
      "store, "
      "instant transcription and extraction\n",
      store_kind.c_str());
  std::printf("  repositories: claims, completions, loads and transcriptions that arrive while one "
              "statement of "
              "their kind runs go in the next\n");
  std::printf("  ingestions %d, max_in_flight %d, connections: claimed work %d + ingest stage %d + "
              "queue %d, log level %s, matching %s, load before: %s",
              n, in_flight, db_pool, db_pool, queue_pool, log_level.c_str(),
              match == "on" ? "on (the default configuration's)" : "off", sh("uptime").c_str());
  std::fflush(stdout);

  auto t_fill = clock_type::now();
  populate(*db, queue_name, n);
  std::string root;
  if (store_kind == "fs") {
    root = test::make_temp_dir("bench-orch");
    fs::create_directories(fs::path{root} / "documents");
    for (auto& row : db->query("SELECT file_path FROM document")) {
      std::ofstream out{fs::path{root} / *row[0]};
      out << document_text;
    }
  }
  std::printf("  setup (rows + work items + messages%s): %.1f s\n",
              store_kind == "fs" ? " + files" : "",
              std::chrono::duration<double>(clock_type::now() - t_fill).count());

  // Every document (documents/...) reads as the same short text; what the stages write is kept
  // (the match stage reads the transcriptions the ingest stage stored).
  std::shared_ptr<object_store> store;
  if (store_kind == "fs")
    store = std::make_shared<filesystem_store>(root);
  else
    store = std::make_shared<bench::memory_store>(
        [](const std::string& key) -> std::optional<std::string> {
          if (key.rfind("documents/", 0) == 0)
            return std::string{document_text};
          return std::nullopt;
        });
  double worker_rate = 0;
  int completed_jobs = 0;
  std::printf("ingest stage:\n");
  {
    caf::actor_system_config cfg;
    configure_scheduler(cfg); // as `ingestd run`
    caf::actor_system sys{cfg};
    auto pq = std::make_shared<postgres_queue>(db->url(), queue_name,
                                               postgres_queue_options{queue_pool});
    auto counted_queue = std::make_shared<counting_queue>(pq);
    auto pg_work = std::make_shared<pg_work_repository>(db->url(), pg_work_options{db_pool});
    auto work = std::make_shared<counting_work>(pg_work);
    auto ingest_db = std::make_shared<pg_ingest_repository>(db->url(), pg_ingest_options{db_pool});
    auto ports = std::make_shared<ingest_ports>();
    ports->db = ingest_db;
    ports->storage = store;
    ports->ocr = std::make_shared<instant_transcriber>();
    ports->extract = std::make_shared<instant_extractor>();
    ingest_class cls;
    cls.queue = counted_queue;
    cls.queue_name = queue_name;

    ingest_settings settings;
    settings.match_queue = match_queue;
    auto r = run_node(sys, work, {make_ingest_stage(ports, settings, cls)}, n, in_flight);
    completed_jobs = r.completed;
    worker_rate = completed_jobs / r.seconds;
    auto per_doc = [&](double x) { return completed_jobs > 0 ? x / completed_jobs : 0.0; };
    std::printf("  node: %d completed, %d other%s in %.2f s = %.0f ingestions/s\n", completed_jobs,
                r.other, first_other_note(r).c_str(), r.seconds, worker_rate);
    std::printf("  node process CPU (user + system, all threads): %.2f s = %.0f us per ingestion\n",
                r.node_cpu, per_doc(r.node_cpu * 1e6));
    std::printf("  database CPU (every PostgreSQL process of this machine, autovacuum included): "
                "%.2f s = %.0f us per ingestion\n",
                r.db_cpu, per_doc(r.db_cpu * 1e6));
    std::printf("  load after the node's run: %s", sh("uptime").c_str());
    auto jobs = r.completed + r.other;
    auto st = ingest_db->statements();
    std::printf("  coalescing: claim %llu calls -> %llu statements, load %d -> %llu, "
                "record_transcription %d -> %llu, "
                "complete %d -> %llu transactions, queue delete %llu -> %llu\n",
                (unsigned long long)work->claims.load(),
                (unsigned long long)pg_work->claim_statements(), jobs, (unsigned long long)st.loads,
                completed_jobs, (unsigned long long)st.transcriptions, completed_jobs,
                (unsigned long long)st.completions,
                (unsigned long long)counted_queue->removes.load(),
                (unsigned long long)pq->delete_statements());
    // Round trips to the database, from the adapters' own counts: a completion transaction is four
    // (BEGIN, the results, the work items' finish, COMMIT).
    auto claim_st = pg_work->claim_statements();
    auto renew_st = work->renewals.load();
    auto other_work = work->other.load();
    auto ingest_st = st.loads + st.transcriptions + 4 * st.completions;
    auto queue_st = counted_queue->receives.load() + pq->delete_statements()
                    + counted_queue->visibility_changes.load() + counted_queue->sends.load()
                    + counted_queue->stats_calls.load();
    auto total = claim_st + renew_st + other_work + ingest_st + queue_st;
    std::printf("  SQL statements (from the adapters' counts): %llu = claims %llu + lease renewals "
                "%llu + other "
                "claimed-work %llu + ingest stage %llu + queue %llu (receives %llu, deletes %llu, "
                "visibility "
                "%llu); per document %.2f\n",
                (unsigned long long)total, (unsigned long long)claim_st,
                (unsigned long long)renew_st, (unsigned long long)other_work,
                (unsigned long long)ingest_st, (unsigned long long)queue_st,
                (unsigned long long)counted_queue->receives.load(),
                (unsigned long long)pq->delete_statements(),
                (unsigned long long)counted_queue->visibility_changes.load(),
                completed_jobs > 0 ? static_cast<double>(total) / completed_jobs : 0.0);
    // The same without coalescing: each job's own calls (a completion is still four round trips).
    auto calls = work->claims.load() + renew_st + other_work + jobs + completed_jobs
                 + 4 * static_cast<uint64_t>(completed_jobs) + counted_queue->receives.load()
                 + counted_queue->removes.load() + counted_queue->visibility_changes.load()
                 + counted_queue->sends.load() + counted_queue->stats_calls.load();
    std::printf("  SQL statements if nothing were coalesced (the calls the jobs made): %llu; per "
                "document %.2f\n",
                (unsigned long long)calls,
                completed_jobs > 0 ? static_cast<double>(calls) / completed_jobs : 0.0);
    std::printf("  SQL statements the process sent (every connection, long polls' re-checks "
                "included): %llu; per document %.2f\n",
                static_cast<unsigned long long>(r.statements),
                per_doc(static_cast<double>(r.statements)));
  }
  if (!match_queue.empty())
    run_match_stage(*db, store, match_queue, completed_jobs, in_flight, db_pool, queue_pool);
  auto db_check = db->scalar(
      "SELECT count(*) FROM ingestion_event WHERE step = 'complete' AND outcome = 'ok'");
  std::printf(
      "ingest check: %s complete events, %s completed work items, %s completed ingestions\n",
      db_check.c_str(),
      db->scalar("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND status = "
                 "'completed'")
          .c_str(),
      db->scalar("SELECT count(*) FROM ingestion WHERE status = 'completed'").c_str());
  // The audit trail one job wrote with its completion: the replay writes as many rows.
  std::vector<std::string> audit_steps;
  for (auto& row : db->query("SELECT step FROM ingestion_event WHERE ingestion_id = "
                             "(SELECT ingestion_id FROM ingestion_event WHERE step = 'complete' "
                             "LIMIT 1) ORDER BY id"))
    audit_steps.push_back(row[0].value_or(""));
  if (audit_steps.empty())
    audit_steps = {"claim",
                   "load",
                   "resume",
                   "fetch",
                   "transcribe",
                   "store_transcription",
                   "record_transcription",
                   "extract",
                   "gate",
                   "complete"};

  if (replay == "off")
    return 0;
  // The replay: the same ingestions made claimable again, a message each, and the per-job SQL.
  db->query("DELETE FROM queue_message");
  db->query("DELETE FROM ingestion_event");
  db->query("DELETE FROM work_item WHERE stage <> 'ingest'");
  db->query(
      "UPDATE work_item SET status = 'in-progress', claim_token = NULL, lease_expires_at = NULL, "
      "completed_at = NULL");
  db->query("UPDATE ingestion SET status = 'in-progress', structured_data = NULL, "
            "valid_structured_data = NULL, "
            "completed_at = NULL");
  db->query("INSERT INTO queue_message (id, queue_name, body) SELECT gen_random_uuid(), $1, "
            "id::text FROM ingestion",
            {queue_name});
  db->query("VACUUM ANALYZE queue_message");
  db->query("VACUUM ANALYZE work_item");
  db->query("VACUUM ANALYZE ingestion");
  auto dir = test::make_temp_dir("bench-orch-sql");
  auto sql_path = dir + "/per_job.sql";
  auto r = replay_sql(queue_name, audit_steps);
  {
    std::ofstream out{sql_path};
    out << r.script;
  }
  std::string steps;
  for (auto& step : audit_steps)
    steps += (steps.empty() ? "" : " ") + step;
  std::printf("  replayed script: %d SQL statements per document (receive, claim, visibility "
              "extension, lease "
              "renewal, load, record_transcription, BEGIN, results, finish with %zu audit rows, "
              "COMMIT, delete); "
              "audit rows of a job: %s\n",
              r.statements, audit_steps.size(), steps.c_str());
  int clients = 2 * db_pool + queue_pool;
  int per_client = n / clients;
  std::string cmd = "PGOPTIONS='-csearch_path=" + db->name() + "' " + pgbench
                    + " -n -M prepared -f " + sql_path + " -c " + std::to_string(clients)
                    + " -j 2 -t " + std::to_string(per_client) + " '" + db->base_url() + "' 2>&1";
  std::printf("  replay: %s\n", cmd.c_str());
  std::fflush(stdout);
  auto out = sh(cmd);
  double replay_tps = 0;
  auto pos = out.find("tps = ");
  if (pos != std::string::npos)
    replay_tps = std::atof(out.c_str() + pos + 6);
  else
    std::printf("%s\n", out.c_str());
  auto failed = out.find("number of failed transactions");
  std::printf(
      "  pgbench replay (same per-job SQL, %d connections = the node's database connections): "
      "%.0f jobs/s%s\n",
      clients, replay_tps,
      failed != std::string::npos
          ? (" [" + out.substr(failed, out.find('\n', failed) - failed) + "]").c_str()
          : "");
  auto replayed = db->scalar("SELECT count(*) FROM work_item WHERE status = 'completed'");
  std::printf("  replay check: %s of %d work items completed by the replay\n", replayed.c_str(),
              per_client * clients);
  std::printf(
      "  ratio node / replay: %.2f (target >= 0.8); node vs 3,000/s first-stage target: %s\n",
      replay_tps > 0 ? worker_rate / replay_tps : 0.0, worker_rate >= 3000 ? "met" : "NOT met");
  std::printf("  load at end: %s", sh("uptime").c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!root.empty())
    fs::remove_all(root, ec);
  return 0;
}
