// The deterministic fixture of the actor tests: CAF's test coordinator (virtual time, one
// thread), a worker_context wired to the port fakes, and the outcomes the jobs report.
#pragma once

#include <memory>
#include <vector>

#include "caf/test/dsl.hpp"

#include "actors/heartbeat.hpp"
#include "actors/job.hpp"
#include "actors/worker_context.hpp"
#include "messages/protocol.hpp"
#include "tests/support/fakes/fakes.hpp"

namespace ingestd::test {

struct actor_fixture : test_coordinator_fixture<> {
  std::shared_ptr<fake_queue> queue = std::make_shared<fake_queue>();
  std::shared_ptr<fake_store> store = std::make_shared<fake_store>();
  std::shared_ptr<fake_repository> db = std::make_shared<fake_repository>();
  std::shared_ptr<fake_transcriber> ocr = std::make_shared<fake_transcriber>();
  std::shared_ptr<fake_extractor> extract = std::make_shared<fake_extractor>();
  std::shared_ptr<worker_context> ctx = std::make_shared<worker_context>();
  std::vector<job_outcome> outcomes;
  std::vector<std::string> notified;
  std::vector<caf::actor> periodic;

  actor_fixture() {
    ctx->ports.ingest_queue = queue;
    ctx->ports.storage = store;
    ctx->ports.db = db;
    ctx->ports.ocr = ocr;
    ctx->ports.extract = extract;
    ctx->ports.on_failed = [this](const claimed_ingestion& c, const error& e, int32_t attempts) {
      notified.push_back(c.ingestion_id.str() + " " + e.code + " " + std::to_string(attempts));
    };
    ctx->settings.worker_id = "test-worker";
    ctx->settings.step_timeout = std::chrono::seconds{30};
    ctx->observer = [this](const job_outcome& o) { outcomes.push_back(o); };
  }

  ~actor_fixture() override {
    // Periodic actors re-arm their timers: stop them before the base fixture runs every timer.
    for (auto& a : periodic)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }

  heartbeat_actor heartbeat() {
    auto hb = spawn_heartbeat(sys, ctx);
    periodic.push_back(caf::actor_cast<caf::actor>(hb));
    sched.run();
    return hb;
  }

  /// Puts `body` on the queue, receives it, and returns the message as a receive would.
  queue_message deliver(const std::string& body) {
    auto id = queue->push(body);
    queue_message got;
    queue->receive(1, std::chrono::seconds{0}, std::chrono::seconds{60},
                   [&](result<std::vector<queue_message>> r) { got = r->front(); });
    return got;
  }

  /// Runs one job for `body` to the end (no timers fire) and returns its outcome.
  job_outcome run_job(const std::string& body, heartbeat_actor hb) {
    auto before = outcomes.size();
    spawn_job(sys, ctx, hb, deliver(body));
    sched.run();
    CAF_REQUIRE_EQUAL(outcomes.size(), before + 1);
    return outcomes.back();
  }
};

} // namespace ingestd::test
