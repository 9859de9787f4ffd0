// Size classes and capacity on the deterministic scheduler: admission by weighted slots, the
// ingest stage's failure hook moving work small → large → failed (failures, timeouts), a crash
// taken over by a small claim moved by the claim itself (claim_request::crash_move), and the
// lifetime and idle drains of a node built by start_node. A move's message is written by the
// database (the fake work repository records it and the queue it goes to); no job sends it.
#define CAF_SUITE classes
#include "caf/test/dsl.hpp"

#include "actors/node.hpp"
#include "actors/poller.hpp"
#include "tests/actors/support/poller_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

const std::string large_queue_name = "ingestd-large";

struct classes_fixture : test::poller_fixture {
  std::shared_ptr<test::fake_queue> large_queue = std::make_shared<test::fake_queue>();
  std::shared_ptr<const stage> small;
  std::shared_ptr<const stage> large;

  classes_fixture() {
    work->connect(large_queue_name, large_queue);
    ingest.max_attempts = 3;
    ingest.retry_backoff = {60s};
    build();
  }

  /// The two classes' stages, from the settings as they are now.
  void build() {
    ingest_class s;
    s.name = "small";
    s.queue = queue;
    s.queue_name = test::ingest_queue_name;
    s.weight = 1;
    s.step_timeout = 30s;
    s.move_to_queue = large_queue_name;
    s.class_max_attempts = 2;
    small = make_ingest_stage(ports, ingest, s);
    ingest_class l;
    l.name = "large";
    l.queue = large_queue;
    l.queue_name = large_queue_name;
    l.weight = 5;
    l.step_timeout = 120s;
    l.class_max_attempts = 2;
    large = make_ingest_stage(ports, ingest, l);
  }

  /// An ingestion with its document stored, in `cls`, its message on that class's queue.
  uuid add_document(const std::string& cls) {
    auto key = "documents/" + cls + std::to_string(next++) + ".txt";
    auto id = db->add(key);
    work->update(id, [&](test::fake_work_item& w) { w.size_class = cls; });
    store->set(key, "text");
    last_message = (cls == "large" ? large_queue : queue)->push(id.str());
    return id;
  }

  /// Receives the next message of `q` and runs the job of `st` for it to the end.
  job_outcome run_one(const std::shared_ptr<const stage>& st, test::fake_queue& q) {
    auto got = receive(q);
    last_received = got.id;
    return run_job(st, got, hb);
  }

  int next = 0;
  /// The id of the message add_document() pushed last.
  std::string last_message;
  /// The id of the message run_one() received last.
  std::string last_received;
};

error flaky() {
  return error::make_transient("llm.unavailable", "the model is overloaded");
}

using strings = std::vector<std::string>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(classes_tests, classes_fixture)

// ---- admission by weighted slots -------------------------------------------------------------

CAF_TEST(the poller admits jobs by weighted slots and polls again when a slot is free) {
  ctx->settings.capacity_slots = 12;
  ocr->hold("transcribe");
  for (int i = 0; i < 4; ++i)
    add_document("large");
  auto p = poller(large);
  sched.run();
  // 12 slots hold two jobs of weight 5: a receive of two, and no other until one ends.
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 2);
  CAF_CHECK_EQUAL(ctx->admission->slots_in_use(), 10);
  auto sizes = large_queue->receive_sizes();
  CAF_REQUIRE_EQUAL(sizes.size(), 1u);
  CAF_CHECK_EQUAL(sizes[0], 2);
  CAF_CHECK_EQUAL(ctx->admission->usage_ratio(), 10.0 / 12.0);
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
  CAF_CHECK_EQUAL(ctx->admission->slots_in_use(), 0);
  CAF_CHECK_EQUAL(ctx->admission->peak_slots_in_use(), 10);
}

CAF_TEST(stages share the budget and max_in_flight still caps the count) {
  ctx->settings.capacity_slots = 6;
  ctx->settings.max_in_flight = 3;
  ocr->hold("transcribe");
  add_document("large");
  for (int i = 0; i < 4; ++i)
    add_document("small");
  auto pl = poller(large);
  sched.run();
  CAF_CHECK_EQUAL(ctx->admission->slots_in_use(), 5);
  auto ps = poller(small);
  sched.run();
  // One slot left: one small job beside the large one.
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 2);
  CAF_CHECK_EQUAL(ctx->admission->slots_in_use(), 6);
  ocr->unhold("transcribe");
  sched.run();
  // The large job ended: the small poller finds the free slots within a second, but never more
  // than max_in_flight jobs at once.
  ocr->hold("transcribe");
  advance_time(1s);
  sched.run();
  CAF_CHECK(ctx->admission->in_flight() <= 3);
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
  ctx->settings.capacity_slots = 4; // a large job (5) never fits
  ocr->hold("transcribe");
  add_document("small");
  add_document("large");
  auto ps = poller(small);
  sched.run();
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 1);
  auto pl = poller(large);
  sched.run();
  CAF_CHECK(large_queue->receive_sizes().empty()); // the node is not idle: no receive
  ocr->unhold("transcribe");
  sched.run();
  ocr->hold("transcribe");
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(large_queue->receive_sizes(), std::vector<int>{1});
  CAF_CHECK_EQUAL(ctx->admission->slots_in_use(), 5);
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 2u);
  queue->end_waits();
  large_queue->end_waits();
  sched.run();
}

// ---- moves to the large class -----------------------------------------------------------------

CAF_TEST(a small task that fails twice moves to the large queue) {
  auto id = add_document("small");
  extract->fail_next("extract", flaky());
  extract->fail_next("extract", flaky());
  CAF_CHECK_EQUAL(run_one(small, *queue).result, job_result::retrying);
  CAF_CHECK_EQUAL(work->item(id).size_class, "small");
  queue->expire(last_message); // the back-off over
  auto second = run_one(small, *queue);
  CAF_CHECK_EQUAL(second.result, job_result::moved);
  CAF_CHECK_EQUAL(second.stage, "ingest.small");
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "in-progress");
  CAF_CHECK_EQUAL(item.size_class, "large");
  CAF_CHECK_EQUAL(item.attempt_count, 2);
  CAF_CHECK_EQUAL(item.class_attempts_base, 2);
  CAF_CHECK(!item.token.has_value());
  // The failure's record sent the message to the large queue; the job only deleted its own.
  CAF_CHECK_EQUAL(work->sent_to(large_queue_name), strings{id.str()});
  CAF_CHECK(large_queue->sent_bodies().empty());
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  auto rows = audit_of(id, "record_failure");
  CAF_REQUIRE_EQUAL(rows.size(), 2u);
  CAF_CHECK_EQUAL(rows[0].event.outcome, "retrying");
  CAF_CHECK_EQUAL(rows[1].event.outcome, "moved");
  CAF_CHECK_EQUAL(ctx->metrics->escalations.load(), 1);
  // In the large class it starts with a clean count and completes.
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::completed);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 0u);
  check_no_violations();
}

CAF_TEST(a small task that times out moves to the large queue at once) {
  auto id = add_document("small");
  ocr->hold("transcribe");
  spawn_job(sys, ctx, small, hb, receive(*queue));
  sched.run();
  advance_time(31s); // the small class's step deadline
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::moved);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.size_class, "large");
  CAF_CHECK_EQUAL(item.attempt_count, 1);
  CAF_CHECK(item.retry_delay == std::optional<std::chrono::seconds>{0s}); // no back-off
  CAF_CHECK_EQUAL(work->sent_to(large_queue_name), strings{id.str()});
  CAF_CHECK(large_queue->sent_bodies().empty()); // not sent by the job
  ocr->unhold("transcribe");                     // the late answer is ignored
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
  check_no_violations();
}

CAF_TEST(a permanent failure in the small class fails at once without a move) {
  auto id = add_document("small");
  ocr->fail_next("transcribe", error::make_permanent("ocr.corrupt_file", "not a PDF"));
  CAF_CHECK_EQUAL(run_one(small, *queue).result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(id).status, "failed");
  CAF_CHECK_EQUAL(work->item(id).size_class, "small");
  CAF_CHECK(work->sent().empty());
}

CAF_TEST(the large class has its own longer step deadline) {
  auto id = add_document("large");
  ocr->hold("transcribe");
  spawn_job(sys, ctx, large, hb, receive(*large_queue));
  sched.run();
  advance_time(31s);
  sched.run();
  CAF_CHECK(outcomes.empty()); // past the small deadline, within the large one
  ocr->unhold("transcribe");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(outcomes.back().stage, "ingest.large");
  CAF_CHECK_EQUAL(work->item(id).status, "completed");
}

CAF_TEST(a large task that fails twice fails for review) {
  auto id = add_document("large");
  extract->fail_next("extract", flaky());
  extract->fail_next("extract", flaky());
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::retrying);
  large_queue->expire(last_message);
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::failed);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "failed");
  CAF_CHECK_EQUAL(item.attempt_count, 2);
  CAF_CHECK(item.last_error.find("llm.unavailable") != std::string::npos);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
}

CAF_TEST(a large task that times out twice fails for review) {
  auto id = add_document("large");
  ocr->hold("transcribe");
  for (auto expected : {job_result::retrying, job_result::failed}) {
    auto got = receive(*large_queue);
    auto before = outcomes.size();
    spawn_job(sys, ctx, large, hb, got);
    sched.run();
    advance_time(121s); // the large class's step deadline
    sched.run();
    CAF_REQUIRE_EQUAL(outcomes.size(), before + 1);
    CAF_CHECK_EQUAL(outcomes.back().result, expected);
    large_queue->expire(got.id);
  }
  CAF_CHECK_EQUAL(work->item(id).status, "failed");
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 2);
  CAF_CHECK(work->sent().empty());
}

CAF_TEST(a task moved after two small failures fails after two large ones) {
  auto id = add_document("small");
  for (int i = 0; i < 4; ++i)
    extract->fail_next("extract", flaky());
  CAF_CHECK_EQUAL(run_one(small, *queue).result, job_result::retrying);
  queue->expire(last_message);
  CAF_CHECK_EQUAL(run_one(small, *queue).result, job_result::moved);
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::retrying);
  large_queue->expire(last_received);
  CAF_CHECK_EQUAL(run_one(large, *large_queue).result, job_result::failed);
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 4);
  CAF_CHECK_EQUAL(work->item(id).status, "failed");
  check_no_violations();
}

CAF_TEST(
    a delivery after a crash is moved to the large class by the claim and keeps the crash count) {
  ingest.max_attempts = 3; // the poison bound (worker.max_retry_attempts)
  build();
  auto id = add_document("small");
  // The first holder claims it and dies (no outcome, no give-back).
  ocr->hold("transcribe");
  auto first = spawn_job(sys, ctx, small, hb, receive(*queue));
  sched.run();
  caf::anon_send_exit(first, caf::exit_reason::kill);
  sched.run();
  work->crash_holder(id);
  // Its message reappears on the small queue: the small class's claim takes the crash over and
  // moves the item to the large class, its message written to the large queue in the same
  // statement; the job deletes the small message.
  queue->expire(last_message);
  ocr->unhold("transcribe");
  auto handed = run_one(small, *queue);
  CAF_CHECK_EQUAL(handed.result, job_result::moved);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.size_class, "large");
  CAF_CHECK_EQUAL(item.attempt_count, 1); // the crash counted
  CAF_CHECK_EQUAL(item.class_attempts_base, 1);
  CAF_CHECK(!item.token); // the move cleared the claim
  CAF_CHECK_EQUAL(work->sent_to(large_queue_name), strings{id.str()});
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 1u);
  auto rows = audit_of(id, "claim");
  CAF_REQUIRE(!rows.empty());
  CAF_CHECK_EQUAL(rows.back().event.outcome, "moved");
  CAF_CHECK_EQUAL(rows.back().written_by, "claim");
  // It crashes the large worker too, twice: the poison bound still ends it at three.
  for (int crash = 0; crash < 2; ++crash) {
    ocr->hold("transcribe");
    auto m = receive(*large_queue);
    auto job = spawn_job(sys, ctx, large, hb, m);
    sched.run();
    caf::anon_send_exit(job, caf::exit_reason::kill);
    sched.run();
    if (work->item(id).token)
      work->crash_holder(id);
    large_queue->expire(m.id);
    ocr->unhold("transcribe");
  }
  auto last = run_one(large, *large_queue);
  CAF_CHECK_EQUAL(work->item(id).status, "failed");
  CAF_CHECK_EQUAL(work->item(id).error_class, "poison");
  CAF_CHECK_EQUAL(work->item(id).attempt_count, 3);
  CAF_CHECK_EQUAL(last.result, job_result::skipped);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
  check_no_violations();
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
  node_options opts;
  opts.sweeper = false;
  opts.on_stopped = [&] { stopped = true; };
  std::string why;
  opts.on_self_drain = [&](const std::string& w) { why = w; };
  auto n = start_node(sys, ctx, opts);
  sched.run();
  CAF_CHECK(stopped);
  CAF_CHECK_EQUAL(why, "worker.lifetime_units reached");
  CAF_CHECK_EQUAL(outcomes.size(), 3u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(ctx->admission->units_admitted(), 3);
  CAF_CHECK_EQUAL(queue->deleted_ids().size(), 3u); // two messages are left for the next node
}

CAF_TEST(after exit_after_idle_polls empty receives the node drains and stops) {
  ctx->settings.exit_after_idle_polls = 2;
  ctx->settings.heartbeat_actors = 1;
  ctx->stages = {small};
  bool stopped = false;
  node_options opts;
  opts.sweeper = false;
  opts.on_stopped = [&] { stopped = true; };
  auto n = start_node(sys, ctx, opts);
  sched.run();
  queue->end_waits();
  sched.run();
  CAF_CHECK(!stopped); // one empty receive
  queue->end_waits();
  sched.run();
  queue->end_waits(); // the receive already in progress when the drain began
  sched.run();
  CAF_CHECK(stopped);
  CAF_CHECK(ctx->admission->idle_receives() >= 2);
}

CAF_TEST_FIXTURE_SCOPE_END()
