// The unpack stage's job on the deterministic scheduler with the port fakes: a container's
// members become child documents whose ingestions, work items and messages are written with the
// container's completion (the fake container repository over the claimed-work table); the
// unpacking and the sorting of the members run on the CPU pool; limits and lost claims leave
// nothing of the container behind; the node's memory budget makes a container wait (never fail)
// for room; a cancel stops a running unpack (its decoder call, its wait for memory) and no child
// is added after it.
#define CAF_SUITE unpack_job
#include "caf/test/dsl.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "adapters/sandbox/decoder.hpp"

#include "stages/unpack/unpack_stage.hpp"
#include "tests/actors/support/actor_fixture.hpp"
#include "tests/support/containers/archive_maker.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// A CPU pool the test drives: what is submitted waits until the test runs or expires it; or,
/// with `immediately`, runs at once on the caller's thread.
struct driven_cpu final : cpu_executor {
  bool immediately = true;
  std::vector<cpu_job> jobs;
  /// The decoder helpers its jobs use (null: in process).
  std::shared_ptr<sandbox::decoder> helpers;
  std::shared_ptr<sandbox::decoder> decoder() const override { return helpers; }
  void submit(cpu_job job) override {
    if (immediately)
      return job.run();
    jobs.push_back(std::move(job));
  }
  cpu_job next() {
    auto job = std::move(jobs.front());
    jobs.erase(jobs.begin());
    return job;
  }
};

const std::string unpack_queue_name = "ingestd-unpack";

/// A decoder helper that works until its call is stopped (or a deadline far beyond the test):
/// it reports that it runs, then that it saw the stop, and answers only when the test lets it
/// (so that the answer is sent while the test thread does not run the scheduler).
struct stoppable_decoder final : sandbox::decoder {
  std::mutex mtx;
  std::condition_variable_any cv;
  bool running = false;
  bool stopped = false;
  bool answer = false;

  using sandbox::decoder::call;
  result<std::string> call(const sandbox::request_view&, sandbox::clock_type::time_point,
                           std::stop_token stop) override {
    std::unique_lock<std::mutex> lock{mtx};
    running = true;
    cv.notify_all();
    auto limit = std::chrono::steady_clock::now() + 30s;
    stopped = cv.wait_until(lock, stop, limit, [&] { return stop.stop_requested(); });
    cv.notify_all();
    cv.wait_until(lock, limit, [&] { return answer; });
    if (!stopped)
      return error::make_permanent("test.not_stopped", "the call was never stopped");
    return error::make_transient(std::string{errc::decode_cancelled}, "stopped");
  }

  /// Waits (30 s at most) until `what` holds.
  bool wait_for(bool stoppable_decoder::*what) {
    std::unique_lock<std::mutex> lock{mtx};
    return cv.wait_for(lock, 30s, [&] { return this->*what; });
  }

  void let_answer() {
    std::lock_guard<std::mutex> guard{mtx};
    answer = true;
    cv.notify_all();
  }
};

struct unpack_job_fixture : test::actor_fixture {
  std::shared_ptr<test::fake_queue> unpack_queue = std::make_shared<test::fake_queue>();
  std::shared_ptr<test::fake_container_repository> containers
      = std::make_shared<test::fake_container_repository>(work);
  driven_cpu cpu;
  std::shared_ptr<unpack_ports> uports = std::make_shared<unpack_ports>();
  unpack_settings usettings;
  heartbeat_actor hb = heartbeat();

  unpack_job_fixture() {
    uports->db = containers;
    uports->storage = store;
    uports->unpacker = std::make_shared<container_unpacker>(cpu, unpack_limits{}, 300s);
    usettings.queue = unpack_queue;
    usettings.queue_name = unpack_queue_name;
    usettings.ingest_queue = test::ingest_queue_name;
  }

  std::shared_ptr<const stage> unpack_stage() { return make_unpack_stage(uports, usettings); }

  /// A container stored and its ingestion with its work item; returns the ingestion's id.
  uuid add_container(const std::string& bytes, int32_t depth = 0,
                     const std::string& mime = "application/zip") {
    auto key = "documents/c" + std::to_string(next++) + ".zip";
    store->set(key, bytes);
    return containers->add(key, mime, depth);
  }

  queue_message deliver_unpack(const uuid& id) {
    unpack_queue->push(id.str());
    return receive(*unpack_queue);
  }

  job_outcome run_unpack(const uuid& id) { return run_job(unpack_stage(), deliver_unpack(id), hb); }

  /// A zip with two documents, a nested zip of one, and a member no stage reads.
  static std::string sample() {
    return test::make_archive(
        "zip", {{"a.pdf", test::pdf_bytes("one")},
                {"b.pdf", test::pdf_bytes("two")},
                {"inner.zip", test::make_archive("zip", {{"c.pdf", test::pdf_bytes("three")}})},
                {"notes.txt", "not a document"}});
  }

  void check_unpack_violations() {
    check_no_violations();
    for (auto& v : containers->violations())
      CAF_FAIL("container repository: " << v);
    for (auto& v : unpack_queue->violations())
      CAF_FAIL("unpack queue: " << v);
  }

  int next = 0;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(unpack_job_tests, unpack_job_fixture)

CAF_TEST(a container s members become children written with its completion) {
  auto id = add_container(sample());
  auto o = run_unpack(id);
  CAF_CHECK_EQUAL(o.result, job_result::completed);
  CAF_CHECK_EQUAL(o.stage, "unpack");
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "completed");
  CAF_CHECK_EQUAL(unpack_queue->deleted_ids().size(), 1u);
  auto parent = containers->container(id);
  CAF_CHECK_EQUAL(parent.completions, 1);
  CAF_REQUIRE_EQUAL(parent.children.size(), 3u);
  std::set<std::string> names;
  for (auto& child : parent.children) {
    names.insert(child.member_name);
    // Each child's bytes are stored before the completion, and its work item and message are
    // written with it: documents to the ingest stage, containers to this one.
    CAF_CHECK(store->object(child.file_path).has_value());
    auto w = work->item(child.ingestion_id);
    CAF_CHECK_EQUAL(w.stage, child.stage);
    CAF_CHECK_EQUAL(w.document_id, child.document_id);
    CAF_CHECK_EQUAL(w.tenant_id, parent.tenant_id);
    CAF_CHECK_EQUAL(w.status, "in-progress");
    CAF_CHECK_EQUAL(child.stage, child.member_name == "inner.zip" ? "unpack" : "ingest");
  }
  CAF_CHECK(names == (std::set<std::string>{"a.pdf", "b.pdf", "inner.zip"}));
  CAF_CHECK_EQUAL(work->sent_to(test::ingest_queue_name).size(), 2u);
  CAF_CHECK_EQUAL(work->sent_to(unpack_queue_name).size(), 1u);
  // The skipped member is named in the parent's description.
  CAF_CHECK(parent.structured_data.find("notes.txt") != std::string::npos);
  CAF_CHECK(parent.unpack_error.empty());
  // The trail travels with the completion.
  for (auto step : {"claim", "load", "fetch", "unpack", "sort", "store", "complete"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  for (auto& row : work->audit_rows())
    if (row.event.item == id)
      CAF_CHECK_EQUAL(row.written_by, "complete_unpack");
  check_unpack_violations();
}

CAF_TEST(a member whose content the tenant has already is not created again) {
  auto id = add_container(test::make_archive(
      "zip", {{"a.pdf", test::pdf_bytes("one")}, {"b.pdf", test::pdf_bytes("two")}}));
  // The second container's tenant has a document with the content of a.pdf.
  CAF_CHECK_EQUAL(run_unpack(id).result, job_result::completed);
  auto first = containers->container(id);
  CAF_REQUIRE_EQUAL(first.children.size(), 2u);
  auto again = add_container(test::make_archive(
      "zip", {{"a.pdf", test::pdf_bytes("one")}, {"d.pdf", test::pdf_bytes("four")}}));
  containers->know(containers->container(again).tenant_id, first.children[0].content_hash);
  auto before = work->sent_to(test::ingest_queue_name).size();
  CAF_CHECK_EQUAL(run_unpack(again).result, job_result::completed);
  CAF_CHECK_EQUAL(work->sent_to(test::ingest_queue_name).size(), before + 1);
  CAF_CHECK_EQUAL(events_with(again, "complete"), 1u);
  check_unpack_violations();
}

CAF_TEST(the unpacking and the sorting of the members run on the CPU pool) {
  cpu.immediately = false;
  ctx->cpu = std::shared_ptr<cpu_executor>(&cpu, [](cpu_executor*) {});
  auto id = add_container(sample());
  spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(id));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu.jobs.size(), 1u); // the unpacking waits for a worker
  for (int i = 0; i < 4; ++i) {           // and its step deadline waits with it
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  cpu.next().run();
  sched.run();
  CAF_REQUIRE_EQUAL(cpu.jobs.size(), 1u); // the sorting: detection and hashing
  CAF_CHECK_EQUAL(store->puts(), 0);
  cpu.next().run();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK_EQUAL(containers->container(id).children.size(), 3u);
  ctx->cpu.reset();
}

CAF_TEST(
    an unpacking that got no CPU worker in time gives the work back without counting an attempt) {
  cpu.immediately = false;
  auto id = add_container(sample());
  spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(id));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu.jobs.size(), 1u);
  cpu.next().expired();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::released);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.attempt_count, 0);
  CAF_CHECK(!item.token.has_value());
  auto calls = unpack_queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  CAF_CHECK(work->sent().empty());
  check_unpack_violations();
}

CAF_TEST(a container nested too deep fails whole and leaves nothing of it) {
  usettings.max_depth = 2;
  // Submitted inside another container (depth 1): its nested zip would be at depth 3.
  auto id = add_container(sample(), 1);
  auto o = run_unpack(id);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "failed");
  CAF_CHECK_EQUAL(item.error_class, "permanent");
  CAF_CHECK(item.last_error.find("container.too_deep") != std::string::npos);
  CAF_CHECK_EQUAL(store->puts(), 0);
  CAF_CHECK(work->sent().empty());
  CAF_CHECK_EQUAL(containers->container(id).completions, 0);
  CAF_CHECK_EQUAL(unpack_queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_FAILED"), 1u);
  // The trail travels with the failure.
  for (auto& row : work->audit_rows())
    if (row.event.item == id)
      CAF_CHECK_EQUAL(row.written_by, "record_failure");
  check_unpack_violations();
}

CAF_TEST(a file that is no container fails at once) {
  auto id = add_container("just some text", 0, "application/octet-stream");
  auto o = run_unpack(id);
  CAF_CHECK_EQUAL(o.result, job_result::failed);
  CAF_CHECK(work->item(id).last_error.find("container.unsupported") != std::string::npos);
  CAF_CHECK(work->sent().empty());
}

CAF_TEST(a claim lost before the completion stops the job and creates no child) {
  auto id = add_container(sample());
  store->hold("put");
  spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(id));
  sched.run();
  CAF_REQUIRE(store->held("put") > 0u);
  work->steal_claim(id);
  store->unhold("put");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::lost);
  CAF_CHECK(work->sent().empty());
  CAF_CHECK_EQUAL(containers->container(id).completions, 0);
  CAF_CHECK(unpack_queue->deleted_ids().empty());
  // No state change carried the trail: it is written alone, each row once.
  for (auto step : {"claim", "load", "fetch", "unpack", "sort", "store"})
    CAF_CHECK_EQUAL(events_with(id, step), 1u);
  check_unpack_violations();
}

CAF_TEST(the database lost at the completion gives the work back and creates no child) {
  auto id = add_container(sample());
  containers->fail_next("complete_unpack",
                        error::make_transient("pg.connection", "server closed the connection"));
  auto o = run_unpack(id);
  CAF_CHECK_EQUAL(o.result, job_result::released);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "in-progress");
  CAF_CHECK_EQUAL(item.attempt_count, 0);
  CAF_CHECK(work->sent().empty());
  auto calls = unpack_queue->visibility_calls();
  CAF_REQUIRE(!calls.empty());
  CAF_CHECK_EQUAL(calls.back().timeout, 0s);
  // The next delivery proposes the same children again and completes.
  CAF_CHECK_EQUAL(run_unpack(id).result, job_result::completed);
  CAF_CHECK_EQUAL(containers->container(id).children.size(), 3u);
  check_unpack_violations();
}

CAF_TEST(a container waits for the memory budget without failing and runs when it is free) {
  auto first = add_container(sample());
  auto second = add_container(sample());
  auto bound = unpack_memory_bound(unpack_limits{}, container_kind::zip, sample().size());
  // Room for one container at a time.
  uports->budget = std::make_shared<memory_budget>(bound + bound / 2);
  cpu.immediately = false;
  spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(first));
  sched.run();
  // The first holds its reservation while it waits for a CPU worker.
  CAF_REQUIRE_EQUAL(cpu.jobs.size(), 1u);
  CAF_CHECK_EQUAL(uports->budget->reserved(), bound);
  spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(second));
  sched.run();
  CAF_CHECK_EQUAL(uports->budget->waiting(), 1u);
  CAF_CHECK_EQUAL(cpu.jobs.size(), 1u);
  // Waiting for memory is no step past its deadline: far beyond it, nothing failed.
  for (int i = 0; i < 4; ++i) {
    advance_time(31s);
    sched.run();
  }
  CAF_CHECK(outcomes.empty());
  CAF_CHECK_EQUAL(events_with(second, "unpack"), 0u);
  cpu.next().run();
  sched.run();
  // The first's members are stored: its memory goes to the second, which unpacks in turn.
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes[0].result, job_result::completed);
  CAF_CHECK_EQUAL(uports->budget->waiting(), 0u);
  CAF_REQUIRE_EQUAL(cpu.jobs.size(), 1u);
  cpu.next().run();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 2u);
  CAF_CHECK_EQUAL(outcomes[1].result, job_result::completed);
  CAF_CHECK_EQUAL(containers->container(second).children.size(), 3u);
  CAF_CHECK_EQUAL(work->item(second).attempt_count, 0);
  CAF_CHECK_EQUAL(events_with(first, "reserve"), 1u);
  CAF_CHECK_EQUAL(events_with(second, "reserve"), 1u);
  // Everything given back.
  CAF_CHECK_EQUAL(uports->budget->reserved(), 0u);
  check_unpack_violations();
}

CAF_TEST(a failed container gives its memory back) {
  uports->budget = std::make_shared<memory_budget>(uint64_t{64} << 20);
  usettings.max_depth = 1; // the nested zip is too deep
  auto id = add_container(sample());
  CAF_CHECK_EQUAL(run_unpack(id).result, job_result::failed);
  CAF_CHECK_EQUAL(uports->budget->reserved(), 0u);
  check_unpack_violations();
}

CAF_TEST(a container cancelled while it waits for memory leaves the line) {
  auto first = add_container(sample());
  auto second = add_container(sample());
  auto bound = unpack_memory_bound(unpack_limits{}, container_kind::zip, sample().size());
  uports->budget = std::make_shared<memory_budget>(bound);
  cpu.immediately = false;
  spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(first));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu.jobs.size(), 1u);
  auto job = spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(second));
  sched.run();
  CAF_REQUIRE_EQUAL(uports->budget->waiting(), 1u);
  work->request_cancel(second);
  caf::anon_send(job, cancel_atom_v);
  sched.run();
  // Stopped at once, not when the memory would have come.
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::cancelled);
  CAF_CHECK_EQUAL(work->item(second).status, "cancelled");
  CAF_CHECK_EQUAL(uports->budget->waiting(), 0u);
  CAF_CHECK_EQUAL(events_with(second, "unpack"), 0u);
  cpu.next().run();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 2u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::completed);
  CAF_CHECK(cpu.jobs.empty());
  CAF_CHECK_EQUAL(containers->container(second).completions, 0);
  CAF_CHECK_EQUAL(uports->budget->reserved(), 0u);
  check_unpack_violations();
}

CAF_TEST(a cancel stops the unpacking running in a decoder helper and adds no child) {
  auto helpers = std::make_shared<stoppable_decoder>();
  cpu.helpers = helpers;
  cpu.immediately = false;
  auto id = add_container(sample());
  auto job = spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(id));
  sched.run();
  CAF_REQUIRE_EQUAL(cpu.jobs.size(), 1u);
  // The CPU worker runs the unpacking on a thread of its own, as the pool's do; the test thread
  // touches the scheduler only while that thread waits.
  std::thread worker{[run = cpu.next().run] { run(); }};
  CAF_REQUIRE(helpers->wait_for(&stoppable_decoder::running));
  sched.run(); // the worker's start notice
  work->request_cancel(id);
  caf::anon_send(job, cancel_atom_v);
  sched.run(); // the job stops its step's port call
  CAF_CHECK(helpers->wait_for(&stoppable_decoder::stopped));
  helpers->let_answer();
  worker.join();
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::cancelled);
  auto item = work->item(id);
  CAF_CHECK_EQUAL(item.status, "cancelled");
  CAF_CHECK(!item.token.has_value());
  CAF_CHECK_EQUAL(containers->container(id).completions, 0);
  CAF_CHECK(work->sent().empty());
  CAF_CHECK_EQUAL(store->puts(), 0);
  CAF_CHECK_EQUAL(unpack_queue->deleted_ids().size(), 1u);
  CAF_CHECK_EQUAL(status_events(id, "INGESTION_CANCELLED"), 1u);
  CAF_CHECK(cpu.jobs.empty()); // no sorting
  cpu.helpers.reset();
  check_unpack_violations();
}

CAF_TEST(a cancel the job has not seen yet refuses the completion and adds no child) {
  auto id = add_container(sample());
  store->hold("put");
  spawn_job(sys, ctx, unpack_stage(), hb, deliver_unpack(id));
  sched.run();
  CAF_REQUIRE(store->held("put") > 0u);
  // `ingestd cancel` writes the request; the heartbeat has not told the job before it completes.
  work->request_cancel(id);
  store->unhold("put");
  sched.run();
  CAF_REQUIRE_EQUAL(outcomes.size(), 1u);
  CAF_CHECK_EQUAL(outcomes.back().result, job_result::cancelled);
  CAF_CHECK_EQUAL(work->item(id).status, "cancelled");
  CAF_CHECK_EQUAL(containers->container(id).completions, 0);
  CAF_CHECK(work->sent().empty());
  CAF_CHECK_EQUAL(unpack_queue->deleted_ids().size(), 1u);
  for (auto& row : work->audit_rows())
    if (row.event.item == id)
      CAF_CHECK_EQUAL(row.written_by, "record_cancelled");
  check_unpack_violations();
}

CAF_TEST_FIXTURE_SCOPE_END()
