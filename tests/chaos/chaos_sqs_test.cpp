// Chaos on SQS: three `ingestd run` nodes on one queue of the fauxqs emulator while documents keep
// arriving, and faults on a random (seeded, printed) schedule: kill -9 and restart, SIGSTOP longer
// than the lease then SIGCONT. A stopped node's messages reappear when their visibility (the lease
// plus a small padding) runs out, and another node takes the claim over. Afterwards every document
// is completed exactly once with the right result and matched once, and nothing is left in
// progress or in the queues (visible or in flight). "Exactly once" is counted by triggers this
// test installs, not by ingestd's own audit trail. The database faults stay with the Postgres
// variant (chaos_test.cpp).
//
//   INGESTD_CHAOS_SECONDS   how long faults are injected (default 30: the CTest entry)
//   INGESTD_CHAOS_SEED      the schedule's seed (default: random; printed either way)
#include <algorithm>
#include <csignal>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/chaos/chaos_support.hpp"
#include "tests/support/daemon/e2e_setup.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"
#include "tests/support/postgres/await.hpp"

using namespace std::chrono_literals;
using namespace ingestd;
using namespace ingestd::test;

namespace {

using clock_type = std::chrono::steady_clock;

/// The lease the nodes run with.
constexpr auto lease = chaos_lease;

class chaos_sqs_test : public fauxqs_test {
protected:
  void SetUp() override {
    fauxqs_test::SetUp();
    if (HasFatalFailure())
      return;
    s_ = std::make_unique<e2e_setup>();
    q_ = make_queue({}, &url_);
    match_q_ = make_queue({}, &match_url_);
    make_queue({}, &unpack_url_);
  }

  void TearDown() override {
    for (auto& n : nodes_)
      if (n.proc && n.proc->running()) {
        n.proc->signal(SIGCONT);
        n.proc->signal(SIGKILL);
        (void)n.proc->wait_exit(30s);
      }
    fauxqs_test::TearDown();
  }

  void start_nodes(int n) {
    for (int i = 0; i < n; ++i) {
      nodes_.push_back(chaos_node{"chaos-sqs-" + std::to_string(i + 1), nullptr, std::nullopt});
      start(nodes_.back());
    }
  }

  // Faults hit documents again and again by design: the poison bound is set out of reach (it
  // has tests of its own).
  void start(chaos_node& n) {
    n.proc = s_->start({{"INGESTD_WORKER__ID", n.id},
                        {"INGESTD_WORKER__MAX_RETRY_ATTEMPTS", "100"},
                        {"INGESTD_QUEUE__BACKEND", "sqs"},
                        {"INGESTD_QUEUE__URL", url_},
                        {"INGESTD_MATCHING__QUEUE_URL", match_url_},
                        {"INGESTD_CONTAINERS__QUEUE_URL", unpack_url_},
                        {"INGESTD_AWS__ENDPOINT", endpoint_},
                        {"INGESTD_AWS__REGION", "us-east-1"}});
  }

  /// Documents arriving during the run: a few text PDFs, sent to the SQS queue.
  void arrive() {
    auto ids = s_->add_documents(pick(2, 5), doc_kind::text_pdf);
    std::vector<outgoing_message> batch;
    batch.reserve(ids.size());
    for (auto& id : ids)
      batch.push_back(outgoing_message{id});
    auto r = await<std::vector<batch_entry_result>>([&](auto cb) { q_->send(batch, cb); });
    ASSERT_TRUE(r) << r.error().describe();
    for (auto& e : *r)
      ASSERT_FALSE(e.failed) << e.error.describe();
    total_ += static_cast<int64_t>(ids.size());
  }

  void fault() {
    if (pick(0, 1) == 0)
      kill_and_restart();
    else
      stop_past_the_lease();
  }

  /// Waits `d`, resuming nodes whose stop has lasted long enough.
  void wait(std::chrono::milliseconds d) {
    auto until = clock_type::now() + d;
    while (clock_type::now() < until) {
      for (auto& n : nodes_)
        if (n.resume_at && clock_type::now() >= *n.resume_at) {
          n.proc->signal(SIGCONT);
          n.resume_at.reset();
          log("SIGCONT " + n.id);
        }
      std::this_thread::sleep_for(100ms);
    }
  }

  /// Ends every fault: stopped nodes resumed, dead ones started again.
  void heal() {
    while (
        std::any_of(nodes_.begin(), nodes_.end(), [](const chaos_node& n) { return n.resume_at; }))
      wait(200ms);
    for (auto& n : nodes_)
      if (!n.proc->running()) {
        log("start " + n.id + " again (it had exited)");
        start(n);
      }
  }

  bool queue_empty() { return queue_empty(*q_); }

  bool queue_empty(sqs_queue& q) {
    auto st = await<queue_stats>([&](auto cb) { q.stats(cb); });
    return st && st->visible == 0 && st->in_flight == 0 && st->delayed == 0;
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(rng_); }

  void log(const std::string& what) {
    journal_ += what + "\n";
    std::printf("chaos: %s\n", what.c_str());
    std::fflush(stdout);
  }

  chaos_node* running_node() {
    std::vector<chaos_node*> up;
    for (auto& n : nodes_)
      if (!n.resume_at && n.proc->running())
        up.push_back(&n);
    if (up.empty())
      return nullptr;
    return up[static_cast<size_t>(pick(0, static_cast<int>(up.size()) - 1))];
  }

  void kill_and_restart() {
    auto* n = running_node();
    if (n == nullptr)
      return;
    log("kill -9 " + n->id);
    n->proc->signal(SIGKILL);
    ASSERT_TRUE(n->proc->wait_exit(30s).has_value());
    wait(std::chrono::milliseconds{pick(200, 2000)});
    log("start " + n->id + " again");
    start(*n);
  }

  void stop_past_the_lease() {
    auto* n = running_node();
    if (n == nullptr)
      return;
    log("SIGSTOP " + n->id + " for the lease + 3 s");
    n->proc->signal(SIGSTOP);
    n->resume_at = clock_type::now() + lease + 3s;
  }

  std::unique_ptr<e2e_setup> s_;
  std::unique_ptr<sqs_queue> q_;
  std::unique_ptr<sqs_queue> match_q_;
  std::string url_;
  std::string match_url_;
  std::string unpack_url_;
  std::mt19937 rng_;
  std::vector<chaos_node> nodes_;
  int64_t total_ = 0;
  std::string journal_;
};

} // namespace

TEST_F(chaos_sqs_test, three_nodes_under_kills_and_stops_complete_every_document_exactly_once) {
  auto seconds = std::stoi(env_or("INGESTD_CHAOS_SECONDS", "30"));
  auto seed_text = env_or("INGESTD_CHAOS_SEED", "");
  auto seed
      = seed_text.empty() ? std::random_device{}() : static_cast<uint32_t>(std::stoul(seed_text));
  std::printf(
      "chaos: seed %u (INGESTD_CHAOS_SEED=%u repeats this schedule), %d s of faults on SQS\n", seed,
      seed, seconds);
  RecordProperty("seed", std::to_string(seed));
  rng_.seed(seed);

  auto& s = *s_;
  install_accounting(s);

  arrive();
  start_nodes(3);
  auto end = clock_type::now() + std::chrono::seconds{seconds};
  int faults = 0;
  while (clock_type::now() < end && !HasFatalFailure()) {
    wait(std::chrono::milliseconds{pick(1500, 4000)});
    arrive();
    fault();
    ++faults;
  }
  ASSERT_FALSE(HasFatalFailure()) << journal_;
  heal();

  // Everything finishes once the faults stop: within the visibility of a stopped or killed
  // node's messages plus the time to work off what is left.
  auto n = total_;
  auto done = wait_until([&] { return s.with_status("completed") >= n; }, lease + 240s, 500ms);
  ASSERT_TRUE(done) << s.with_status("completed") << " of " << n << " completed\n"
                    << journal_ << s.logs();
  ASSERT_TRUE(wait_until([&] { return queue_empty(); }, 60s, 500ms))
      << "messages left in the queue\n"
      << journal_ << s.logs();
  // Every completion handed the document's matching to the match stage through the outbox: it
  // ends too, and the match queue empties.
  ASSERT_TRUE(wait_until([&] { return matching_ended(s) >= n; }, lease + 240s, 500ms))
      << matching_ended(s) << " of " << n << " matchings ended\n"
      << journal_ << s.logs();
  ASSERT_TRUE(wait_until([&] { return queue_empty(*match_q_); }, 60s, 500ms))
      << "messages left in the match queue\n"
      << journal_ << s.logs();
  stop_all(nodes_);

  std::printf("chaos: %lld documents, %d faults\n", static_cast<long long>(n), faults);
  expect_exactly_once(s, n, journal_);
  expect_matching_once(s, n, journal_);
}
