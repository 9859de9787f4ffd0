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
//   bench_orchestration [--ingestions 20000] [--in-flight 500] [--max-messages 100]
//                       [--db-pool 4] [--queue-pool 2]
//                       [--store memory|fs] [--match on|off] [--replay on|off]
//                       [--pgbench /usr/lib/postgresql/15/bin/pgbench] [--log-level info]
//
// --max-messages is queue.max_messages (100, the default configuration's for the Postgres queue;
// SQS takes at most 10 a receive).
// --db-pool is the connections of each repository (the claimed-work one and each stage's).
// --match off: the ingestions queue no matching and the match stage does not run (the ingest
// stage alone, as the figures before the match stage was measured).
// --replay off: no pgbench replay (a quicker run, for comparing two builds).
// --log-level is the node's (info, the default's, writes a line per job; warn writes none).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

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
#include "bench/orchestration/replay_sql.hpp"
#include "bench/support/cpu_time.hpp"
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
  /// The longest wait between two outcomes: a node whose jobs all wait on something (a timer, a
  /// lock) shows here, where its throughput alone only looks low.
  double longest_pause = 0;
};

node_run run_node(caf::actor_system& sys, std::shared_ptr<work_repository> work,
                  std::vector<std::shared_ptr<const stage>> stages, int n, int in_flight,
                  int max_messages) {
  auto ctx = std::make_shared<node_context>();
  ctx->settings.worker_id = "bench";
  ctx->settings.max_in_flight = in_flight;
  ctx->settings.max_messages = max_messages;
  ctx->settings.wait_time = std::chrono::seconds{1};
  ctx->settings.step_timeout = std::chrono::seconds{120};
  ctx->work = std::move(work);
  ctx->stages = std::move(stages);
  std::atomic<int> completed{0}, other{0}, finished{0};
  std::promise<void> all_done;
  std::mutex detail_mtx;
  std::string first_other;
  std::optional<clock_type::time_point> last_outcome;
  clock_type::duration longest_pause{};
  ctx->observer = [&](const job_outcome& o) {
    {
      std::lock_guard g{detail_mtx};
      auto now = clock_type::now();
      if (last_outcome)
        longest_pause = std::max(longest_pause, now - *last_outcome);
      last_outcome = now;
      if (o.result != job_result::completed && first_other.empty())
        first_other = o.detail;
    }
    if (o.result == job_result::completed)
      ++completed;
    else
      ++other;
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
  auto cpu0 = bench::process_cpu_seconds();
  auto db_cpu0 = bench::database_cpu_seconds();
  auto t0 = clock_type::now();
  auto node = start_node(sys, ctx, opts);
  if (all_done.get_future().wait_for(std::chrono::minutes{10}) != std::future_status::ready)
    std::printf("  TIMEOUT after 10 min: %d completed, %d other\n", completed.load(), other.load());
  node_run r;
  r.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  r.node_cpu = bench::process_cpu_seconds() - cpu0;
  r.db_cpu = bench::database_cpu_seconds() - db_cpu0;
  r.statements = pg::statements_sent() - sent0;
  caf::anon_send(node.coordinator, shutdown_atom_v);
  stopped.get_future().wait_for(std::chrono::seconds{60});
  r.completed = completed.load();
  r.other = other.load();
  std::lock_guard g{detail_mtx};
  r.first_other = first_other;
  r.longest_pause = std::chrono::duration<double>(longest_pause).count();
  return r;
}

/// "" or " (first: why)": the first outcome that was not a completion.
std::string first_other_note(const node_run& r) {
  return r.first_other.empty() ? "" : " (first: " + r.first_other + ")";
}

/// The match stage alone on a node of its own, until `n` documents are matched; prints its
/// figures.
bool run_match_stage(test::pg_schema& db, const std::shared_ptr<object_store>& store,
                     const std::string& queue_name, int n, int in_flight, int max_messages,
                     int db_pool, int queue_pool) {
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
                    {make_match_stage(ports, settings)}, n, in_flight, max_messages);
  auto done = r.completed;
  auto per_doc = [done](double x) { return done > 0 ? x / done : 0.0; };
  std::printf("match stage: %d matched, %d other%s in %.2f s = %.0f documents/s\n", done, r.other,
              first_other_note(r).c_str(), r.seconds, done / r.seconds);
  std::printf("  longest time between two outcomes: %.0f ms\n", r.longest_pause * 1000);
  std::printf("  node process CPU (user + system, all threads): %.2f s = %.0f us per document\n",
              r.node_cpu, per_doc(r.node_cpu * 1e6));
  std::printf("  database CPU (every PostgreSQL process of this machine): %.2f s = %.0f us per "
              "document\n",
              r.db_cpu, per_doc(r.db_cpu * 1e6));
  std::printf("  SQL statements the process sent: %llu; per document %.2f (each matching's write "
              "phase is one transaction of its own: not coalesced)\n",
              static_cast<unsigned long long>(r.statements),
              per_doc(static_cast<double>(r.statements)));
  auto matched = db.scalar("SELECT count(*) FROM work_item WHERE stage = 'match' AND status = "
                           "'completed'");
  std::printf("match check: %s completed match work items, %s documents in a cluster\n",
              matched.c_str(),
              db.scalar("SELECT count(*) FROM document WHERE cluster_id IS NOT NULL").c_str());
  return r.other == 0 && matched == std::to_string(n);
  std::fflush(stdout);
}

} // namespace

int main(int argc, char** argv) {
  int n = std::stoi(arg(argc, argv, "ingestions", "20000"));
  int in_flight = std::stoi(arg(argc, argv, "in-flight", "500"));
  int max_messages = std::stoi(arg(argc, argv, "max-messages", "100"));
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
  std::printf("  ingestions %d, max_in_flight %d, queue.max_messages %d, connections: claimed work "
              "%d + ingest stage %d + "
              "queue %d, log level %s, matching %s, load before: %s",
              n, in_flight, max_messages, db_pool, db_pool, queue_pool, log_level.c_str(),
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
    auto r = run_node(sys, work, {make_ingest_stage(ports, settings, cls)}, n, in_flight,
                      max_messages);
    completed_jobs = r.completed;
    worker_rate = completed_jobs / r.seconds;
    auto per_doc = [&](double x) { return completed_jobs > 0 ? x / completed_jobs : 0.0; };
    std::printf("  node: %d completed, %d other%s in %.2f s = %.0f ingestions/s\n", completed_jobs,
                r.other, first_other_note(r).c_str(), r.seconds, worker_rate);
    std::printf("  longest time between two outcomes: %.0f ms\n", r.longest_pause * 1000);
    std::printf("  node process CPU (user + system, all threads): %.2f s = %.0f us per ingestion\n",
                r.node_cpu, per_doc(r.node_cpu * 1e6));
    std::printf("  database CPU (every PostgreSQL process of this machine, autovacuum included): "
                "%.2f s = %.0f us per ingestion\n",
                r.db_cpu, per_doc(r.db_cpu * 1e6));
    std::printf("  load after the node's run: %s", sh("uptime").c_str());
    auto jobs = r.completed + r.other;
    auto st = ingest_db->statements();
    std::printf(
        "  coalescing: claim %llu calls -> %llu statements, load %d -> %llu, "
        "complete (with the transcription) %d -> %llu transactions, transcriptions "
        "recorded alone (failed attempts) %llu, queue delete %llu -> %llu\n",
        (unsigned long long)work->claims.load(), (unsigned long long)pg_work->claim_statements(),
        jobs, (unsigned long long)st.loads, completed_jobs, (unsigned long long)st.completions,
        (unsigned long long)st.transcriptions, (unsigned long long)counted_queue->removes.load(),
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
    auto calls = work->claims.load() + renew_st + other_work + jobs + st.transcriptions
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
  // The checks decide the exit status: a short run in the suite (bench_orchestration_short)
  // stands for the figures' meaning, the lifecycle's SQL and its replay.
  bool checks_hold = true;
  if (!match_queue.empty())
    checks_hold = run_match_stage(*db, store, match_queue, completed_jobs, in_flight, max_messages,
                                  db_pool, queue_pool);
  auto events = db->scalar(
      "SELECT count(*) FROM ingestion_event WHERE step = 'complete' AND outcome = 'ok'");
  auto items = db->scalar("SELECT count(*) FROM work_item WHERE stage = 'ingest' AND status = "
                          "'completed'");
  auto ingestions = db->scalar("SELECT count(*) FROM ingestion WHERE status = 'completed'");
  std::printf(
      "ingest check: %s complete events, %s completed work items, %s completed ingestions\n",
      events.c_str(), items.c_str(), ingestions.c_str());
  auto all = std::to_string(n);
  checks_hold = checks_hold && events == all && items == all && ingestions == all;
  // The audit trail one job wrote with its completion: the replay writes as many rows.
  std::vector<std::string> audit_steps;
  for (auto& row : db->query("SELECT step FROM ingestion_event WHERE ingestion_id = "
                             "(SELECT ingestion_id FROM ingestion_event WHERE step = 'complete' "
                             "LIMIT 1) ORDER BY id"))
    audit_steps.push_back(row[0].value_or(""));
  if (audit_steps.empty())
    audit_steps = {"claim",   "load", "fetch",   "transcribe", "store_transcription",
                   "extract", "gate", "complete"};

  if (replay == "off")
    return checks_hold ? 0 : 1;
  // The replay: the same ingestions made claimable again, a message each, and the per-job SQL.
  db->query("DELETE FROM queue_message");
  db->query("DELETE FROM audit_trail");
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
  auto r = bench::replay_sql(queue_name, audit_steps);
  {
    std::ofstream out{sql_path};
    out << r.script;
  }
  std::string steps;
  for (auto& step : audit_steps)
    steps += (steps.empty() ? "" : " ") + step;
  std::printf("  replayed script: %d SQL statements per document (receive, claim, visibility "
              "extension, lease "
              "renewal, load, BEGIN, results with the transcription, finish with %zu audit rows, "
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
  checks_hold = checks_hold && replay_tps > 0 && replayed == std::to_string(per_client * clients);
  std::printf(
      "  ratio node / replay: %.2f (target >= 0.8); node vs 3,000/s first-stage target: %s\n",
      replay_tps > 0 ? worker_rate / replay_tps : 0.0, worker_rate >= 3000 ? "met" : "NOT met");
  std::printf("  load at end: %s", sh("uptime").c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!root.empty())
    fs::remove_all(root, ec);
  if (!checks_hold)
    std::printf("a check did not hold: the figures above do not stand for the lifecycle\n");
  return checks_hold ? 0 : 1;
}
