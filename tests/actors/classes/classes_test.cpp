// Size classes and capacity (seed 004) on the deterministic scheduler: admission by weighted
// slots, escalation small → large → failed (failures, timeouts, crashes), and the lifetime drain.
#define CAF_SUITE classes
#include "caf/test/unit_test_impl.hpp"

#include "actors/ingest_job.hpp"
#include "actors/poller.hpp"
#include "actors/worker.hpp"
#include "tests/actors/support/poller_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

struct fixture : test::poller_fixture {
  std::shared_ptr<test::fake_queue> large_queue = std::make_shared<test::fake_queue>();
  std::shared_ptr<stage> small;
  std::shared_ptr<stage> large;

  fixture() {
    ctx->ports.large_ingest_queue = large_queue;
    ctx->settings.max_attempts = 3;
    ctx->settings.retry_backoff = {60s};
    size_class_settings s;
    s.name = "small";
    s.queue = queue;
    s.weight = 1;
    s.step_timeout = 30s;
    s.escalate_to = large_queue;
    s.class_max_attempts = 2;
    small = make_ingest_class_stage(*ctx, s);
    size_class_settings l;
    l.name = "large";
    l.queue = large_queue;
    l.weight = 5;
    l.step_timeout = 120s;
    l.class_max_attempts = 2;
    large = make_ingest_class_stage(*ctx, l);
  }

  /// An ingestion with its document stored, in `cls`, its message on that class's queue.
  uuid add_document(const std::string& cls) {
    auto key = "documents/" + cls + std::to_string(next++) + ".txt";
    auto id = db->add(key);
    db->set_size_class(id, cls);
    store->set(key, "text");
    last_message = (cls == "large" ? large_queue : queue)->push(id.str());
    return id;
  }

  poller_actor poller_of(const std::shared_ptr<stage>& st) {
    auto p = spawn_poller(sys, ctx, st, {hb});
    periodic.push_back(caf::actor_cast<caf::actor>(p));
    return p;
  }

  /// Receives the next message of `q` and runs the job of `st` for it to the end.
  job_outcome run_one(const std::shared_ptr<stage>& st, test::fake_queue& q) {
    queue_message got;
    q.receive(1, 0s, 60s, [&](result<std::vector<queue_message>> r) { got = r->front(); });
    last_received = got.id;
    auto before = outcomes.size();
    spawn_job(sys, ctx, st, hb, got);
    sched.run();
    CAF_REQUIRE_EQUAL(outcomes.size(), before + 1);
    return outcomes.back();
  }

  int next = 0;
  /// The id of the message add_document() pushed last.
  std::string last_message;
  /// The id of the message run_one() received last.
  std::string last_received;
};

error flaky() { return error::make_transient("llm.unavailable", "the model is overloaded"); }

} // namespace

CAF_TEST_FIXTURE_SCOPE(classes_tests, fixture)

// ---- admission by weighted slots -------------------------------------------------------------

CAF_TEST(the poller admits jobs by weighted slots and polls again when a slot is free) {
  ctx->settings.capacity_slots = 12;
  ocr->hold("transcribe");
  for (int i = 0; i < 4; ++i)
    add_document("large");
  auto p = poller_of(large);
  sched.run();
  // 12 slots hold two jobs of weight 5: a receive of two, and no other until one ends.
  CAF_CHECK_EQUAL(ctx->metrics->in_flight.load(), 2);
  CAF_CHECK_EQUAL(ctx->metrics->slots_in_use.load(), 10);
  auto sizes = large_queue->receive_sizes();
  CAF_REQUIRE_EQUAL(sizes.size(), 1u);
  CAF_CHECK_EQUAL(sizes[0], 2);
  CAF_CHECK_EQUAL(ctx->metrics->capacity_usage_ratio(1000), 10.0 / 12.0);
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 4u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::completed);
  for (auto n : large_queue->receive_sizes())
    CAF_CHECK(n >= 1 && n <= 2);
  queue->end_waits();
  large_queue->end_waits();
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->slots_in_use.load(), 0);
}

CAF_TEST(stages share the budget and max_in_flight still caps the count) {
  ctx->settings.capacity_slots = 6;
  ctx->settings.max_in_flight = 3;
  ocr->hold("transcribe");
  add_document("large");
  for (int i = 0; i < 4; ++i)
    add_document("small");
  auto pl = poller_of(large);
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->slots_in_use.load(), 5);
  auto ps = poller_of(small);
  sched.run();
  // One slot left: one small job beside the large one.
  CAF_CHECK_EQUAL(ctx->metrics->in_flight.load(), 2);
  CAF_CHECK_EQUAL(ctx->metrics->slots_in_use.load(), 6);
  ocr->unhold("transcribe");
  sched.run();
  // The large job ended: the small poller finds the free slots within a second, but never more
  // than max_in_flight jobs at once.
  ocr->hold("transcribe");
  advance_time(1s);
  sched.run();
  CAF_CHECK(ctx->metrics->in_flight.load() <= 3);
  ocr->unhold("transcribe");
  for (int i = 0; i < 5 && outcomes.size() < 5u; ++i) {
    advance_time(1s);
    sched.run();
  }
  CAF_CHECK_EQUAL(outcomes.size(), 5u);
  queue->end_waits();
  large_queue->end_waits();
  sched.run();
}

CAF_TEST(a job heavier than the whole budget runs alone on an idle node) {
  ctx->settings.capacity_slots = 4;  // a large job (5) never fits
  ocr->hold("transcribe");
  add_document("small");
  add_document("large");
  auto ps = poller_of(small);
  sched.run();
  CAF_CHECK_EQUAL(ctx->metrics->in_flight.load(), 1);
  auto pl = poller_of(large);
  sched.run();
  CAF_CHECK(large_queue->receive_sizes().empty());  // the node is not idle: no receive
  ocr->unhold("transcribe");
  sched.run();
  ocr->hold("transcribe");
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(large_queue->receive_sizes(), std::vector<int>{1});
  CAF_CHECK_EQUAL(ctx->metrics->slots_in_use.load(), 5);
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 2u);
  queue->end_waits();
  large_queue->end_waits();
  sched.run();
}

// ---- escalation ------------------------------------------------------------------------------

CAF_TEST(a small task that fails twice moves to the large queue) {
  auto id = add_document("small");
  extract->fail_next("extract", flaky());
  extract->fail_next("extract", flaky());
  CAF_CHECK_EQUAL(run_one(small, *queue).result, job_result::retrying);
  CAF_CHECK_EQUAL(db->row(id).ingestion.size_class, "small");
  queue->expire(last_message);  // the back-off over
  auto second = run_one(small, *queue);
  CAF_CHECK_EQUAL(second.result, job_result::escalated);
  auto row = db->row(id);
  CAF_CHECK_EQUAL(row.status, "in-progress");
  CAF_CHECK_EQUAL(row.ingestion.size_class, "large");
  CAF_CHECK_EQUAL(row.ingestion.attempt_count, 2);
  CAF_CHECK_EQUAL(row.ingestion.class_attempts_base, 2);
  CAF_CHECK_EQUAL(large_queue->sent_bodies(), std::vector<std::string>{id.str()});
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);  // the small message is done
  // In the large class it starts with a clean count and completes.
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::completed);
  CAF_CHECK(notified.empty());
}

CAF_TEST(a small task that times out moves to the large queue at once) {
  auto id = add_document("small");
  ocr->hold("transcribe");
  queue_message got;
  queue->receive(1, 0s, 60s, [&](result<std::vector<queue_message>> r) { got = r->front(); });
  spawn_job(sys, ctx, small, hb, got);
  sched.run();
  advance_time(31s);  // the small class's step deadline
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::escalated);
  CAF_CHECK_EQUAL(db->row(id).ingestion.size_class, "large");
  CAF_CHECK_EQUAL(large_queue->sent_bodies(), std::vector<std::string>{id.str()});
  ocr->unhold("transcribe");  // the late answer is ignored
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
}

CAF_TEST(the large class has its own longer step deadline) {
  auto id = add_document("large");
  ocr->hold("transcribe");
  queue_message got;
  large_queue->receive(1, 0s, 60s, [&](result<std::vector<queue_message>> r) { got = r->front(); });
  spawn_job(sys, ctx, large, hb, got);
  sched.run();
  advance_time(31s);
  sched.run();
  CAF_CHECK(outcomes.empty());  // past the small deadline, within the large one
  ocr->unhold("transcribe");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(db->row(id).status, "completed");
}

CAF_TEST(a large task that fails twice fails for review) {
  auto id = add_document("large");
  extract->fail_next("extract", flaky());
  extract->fail_next("extract", flaky());
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::retrying);
  large_queue->expire(last_message);
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::failed);
  CAF_CHECK_EQUAL(db->row(id).status, "failed");
  CAF_REQUIRE_EQUAL(notified.size(), 1u);
  CAF_CHECK_EQUAL(notified[0], id.str() + " llm.unavailable 2");
}

CAF_TEST(a large task that times out twice fails for review) {
  auto id = add_document("large");
  ocr->hold("transcribe");
  for (auto expected : {job_result::retrying, job_result::failed}) {
    queue_message got;
    large_queue->receive(1, 0s, 60s, [&](result<std::vector<queue_message>> r) { got = r->front(); });
    auto before = outcomes.size();
    spawn_job(sys, ctx, large, hb, got);
    sched.run();
    advance_time(121s);  // the large class's step deadline
    sched.run();
    CAF_REQUIRE_EQUAL(outcomes.size(), before + 1);
    CAF_CHECK_EQUAL(outcomes.back().result, expected);
    large_queue->expire(got.id);
  }
  CAF_CHECK_EQUAL(db->row(id).status, "failed");
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 2);
  CAF_CHECK(large_queue->sent_bodies().empty());
}

CAF_TEST(a task escalated after two small failures fails after two large ones) {
  auto id = add_document("small");
  for (int i = 0; i < 4; ++i)
    extract->fail_next("extract", flaky());
  CAF_CHECK_EQUAL(run_one(small, *queue).result, job_result::retrying);
  queue->expire(last_message);
  CAF_CHECK_EQUAL(run_one(small, *queue).result, job_result::escalated);
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::retrying);
  large_queue->expire(last_received);
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::failed);
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 4);
  CAF_CHECK_EQUAL(db->row(id).status, "failed");
}

CAF_TEST(a delivery after a crash is retried as large and keeps the crash count) {
  ctx->settings.max_attempts = 3;  // the poison bound (worker.max_retry_attempts)
  small->max_attempts = 3;
  large->max_attempts = 3;
  auto id = add_document("small");
  // The first holder claims it and dies (no outcome, no give-back).
  ocr->hold("transcribe");
  queue_message got;
  queue->receive(1, 0s, 60s, [&](result<std::vector<queue_message>> r) { got = r->front(); });
  auto first = spawn_job(sys, ctx, small, hb, got);
  sched.run();
  caf::anon_send_exit(first, caf::exit_reason::kill);
  sched.run();
  db->crash_holder(id);
  // Its message reappears on the small queue: the small node finds it large and hands it over.
  queue->expire(last_message);
  ocr->unhold("transcribe");
  auto handed = run_one(small, *queue);
  CAF_CHECK_EQUAL(handed.result, job_result::escalated);
  auto row = db->row(id);
  CAF_CHECK_EQUAL(row.ingestion.size_class, "large");
  CAF_CHECK_EQUAL(row.ingestion.attempt_count, 1);  // the crash counted
  CAF_CHECK(!row.token);                            // the hand-over gave the claim back
  CAF_CHECK_EQUAL(large_queue->sent_bodies(), std::vector<std::string>{id.str()});
  // It crashes the large worker too, twice: the poison bound still ends it at three.
  for (int crash = 0; crash < 2; ++crash) {
    ocr->hold("transcribe");
    queue_message m;
    large_queue->receive(1, 0s, 60s, [&](result<std::vector<queue_message>> r) { m = r->front(); });
    auto job = spawn_job(sys, ctx, large, hb, m);
    sched.run();
    caf::anon_send_exit(job, caf::exit_reason::kill);
    sched.run();
    if (db->row(id).token)
      db->crash_holder(id);
    large_queue->expire(m.id);
    ocr->unhold("transcribe");
  }
  auto last = run_one(large, *large_queue);
  CAF_CHECK_EQUAL(db->row(id).status, "failed");
  CAF_CHECK_EQUAL(db->row(id).error_class, "poison");
  CAF_CHECK_EQUAL(db->row(id).ingestion.attempt_count, 3);
  CAF_CHECK_EQUAL(last.result, job_result::skipped);
}

// ---- lifetime and idle exit ------------------------------------------------------------------

CAF_TEST(after lifetime_units the node drains and stops) {
  ctx->settings.lifetime_units = 3;
  ctx->settings.max_messages = 2;
  ctx->settings.heartbeat_actors = 1;
  ctx->stages = {small};
  for (int i = 0; i < 5; ++i)
    add_document("small");
  bool stopped = false;
  worker_options opts;
  opts.sweeper = false;
  opts.on_stopped = [&] { stopped = true; };
  std::string why;
  opts.on_self_drain = [&](const std::string& w) { why = w; };
  auto w = start_worker(sys, ctx, opts);
  sched.run();
  CAF_CHECK(stopped);
  CAF_CHECK_EQUAL(why, "worker.lifetime_units reached");
  CAF_CHECK_EQUAL(outcomes.size(), 3u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(ctx->metrics->units_admitted.load(), 3);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 3u);  // two messages are left for the next node
}

CAF_TEST(after exit_after_idle_polls empty receives the node drains and stops) {
  ctx->settings.exit_after_idle_polls = 2;
  ctx->settings.heartbeat_actors = 1;
  ctx->stages = {small};
  bool stopped = false;
  worker_options opts;
  opts.sweeper = false;
  opts.on_stopped = [&] { stopped = true; };
  auto w = start_worker(sys, ctx, opts);
  sched.run();
  queue->end_waits();
  sched.run();
  CAF_CHECK(!stopped);  // one empty receive
  queue->end_waits();
  sched.run();
  queue->end_waits();  // the receive already in progress when the drain began
  sched.run();
  CAF_CHECK(stopped);
  CAF_CHECK(ctx->metrics->idle_polls.load() >= 2);
}

CAF_TEST_FIXTURE_SCOPE_END()
