// The poller's admission (the stage's and the node's limits, the CPU pool's backlog, the database
// as its jobs found it) and its error back-off, on the deterministic scheduler.
#define CAF_SUITE poller
#include "caf/test/dsl.hpp"

#include "tests/actors/support/poller_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

CAF_TEST_FIXTURE_SCOPE(poller_tests, test::poller_fixture)

CAF_TEST(the poller never runs more jobs than max_in_flight and resumes as jobs end) {
  ctx->settings.max_in_flight = 3;
  ocr->hold("transcribe");
  add_documents(5);
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 3);
  auto sizes = queue->receive_sizes();
  CAF_REQUIRE_EQUAL(sizes.size(), 1u); // full after the first receive: no second one
  CAF_CHECK_EQUAL(sizes[0], 3);
  ocr->unhold("transcribe"); // the three jobs finish, and new OCR calls are not held
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 5u);
  for (auto& o : outcomes)
    CAF_CHECK_EQUAL(o.result, job_result::completed);
  for (auto n : queue->receive_sizes())
    CAF_CHECK(n >= 1 && n <= 3);
  check_no_violations();
}

CAF_TEST(a stage s own limit caps its jobs below the node s) {
  ctx->settings.max_in_flight = 10;
  ingest.max_in_flight = 2;
  ocr->hold("transcribe");
  add_documents(4);
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 2);
  CAF_CHECK_EQUAL(queue->receive_sizes(), std::vector<int>{2});
  ocr->unhold("transcribe");
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 4u);
  for (auto n : queue->receive_sizes())
    CAF_CHECK(n >= 1 && n <= 2);
}

CAF_TEST(the node s limit counts the jobs of every stage) {
  ctx->settings.max_in_flight = 2;
  ocr->hold("transcribe");
  add_documents(4);
  // Another stage's jobs fill the node: this one receives nothing, and looks again in a second.
  configure_admission();
  ctx->admission->job_started();
  ctx->admission->job_started();
  auto p = poller();
  sched.run();
  CAF_CHECK(queue->receive_sizes().empty());
  ctx->admission->job_ended();
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes(), std::vector<int>{1});
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 2);
  ctx->admission->job_ended();
  ocr->unhold("transcribe");
  for (int i = 0; i < 5 && outcomes.size() < 4u; ++i) {
    advance_time(1s);
    sched.run();
  }
  CAF_CHECK_EQUAL(outcomes.size(), 4u);
}

// A poller hears of a job's end through its monitor, and looks at the node's room then: the job
// must be out of the node's count by that time, or a full node waits a second (CAF runs what is
// attached to an actor, monitors first, when it exits; a count taken back by an attachment of
// its own came after them, and a poller on another thread could see the node still full).
CAF_TEST(a job is out of the node s count before anything attached to it hears of its end) {
  configure_admission();
  add_documents(1);
  auto job = spawn_job(sys, ctx, ingest_stage(), hb, receive(*queue));
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 1);
  auto seen_at_exit = in_flight_at_exit(job);
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(*seen_at_exit, 0);
  CAF_CHECK_EQUAL(ctx->admission->in_flight(), 0);
}

CAF_TEST(a receive asks for at most ten messages) {
  ctx->settings.max_in_flight = 1000;
  add_documents(25);
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 25u);
  for (auto n : queue->receive_sizes())
    CAF_CHECK_EQUAL(n, 10);
}

CAF_TEST(the poller admits no work while the CPU pool cannot finish its backlog in time) {
  // 40 items of 10 s on 2 workers: 200 s of backlog, more than half the 300 s OCR deadline.
  ctx->settings.cpu_workers = 2;
  ctx->settings.cpu_deadline = 300s;
  ctx->admission->cpu_item_ran(10s);
  ctx->admission->cpu_backlog_is(40);
  add_documents(2);
  auto p = poller();
  sched.run();
  CAF_CHECK(queue->receive_sizes().empty());
  CAF_CHECK_EQUAL(ctx->metrics->cpu_admission_waits.load(), 1);
  advance_time(1s);
  sched.run();
  CAF_CHECK(queue->receive_sizes().empty()); // still saturated: looked again, received nothing
  ctx->admission->cpu_backlog_is(20);        // 100 s: within half the deadline
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 2u);
}

CAF_TEST(a receive that never answers is given up after its long poll and a margin) {
  ctx->settings.wait_time = 20s;
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 1u); // a long poll on an empty queue
  advance_time(49s);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 1u);
  advance_time(2s); // 20 s + 30 s: failed, then the error back-off (at most 0.75 s)
  sched.run();
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 2u);
  CAF_CHECK_EQUAL(ctx->metrics->queue_receive_errors.load(), 1);
}

CAF_TEST(receive errors back off instead of spinning) {
  queue->fail_next("receive", error::make_transient("pg.connection", "connection refused"));
  queue->fail_next("receive", error::make_transient("pg.connection", "connection refused"));
  auto p = poller();
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 1u); // waiting for the backoff timer
  CAF_CHECK_EQUAL(ctx->metrics->queue_receive_errors.load(), 1);
  advance_time(1s);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 2u);
  advance_time(2s);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 3u); // recovered: a long poll is waiting now
  CAF_CHECK_EQUAL(queue->pending_receives(), 1u);
  add_documents(1);
  queue->deliver_pending();
  sched.run();
  CAF_CHECK_EQUAL(outcomes.size(), 1u);
}

CAF_TEST(after jobs the database did not answer the poller rests then takes one message at a time) {
  // A node whose database does not answer (its connections reconnecting after a restart) must
  // not take work it will only give back, nor spend its messages' receives.
  add_documents(3);
  auto p = poller();
  ctx->admission->database_failed(); // a job of the node gave its work back
  db->fail_next("load", error::make_transient(std::string{errc::pg_connection}, "connection lost"));
  sched.run();
  CAF_CHECK(queue->receive_sizes().empty()); // resting 0.5 s
  advance_time(500ms);
  sched.run();
  // One message; its job is given back too: the next rest is twice as long.
  CAF_CHECK_EQUAL(queue->receive_sizes(), std::vector<int>{1});
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes[0].result, job_result::released);
  advance_time(500ms);
  sched.run();
  CAF_CHECK_EQUAL(queue->receive_sizes().size(), 1u);
  advance_time(500ms);
  sched.run();
  // The next one reaches the database: the poller takes work as usual again.
  auto sizes = queue->receive_sizes();
  CAF_REQUIRE(sizes.size() >= 3u);
  CAF_CHECK_EQUAL(sizes[1], 1);
  CAF_CHECK_EQUAL(sizes[2], 10);
  CAF_CHECK_EQUAL(ctx->admission->database_failures(), 0);
  CAF_REQUIRE_EQUAL(outcomes.size(), 4u);
  for (size_t i = 1; i < outcomes.size(); ++i)
    CAF_CHECK_EQUAL(outcomes[i].result, job_result::completed);
  check_no_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
