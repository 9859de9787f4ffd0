// Orchestration throughput: the worker embedded in this process (actors/worker.hpp) with the real
// postgres_queue and pg_repository, instant transcription and extraction, on N ingestions; then a
// pgbench replay of the same per-job SQL at the same database concurrency, and the ratio.
//
//   bench_orchestration [--ingestions 20000] [--in-flight 500] [--db-pool 4] [--queue-pool 2]
//                       [--store memory|fs] [--batching on|off] [--pgbench /usr/lib/postgresql/15/bin/pgbench]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <sys/resource.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/worker.hpp"
#include "adapters/db/batching_repository.hpp"
#include "adapters/db/pg_repository.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fakes/fakes.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

constexpr const char* document_text = "INVOICE INV-1\nAcme Inc.\nTotal 119.00 EUR\n";

/// Storage in memory: every document reads as the same short text; writes are kept.
class memory_store : public object_store {
public:
  void get(std::string key, size_t, callback<std::string> done) override {
    {
      std::lock_guard g{mtx_};
      if (auto it = objects_.find(key); it != objects_.end()) {
        auto copy = it->second;
        done(std::move(copy));
        return;
      }
    }
    done(std::string{document_text});
  }
  void put(std::string key, std::string bytes, std::string, callback<void> done) override {
    {
      std::lock_guard g{mtx_};
      objects_[std::move(key)] = std::move(bytes);
    }
    done(result<void>{});
  }
  void exists(std::string key, callback<bool> done) override {
    bool found;
    {
      std::lock_guard g{mtx_};
      found = objects_.count(key) > 0;
    }
    done(found);
  }
  std::string name() const override { return "memory"; }

private:
  std::mutex mtx_;
  std::map<std::string, std::string> objects_;
};

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
  void extract(std::string, callback<extraction> done) override { done(test::fake_extractor::valid_invoice()); }
  std::string name() const override { return "instant"; }
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

/// Rows for `n` ingestions (documents/{id}.txt) and their queue messages, in a few statements.
void populate(test::pg_schema& db, const std::string& queue, int n) {
  db.query("INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type) "
           "SELECT d, gen_random_uuid(), d::text, 'documents/' || d || '.txt', 'text/plain' "
           "FROM (SELECT gen_random_uuid() AS d FROM generate_series(1, $1::integer)) x",
           {std::to_string(n)});
  db.query("INSERT INTO ingestion (id, document_id, uploaded_by) "
           "SELECT gen_random_uuid(), id, gen_random_uuid() FROM document");
  db.query("INSERT INTO queue_message (id, queue_name, body) "
           "SELECT gen_random_uuid(), $1, id::text FROM ingestion",
           {queue});
  db.query("ANALYZE");
}

// The per-job statements of the worker (pg_repository.cpp and postgres_queue.cpp), one job per
// pgbench transaction: receive (1 message: the worker receives 10 per round trip, so this costs
// the replay more than the worker), claim joined with the document, record_transcription,
// complete, delete, and the job's audit events in one insert.
std::string replay_sql(const std::string& queue) {
  std::string q = "'" + queue + "'";
  return R"(WITH picked AS (SELECT id, receive_count FROM queue_message WHERE queue_name = )" + q +
         R"( AND visible_at <= now() ORDER BY visible_at, id LIMIT 1 FOR UPDATE SKIP LOCKED), got AS (UPDATE queue_message AS m SET receipt = gen_random_uuid(), receive_count = m.receive_count + 1, visible_at = now() + make_interval(secs => 60::double precision) FROM picked AS p WHERE m.id = p.id RETURNING m.id, m.receipt, m.body, m.receive_count, m.sent_at) SELECT g.receipt AS receipt, g.body AS body, g.receive_count, floor(extract(epoch FROM g.sent_at) * 1000)::bigint FROM got AS g
\gset
WITH req AS (SELECT DISTINCT ON (r.id) r.id, r.token FROM unnest(ARRAY[:body]::uuid[], ARRAY[gen_random_uuid()]) AS r(id, token) ORDER BY r.id), lock AS (SELECT i.id, req.token FROM ingestion AS i JOIN req ON req.id = i.id WHERE i.status = 'in-progress' AND (i.claim_token IS NULL OR i.lease_expires_at IS NULL OR i.lease_expires_at < now()) ORDER BY i.id FOR UPDATE OF i), claimed AS (UPDATE ingestion AS i SET claim_token = lock.token, claimed_by = 'pgbench', started_at = now(), lease_expires_at = now() + make_interval(secs => 300::double precision) FROM lock WHERE i.id = lock.id AND i.status = 'in-progress' AND (i.claim_token IS NULL OR i.lease_expires_at IS NULL OR i.lease_expires_at < now()) RETURNING i.id, i.document_id, i.claim_token, i.attempt_count, i.transcription_file_path) SELECT c.id, c.document_id, d.tenant_id, c.claim_token AS token, c.attempt_count, d.file_path, d.mime_type, c.transcription_file_path FROM claimed AS c JOIN document AS d ON d.id = c.document_id
\gset
UPDATE ingestion SET transcription_file_path = 'transcriptions/x/transcription-output.json', preprocessed_file_path = NULL, transcription_quality_score = 1.0::numeric WHERE id = :body::uuid AND claim_token = :token::uuid AND status = 'in-progress';
WITH c AS (SELECT * FROM unnest(ARRAY[:body]::uuid[], ARRAY[:token]::uuid[], ARRAY['{"invoice_number":"INV-1","total":119.0}']::text[], ARRAY[true]::boolean[], ARRAY[0]::integer[], ARRAY[0]::integer[], ARRAY['instant']::text[]) AS c(id, token, data, valid, input_tokens, output_tokens, model)), lock AS (SELECT i.id FROM ingestion AS i JOIN c ON c.id = i.id AND c.token = i.claim_token WHERE i.status = 'in-progress' ORDER BY i.id FOR UPDATE OF i) UPDATE ingestion AS i SET status = 'completed', structured_data = c.data::jsonb, valid_structured_data = c.valid, extraction_input_tokens = c.input_tokens, extraction_output_tokens = c.output_tokens, extraction_model = c.model, completed_at = now(), claim_token = NULL, lease_expires_at = NULL FROM c WHERE i.id = c.id AND i.claim_token = c.token AND i.status = 'in-progress' AND i.id IN (SELECT id FROM lock) RETURNING i.id, c.token;
DELETE FROM queue_message WHERE queue_name = )" + q + R"( AND receipt = ANY(ARRAY[:receipt]::uuid[]) RETURNING receipt;
INSERT INTO ingestion_event (ingestion_id, step, outcome, detail, duration_ms, worker_id, at) SELECT e.ingestion_id, e.step, e.outcome, e.detail, e.duration_ms, e.worker_id, CASE WHEN e.at_ms > 0 THEN to_timestamp(e.at_ms / 1000.0) ELSE now() END FROM unnest(array_fill(:body::uuid, ARRAY[9]), ARRAY['claim','fetch','transcribe','store_transcription','record_transcription','extract','gate','complete','ack'], array_fill('ok'::text, ARRAY[9]), array_fill(''::text, ARRAY[9]), array_fill(1::bigint, ARRAY[9]), array_fill('pgbench'::text, ARRAY[9]), array_fill(0::bigint, ARRAY[9])) AS e(ingestion_id, step, outcome, detail, duration_ms, worker_id, at_ms);
)";
}

} // namespace

int main(int argc, char** argv) {
  int n = std::stoi(arg(argc, argv, "ingestions", "20000"));
  int in_flight = std::stoi(arg(argc, argv, "in-flight", "500"));
  int db_pool = std::stoi(arg(argc, argv, "db-pool", "4"));
  int queue_pool = std::stoi(arg(argc, argv, "queue-pool", "2"));
  std::string store_kind = arg(argc, argv, "store", "memory");
  bool batching = arg(argc, argv, "batching", "on") == "on";
  std::string pgbench = arg(argc, argv, "pgbench", "/usr/lib/postgresql/15/bin/pgbench");

  std::unique_ptr<test::pg_schema> db;
  try {
    db = std::make_unique<test::pg_schema>(true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_orchestration: %s\n(set INGESTD_TEST_DATABASE_URL, see deploy/local-stack.sh env)\n",
                 e.what());
    return 1;
  }
  std::string queue_name = "bench-orchestration";
  std::printf("orchestration throughput: EMBEDDED worker (actors/worker.hpp in this process), real "
              "postgres_queue + pg_repository, %s object store, instant transcription and extraction\n",
              store_kind.c_str());
  std::printf("  repository: pg_repository%s\n", batching ? " behind batching_repository (claims, completions and events that arrive while one statement runs go in the next)" : " (no batching)");
  std::printf("  ingestions %d, max_in_flight %d, repository connections %d, queue connections %d, "
              "load before: %s",
              n, in_flight, db_pool, queue_pool, sh("uptime").c_str());
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
  std::printf("  setup (rows + messages%s): %.1f s\n", store_kind == "fs" ? " + files" : "",
              std::chrono::duration<double>(clock_type::now() - t_fill).count());

  double worker_rate = 0;
  {
    caf::actor_system_config cfg;
    configure_scheduler(cfg); // as `ingestd run`
    caf::actor_system sys{cfg};
    auto ctx = std::make_shared<worker_context>();
    ctx->settings.worker_id = "bench";
    ctx->settings.max_in_flight = in_flight;
    ctx->settings.wait_time = std::chrono::seconds{1};
    ctx->settings.step_timeout = std::chrono::seconds{120};
    auto pq = std::make_shared<postgres_queue>(db->url(), queue_name, postgres_queue_options{queue_pool});
    ctx->ports.ingest_queue = pq;
    auto pg = std::make_shared<pg_repository>(db->url(), pg_repository_options{db_pool});
    std::shared_ptr<batching_repository> batched;
    if (batching) {
      batched = std::make_shared<batching_repository>(pg);
      ctx->ports.db = batched;
    } else {
      ctx->ports.db = pg;
    }
    if (store_kind == "fs")
      ctx->ports.storage = std::make_shared<filesystem_store>(root);
    else
      ctx->ports.storage = std::make_shared<memory_store>();
    ctx->ports.ocr = std::make_shared<instant_transcriber>();
    ctx->ports.extract = std::make_shared<instant_extractor>();
    std::atomic<int> completed{0}, other{0};
    std::promise<void> all_done;
    std::mutex detail_mtx;
    std::string first_other;
    ctx->observer = [&](const job_outcome& o) {
      if (o.result == job_result::completed) {
        if (completed.fetch_add(1) + 1 + other.load() == n)
          all_done.set_value();
      } else {
        {
          std::lock_guard g{detail_mtx};
          if (first_other.empty())
            first_other = o.detail;
        }
        if (other.fetch_add(1) + 1 + completed.load() == n)
          all_done.set_value();
      }
    };
    std::promise<void> stopped;
    worker_options opts;
    opts.sweeper = false;
    opts.on_stopped = [&] { stopped.set_value(); };
    auto cpu0 = process_cpu_seconds();
    auto t0 = clock_type::now();
    auto w = start_worker(sys, ctx, opts);
    auto done = all_done.get_future();
    if (done.wait_for(std::chrono::minutes{10}) != std::future_status::ready)
      std::printf("  TIMEOUT after 10 min: %d completed, %d other\n", completed.load(), other.load());
    double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    double cpu = process_cpu_seconds() - cpu0;
    worker_rate = completed.load() / secs;
    std::printf("  worker: %d completed, %d other%s%s in %.2f s = %.0f ingestions/s\n", completed.load(),
                other.load(), first_other.empty() ? "" : " (first: ", first_other.empty() ? "" : (first_other + ")").c_str(),
                secs, worker_rate);
    std::printf("  worker process CPU (user + system, all threads): %.2f s = %.0f us per ingestion\n", cpu,
                completed.load() > 0 ? cpu * 1e6 / completed.load() : 0.0);
    std::printf("  load after worker run: %s", sh("uptime").c_str());
    if (batched) {
      auto c = batched->stats();
      std::printf("  batching: claim %llu calls -> %llu statements, complete %llu -> %llu, events %llu -> %llu\n",
                  (unsigned long long)c.claim_calls_in, (unsigned long long)c.claim_calls_out,
                  (unsigned long long)c.complete_calls_in, (unsigned long long)c.complete_calls_out,
                  (unsigned long long)c.event_calls_in, (unsigned long long)c.event_calls_out);
    }
    std::printf("  queue deletes: %d acknowledgements -> %llu statements\n", completed.load() + other.load(),
                (unsigned long long)pq->delete_statements());
    std::printf("  record_transcription: %d calls -> %llu statements\n", completed.load(),
                (unsigned long long)pg->transcription_statements());
    caf::anon_send(w.coordinator, shutdown_atom_v);
    stopped.get_future().wait_for(std::chrono::seconds{60});
  }
  auto db_check = db->scalar("SELECT count(*) FROM ingestion_event WHERE step = 'complete' AND outcome = 'ok'");
  std::printf("  check: %s complete events, %s completed rows\n", db_check.c_str(),
              db->scalar("SELECT count(*) FROM ingestion WHERE status = 'completed'").c_str());

  // The replay: the same ingestions made claimable again, a message each, and the per-job SQL.
  db->query("DELETE FROM queue_message");
  db->query("UPDATE ingestion SET status = 'in-progress', claim_token = NULL, lease_expires_at = NULL, "
            "structured_data = NULL, valid_structured_data = NULL, completed_at = NULL");
  db->query("INSERT INTO queue_message (id, queue_name, body) SELECT gen_random_uuid(), $1, id::text FROM ingestion",
            {queue_name});
  db->query("VACUUM ANALYZE queue_message");
  db->query("VACUUM ANALYZE ingestion");
  auto dir = test::make_temp_dir("bench-orch-sql");
  auto sql_path = dir + "/per_job.sql";
  {
    std::ofstream out{sql_path};
    out << replay_sql(queue_name);
  }
  int clients = db_pool + queue_pool;
  int per_client = n / clients;
  std::string cmd = "PGOPTIONS='-csearch_path=" + db->name() + "' " + pgbench + " -n -M prepared -f " + sql_path +
                    " -c " + std::to_string(clients) + " -j 2 -t " + std::to_string(per_client) + " '" +
                    db->base_url() + "' 2>&1";
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
  std::printf("  pgbench replay (same per-job SQL, %d connections = the worker's database connections): "
              "%.0f jobs/s%s\n",
              clients, replay_tps,
              failed != std::string::npos ? (" [" + out.substr(failed, out.find('\n', failed) - failed) + "]").c_str() : "");
  std::printf("  ratio worker / replay: %.2f (target >= 0.8); worker vs 3,000/s first-stage target: %s\n",
              replay_tps > 0 ? worker_rate / replay_tps : 0.0, worker_rate >= 3000 ? "met" : "NOT met");
  std::printf("  load at end: %s", sh("uptime").c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!root.empty())
    fs::remove_all(root, ec);
  return 0;
}
