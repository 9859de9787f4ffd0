// A node embedded in a test: a real caf::actor_system, the ingest stage over a postgres_queue, the
// work and ingest repositories on a fresh schema, a filesystem_store in a temp dir, the node's CPU
// pool, and the caller's OCR and extractor. Documents come in through the intake repository, which
// writes each ingestion's work item and queue message. Shared by the pipeline_llm and pipeline_ocr
// integration tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <gtest/gtest.h>

#include "actors/cpu_pool.hpp"
#include "actors/node.hpp"
#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "config/config.hpp"
#include "messages/protocol.hpp"
#include "stages/ingest/ingest_stage.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"
#include "tests/support/postgres/await.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd::test {

/// Settings that make a job's whole life take seconds: the configuration's defaults with shorter
/// times.
inline node_settings fast_settings() {
  using std::chrono::seconds;
  auto s = default_node_settings();
  s.worker_id = "pipeline-test";
  s.max_in_flight = 16;
  s.max_messages = 10;
  s.wait_time = seconds{1};
  s.visibility_timeout = seconds{60};
  s.lease = seconds{60};
  s.heartbeat_rate = seconds{1};
  s.heartbeat_extension = seconds{60};
  s.heartbeat_actors = 1;
  s.step_timeout = seconds{60};
  s.shutdown_grace = seconds{5};
  s.sweeper_interval = seconds{3600};
  s.stale_threshold = seconds{3600};
  s.cpu_workers = 2;
  s.cpu_backlog = 1000;
  return s;
}

/// The ingest stage's settings for the tests: the configuration's defaults (as ingest_stages()
/// takes them) with three attempts; the first back-off is long enough for a test to look at the
/// state between attempts, later ones are short so that the ingestion reaches its final state
/// quickly. No matching after it.
inline ingest_settings fast_stage_settings() {
  using std::chrono::seconds;
  auto cfg = default_config();
  ingest_settings s;
  s.quality_threshold = cfg.transcription.ocr_quality_threshold;
  s.max_file_bytes = static_cast<size_t>(cfg.transcription.max_file_bytes);
  s.max_attempts = 3;
  s.retry_backoff = {seconds{5}, seconds{1}};
  return s;
}

class pipeline {
public:
  pipeline()
      : root_(make_temp_dir("pipeline")), queue_name_(unique_name("q")),
        work_(std::make_shared<pg_work_repository>(db_.url())),
        ingest_(std::make_shared<pg_ingest_repository>(db_.url())),
        intake_repo_(std::make_shared<pg_intake_repository>(db_.url())),
        queue_(std::make_shared<postgres_queue>(db_.url(), queue_name_)),
        store_(std::make_shared<filesystem_store>(root_)) {
    ctx_->settings = fast_settings();
    ctx_->work = work_;
    ctx_->observer = [this](const job_outcome& o) {
      std::lock_guard<std::mutex> g{m_};
      outcomes_.push_back(o);
      outcome_times_.push_back(std::chrono::system_clock::now());
      cv_.notify_all();
    };
    pool_ = spawn_cpu_pool(sys_, ctx_->settings.cpu_workers, ctx_->settings.cpu_backlog,
                           ctx_->admission);
    cpu_ = make_cpu_executor(pool_);
    ctx_->cpu = cpu_;
    ports_->db = ingest_;
    ports_->storage = store_;
    class_.ocr_timeout = std::chrono::seconds{default_config().transcription.timeout_seconds};
  }

  ~pipeline() {
    stop();
    if (!ever_started_)
      caf::anon_send_exit(pool_, caf::exit_reason::user_shutdown);
    queue_.reset();
    std::filesystem::remove_all(root_);
  }

  pg_schema& db() { return db_; }
  node_settings& settings() { return ctx_->settings; }
  ingest_settings& stage_settings() { return stage_settings_; }
  /// The ingest stage's class (its queue is filled in at start).
  ingest_class& stage_class() { return class_; }
  ingest_ports& ports() { return *ports_; }
  /// The node's CPU pool, for the adapters that run on it (the local OCR provider).
  cpu_executor& cpu() { return *cpu_; }
  const std::string& storage_root() const { return root_; }
  const std::string& queue_name() const { return queue_name_; }
  object_store& store() { return *store_; }
  caf::actor_system& system() { return sys_; }
  const std::shared_ptr<node_context>& context() const { return ctx_; }

  /// Stores the corpus file as a new document and creates its ingestion, whose work item and
  /// message intake writes in the same statement.
  uuid submit(const std::string& corpus_file, const std::string& mime_type) {
    auto bytes = read_binary(corpus_dir() + "/" + corpus_file);
    intake_request r;
    r.document_id = uuid::v7();
    r.ingestion_id = uuid::v7();
    r.tenant_id = uuid::v4();
    r.content_hash = uuid::v4().str(); // unique: no deduplication between tests' documents
    auto ext = corpus_file.substr(corpus_file.rfind('.') + 1);
    r.file_path = "documents/" + r.document_id.str() + "." + ext;
    r.mime_type = mime_type;
    r.uploaded_by = uuid::v4();
    r.stage = "ingest";
    r.queue = queue_name_;
    // The file first, as intake stores it before the ingestion exists.
    auto put = await<void>([&](auto cb) { store_->put(r.file_path, bytes, mime_type, cb); });
    EXPECT_TRUE(put) << put.error().describe();
    auto created = intake_repo_->create_ingestion(r, std::chrono::seconds{30});
    EXPECT_TRUE(created) << created.error().describe();
    return r.ingestion_id;
  }

  /// Starts the node with the ingest stage over the ports set so far (storage and database are
  /// filled in), and the options given (no sweeper).
  void start(node_options opts = {}) {
    class_.queue = queue_;
    class_.queue_name = queue_name_;
    ctx_->stages = {make_ingest_stage(ports_, stage_settings_, class_)};
    opts.sweeper = false;
    opts.cpu_pool = pool_;
    node_ = start_node(sys_, ctx_, std::move(opts));
    started_ = true;
    ever_started_ = true;
  }

  /// Drains and stops the node (idempotent).
  void stop() {
    if (!started_)
      return;
    started_ = false;
    caf::anon_send(node_.coordinator, shutdown_atom_v);
    caf::scoped_actor self{sys_};
    self->wait_for(node_.coordinator);
  }

  /// The outcomes observed for `id` so far.
  std::vector<job_outcome> outcomes(uuid id) {
    std::lock_guard<std::mutex> g{m_};
    std::vector<job_outcome> xs;
    for (auto& o : outcomes_)
      if (o.item == id)
        xs.push_back(o);
    return xs;
  }

  /// Waits until `id` has an outcome for which `pred` holds; false at the deadline.
  bool wait_for_outcome(uuid id, const std::function<bool(const job_outcome&)>& pred,
                        std::chrono::seconds timeout = std::chrono::seconds{60}) {
    std::unique_lock<std::mutex> g{m_};
    return cv_.wait_for(g, timeout, [&] {
      for (auto& o : outcomes_)
        if (o.item == id && pred(o))
          return true;
      return false;
    });
  }

  /// Waits for an outcome that ends the ingestion's processing (completed or failed).
  bool wait_until_final(uuid id, std::chrono::seconds timeout = std::chrono::seconds{60}) {
    return wait_for_outcome(
        id,
        [](const job_outcome& o) {
          return o.result == job_result::completed || o.result == job_result::failed;
        },
        timeout);
  }

  ingestion_status status(uuid id) {
    auto s = intake_repo_->find_ingestion(id, std::chrono::seconds{30});
    EXPECT_TRUE(s && s->has_value());
    return s && s->has_value() ? **s : ingestion_status{};
  }

  /// Messages of this test's queue still in the table (visible or not).
  int messages_left() {
    return std::stoi(
        db_.scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1", {queue_name_}));
  }
  /// Of those, the ones that were hidden past the moment of `id`'s first outcome (left for a
  /// back-off, or received again since): true however late the test looks.
  int messages_hidden_after_first_outcome(uuid id) {
    std::chrono::system_clock::time_point at{};
    {
      std::lock_guard<std::mutex> g{m_};
      for (size_t i = 0; i < outcomes_.size(); ++i)
        if (outcomes_[i].item == id) {
          at = outcome_times_[i];
          break;
        }
    }
    auto micros
        = std::chrono::duration_cast<std::chrono::microseconds>(at.time_since_epoch()).count();
    return std::stoi(db_.scalar("SELECT count(*) FROM queue_message WHERE queue_name = $1 AND "
                                "visible_at > to_timestamp($2::double precision / 1e6)",
                                {queue_name_, std::to_string(micros)}));
  }

  /// Ends the back-off of this test's messages now: they become visible and the node's parked
  /// receive is woken (the queue's notification).
  void release_now() {
    db_.query("UPDATE queue_message SET visible_at = now() WHERE queue_name = $1", {queue_name_});
    db_.query("SELECT pg_notify('ingestd_queue', $1)", {queue_name_});
  }

private:
  // Declared first so that it is destroyed last: adapters' late callbacks still find it.
  caf::actor_system_config sys_cfg_;
  caf::actor_system sys_{sys_cfg_};
  pg_schema db_;
  std::string root_;
  std::string queue_name_;
  std::shared_ptr<pg_work_repository> work_;
  std::shared_ptr<pg_ingest_repository> ingest_;
  std::shared_ptr<pg_intake_repository> intake_repo_;
  std::shared_ptr<postgres_queue> queue_;
  std::shared_ptr<filesystem_store> store_;
  std::shared_ptr<node_context> ctx_ = std::make_shared<node_context>();
  std::shared_ptr<ingest_ports> ports_ = std::make_shared<ingest_ports>();
  ingest_settings stage_settings_ = fast_stage_settings();
  ingest_class class_;
  cpu_pool_actor pool_;
  std::shared_ptr<cpu_executor> cpu_;
  node node_;
  bool started_ = false;
  bool ever_started_ = false;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<job_outcome> outcomes_;
  std::vector<std::chrono::system_clock::time_point> outcome_times_;
};

} // namespace ingestd::test
