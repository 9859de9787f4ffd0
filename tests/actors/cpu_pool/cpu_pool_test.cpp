// The CPU pool's master on the deterministic scheduler, its workers on the same scheduler: work
// goes to idle workers, waits while they are busy, expires, is refused when the backlog is full,
// and is answered when the pool stops; its backlog and its items' run time reach the node's
// admission.
#define CAF_SUITE cpu_pool
#include "caf/test/dsl.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "caf/test/dsl.hpp"

#include "actors/cpu_pool.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

using clock = std::chrono::steady_clock;

struct cpu_pool_fixture : test_coordinator_fixture<> {
  std::shared_ptr<node_admission> admission
      = std::make_shared<node_admission>(node_admission::limits{});
  /// Names of the items in the order they ran or expired.
  std::vector<std::string> ran;
  std::vector<std::string> expired;
  cpu_pool_actor pool;
  std::shared_ptr<cpu_executor> executor;
  size_t actors_before = sys.registry().running();

  ~cpu_pool_fixture() override {
    if (pool)
      caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
    sched.run();
  }

  /// Spawns the pool and lets its workers report idle.
  void start(int workers, int backlog) {
    pool = spawn_cpu_pool(sys, workers, backlog, admission, cpu_workers::scheduled);
    executor = make_cpu_executor(pool);
    sched.run();
  }

  void submit(const std::string& name, clock::time_point deadline = clock::now() + 1h,
              bool continues = false) {
    executor->submit(cpu_job{[this, name] { ran.push_back(name); },
                             [this, name] { expired.push_back(name); }, deadline, continues});
  }

  /// Runs the master's messages only: what it handed to a worker stays in that worker's
  /// mailbox, so every worker that got an item stays busy.
  void run_master() {
    auto* master = dynamic_cast<caf::resumable*>(caf::actor_cast<caf::abstract_actor*>(pool));
    sched.run_jobs_filtered([master](caf::resumable* job) { return job == master; });
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(cpu_pool_tests, cpu_pool_fixture)

CAF_TEST(work goes to idle workers without waiting in the backlog) {
  start(2, 4);
  submit("a");
  submit("b");
  run_master();
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 0);
  CAF_CHECK(ran.empty()); // handed to the workers, not run by the master
  sched.run();
  CAF_CHECK_EQUAL(ran, (std::vector<std::string>{"a", "b"}));
  CAF_CHECK(expired.empty());
}

CAF_TEST(work waits in the backlog while every worker is busy and runs in order) {
  start(1, 4);
  submit("a");
  submit("b");
  submit("c");
  run_master();
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 2);
  CAF_CHECK(ran.empty());
  sched.run();
  CAF_CHECK_EQUAL(ran, (std::vector<std::string>{"a", "b", "c"}));
  CAF_CHECK(expired.empty());
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 0);
}

CAF_TEST(work that continues a started document waits ahead of new work) {
  // Pages of an opened document run before the next documents open, so a started document
  // finishes within its deadline instead of queueing behind everything admitted after it.
  start(1, 8);
  submit("busy");
  submit("open-b");
  submit("open-c");
  submit("page-a1", clock::now() + 1h, true);
  submit("page-a2", clock::now() + 1h, true);
  run_master();
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 4);
  sched.run();
  CAF_CHECK_EQUAL(ran,
                  (std::vector<std::string>{"busy", "page-a1", "page-a2", "open-b", "open-c"}));
}

CAF_TEST(an item that throws costs only itself and the worker takes the next) {
  start(1, 4);
  executor->submit(cpu_job{[] { throw std::runtime_error("a bug in a work item"); },
                           [this] { expired.push_back("thrower"); }, clock::now() + 1h, false});
  submit("after");
  sched.run();
  CAF_CHECK_EQUAL(ran, (std::vector<std::string>{"after"}));
  CAF_CHECK(expired.empty());
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 0);
}

CAF_TEST(a worker measures how long items run) {
  start(1, 4);
  submit("a");
  sched.run();
  CAF_CHECK(admission->cpu_item_us() > 0);
}

CAF_TEST(work whose deadline passes before a worker is free expires instead of running) {
  start(1, 4);
  submit("a");
  submit("late", clock::now() - 1ms);
  submit("b");
  run_master();
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 2);
  sched.run();
  CAF_CHECK_EQUAL(ran, (std::vector<std::string>{"a", "b"}));
  CAF_CHECK_EQUAL(expired, std::vector<std::string>{"late"});
}

CAF_TEST(a worker checks the deadline once more before it starts) {
  start(1, 4);
  submit("late", clock::now() - 1ms); // a worker is idle: the master hands it over at once
  run_master();
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 0);
  sched.run();
  CAF_CHECK(ran.empty());
  CAF_CHECK_EQUAL(expired, std::vector<std::string>{"late"});
}

CAF_TEST(a full backlog refuses work at once) {
  start(1, 1);
  submit("a"); // to the worker
  submit("b"); // the backlog
  submit("c"); // refused
  run_master();
  CAF_CHECK_EQUAL(expired, std::vector<std::string>{"c"});
  CAF_CHECK(ran.empty());
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 1);
  sched.run();
  CAF_CHECK_EQUAL(ran, (std::vector<std::string>{"a", "b"}));
  CAF_CHECK_EQUAL(expired, std::vector<std::string>{"c"});
}

CAF_TEST(a stopped pool answers what waits in its backlog and its workers stop with it) {
  start(2, 4);
  CAF_CHECK_EQUAL(sys.registry().running(), actors_before + 3);
  submit("a");
  sched.run();
  submit("b");
  submit("c");
  submit("d");
  submit("e");
  run_master(); // b and c to the workers, d and e in the backlog
  CAF_CHECK_EQUAL(admission->cpu_backlog(), 2);
  sched.run(); // the workers finish b and c and take d and e
  submit("f");
  submit("g");
  submit("h");
  run_master(); // f and g to the workers, h waits
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  sched.run();
  CAF_CHECK_EQUAL(ran.size() + expired.size(), 8u); // every item answered, once
  CAF_CHECK_EQUAL(expired, std::vector<std::string>{"h"});
  CAF_CHECK_EQUAL(sys.registry().running(), actors_before);
}

CAF_TEST_FIXTURE_SCOPE_END()
