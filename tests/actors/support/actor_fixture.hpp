// The deterministic fixture of the actor tests: CAF's test coordinator (virtual time, one
// thread), a node_context whose claimed-work port is the fake work_item table, with its deadline
// sweep, the ingest stage built by its module over the port fakes, and the outcomes the jobs
// report.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "caf/test/dsl.hpp"

#include "actors/deadlines.hpp"
#include "actors/heartbeat.hpp"
#include "actors/job.hpp"
#include "actors/node_context.hpp"
#include "messages/protocol.hpp"
#include "stages/ingest/ingest_stage.hpp"
#include "tests/support/fakes/fakes.hpp"
#include "tests/support/fakes/work_fakes.hpp"

namespace ingestd::test {

/// The ingest queue's name, as work items' messages name it.
inline const std::string ingest_queue_name = "ingestd-ingest";

struct actor_fixture : test_coordinator_fixture<> {
  std::shared_ptr<fake_queue> queue = std::make_shared<fake_queue>();
  std::shared_ptr<fake_store> store = std::make_shared<fake_store>();
  /// The claimed-work table, and the ingest stage's own port over it.
  std::shared_ptr<fake_work_repository> work = std::make_shared<fake_work_repository>();
  std::shared_ptr<fake_ingest_repository> db = std::make_shared<fake_ingest_repository>(work);
  std::shared_ptr<fake_transcriber> ocr = std::make_shared<fake_transcriber>();
  std::shared_ptr<fake_extractor> extract = std::make_shared<fake_extractor>();
  /// The ingest stage's ports and settings: ingest_stage() builds the stage from them as they
  /// are when it is called.
  std::shared_ptr<ingest_ports> ports = std::make_shared<ingest_ports>();
  ingest_settings ingest;
  std::shared_ptr<node_context> ctx = std::make_shared<node_context>();
  std::vector<job_outcome> outcomes;
  std::vector<caf::actor> periodic;

  actor_fixture() {
    work->connect(ingest_queue_name, queue);
    ports->db = db;
    ports->storage = store;
    ports->ocr = ocr;
    ports->extract = extract;
    ctx->work = work;
    ctx->settings.worker_id = "test-worker";
    ctx->settings.step_timeout = std::chrono::seconds{30};
    // The fake queue holds receives to SQS's limit, which the actor tests were written against.
    ctx->settings.max_messages = 10;
    ctx->observer = [this](const job_outcome& o) { outcomes.push_back(o); };
    periodic.push_back(caf::actor_cast<caf::actor>(spawn_deadline_sweep(sys, ctx->deadlines)));
  }

  ~actor_fixture() override {
    // Periodic actors re-arm their timers: stop them before the base fixture runs every timer.
    for (auto& a : periodic)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    sched.run();
  }

  /// The ingest stage without size classes, on `queue`.
  std::shared_ptr<const stage> ingest_stage() {
    ingest_class cls;
    cls.queue = queue;
    cls.queue_name = ingest_queue_name;
    return make_ingest_stage(ports, ingest, cls);
  }

  /// The node's admission set to its settings as they are now (start_node does it).
  void configure_admission() { ctx->admission->configure(ctx->settings.admission_limits()); }

  heartbeat_actor heartbeat() {
    auto hb = spawn_heartbeat(sys, ctx);
    periodic.push_back(caf::actor_cast<caf::actor>(hb));
    sched.run();
    return hb;
  }

  /// Receives the next visible message of `q`, as a receive would return it.
  static queue_message receive(fake_queue& q) {
    queue_message got;
    q.receive(1, std::chrono::seconds{0}, std::chrono::seconds{60},
              [&](result<std::vector<queue_message>> r) {
                CAF_REQUIRE(r && !r->empty());
                got = r->front();
              });
    return got;
  }

  /// Puts `body` on the queue, receives it, and returns the message as a receive would.
  queue_message deliver(const std::string& body) {
    queue->push(body);
    return receive(*queue);
  }

  /// Runs the job of `s` for `msg` to the end (no timers fire) and returns its outcome.
  job_outcome run_job(std::shared_ptr<const stage> s, queue_message msg, heartbeat_actor hb) {
    auto before = outcomes.size();
    spawn_job(sys, ctx, std::move(s), std::move(hb), std::move(msg));
    sched.run();
    CAF_REQUIRE_EQUAL(outcomes.size(), before + 1);
    return outcomes.back();
  }

  /// Runs one ingest job for `body` (delivered on `queue`) to the end.
  job_outcome run_job(const std::string& body, heartbeat_actor hb) {
    return run_job(ingest_stage(), deliver(body), std::move(hb));
  }

  /// Spawns the ingest job for `body` (delivered on `queue`) without running it.
  job_actor spawn_ingest_job(const std::string& body, heartbeat_actor hb) {
    return spawn_job(sys, ctx, ingest_stage(), std::move(hb), deliver(body));
  }

  /// The audit rows of `item` with `step`.
  std::vector<fake_audit_row> audit_of(const uuid& item, const std::string& step) {
    std::vector<fake_audit_row> out;
    for (auto& row : work->audit_rows())
      if (row.event.item == item && row.event.step == step)
        out.push_back(row);
    return out;
  }

  size_t events_with(const uuid& item, const std::string& step) {
    return audit_of(item, step).size();
  }

  /// The node's jobs in flight as what is attached to `job` sees them when it exits (-1 until it
  /// does): what a poller that monitors it sees when it hears of the end.
  std::shared_ptr<int64_t> in_flight_at_exit(const job_actor& job) {
    auto seen = std::make_shared<int64_t>(-1);
    caf::actor_cast<caf::abstract_actor*>(job)->attach_functor(
        [seen, admission = ctx->admission] { *seen = admission->in_flight(); });
    return seen;
  }

  /// How many status events of `type` the trigger wrote for `item` (the failure notifier takes
  /// INGESTION_FAILED and MATCHING_FAILED).
  size_t status_events(const uuid& item, const std::string& type) {
    size_t n = 0;
    for (auto& t : work->status_events_of(item))
      n += t == type ? 1 : 0;
    return n;
  }

  /// No fake of the fixture saw a breach of its port's contract.
  void check_no_violations() {
    for (auto& v : work->violations())
      CAF_FAIL("work repository: " << v);
    for (auto& v : db->violations())
      CAF_FAIL("ingest repository: " << v);
    for (auto& v : queue->violations())
      CAF_FAIL("queue: " << v);
  }
};

} // namespace ingestd::test
