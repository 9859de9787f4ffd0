// The CPU pool: a master actor with a bounded backlog and detached worker actors. The workers run
// the items; an item that parses or renders a document sends it to a decoder helper process
// (the executor's decoder(), adapters/sandbox) and waits for the answer on the worker's thread.
//
//   run ──► an idle worker? ──yes──► send it the item
//                └─no──► backlog full? ──yes──► item.expired() ──no──► queue it (work that
//                        continues a started document ahead of new work, each in arrival order)
//   idle (a worker finished) ──► next item whose deadline has not passed (expired() for the
//                                others) ──► that worker; none ──► remember the worker as idle
// A worker checks the deadline once more before it starts. The workers are linked to the master:
// when the master stops, they stop.
#include "actors/cpu_pool.hpp"

#include <deque>
#include <exception>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

using clock = std::chrono::steady_clock;

caf::behavior cpu_worker(caf::event_based_actor* self, const caf::actor& master,
                         const std::shared_ptr<node_admission>& admission) {
  self->send(master, idle_atom_v, caf::actor{self});
  return {
      [self, master, admission](run_atom, cpu_job& job) {
        auto start = clock::now();
        if (start > job.deadline) {
          if (job.expired)
            job.expired();
        } else {
          // An item answers its own errors; one that throws all the same costs only itself,
          // never the pool a worker (its caller's deadline answers it).
          try {
            job.run();
          } catch (const std::exception& e) {
            log::error("a CPU work item failed with an exception", {{"error", e.what()}});
          } catch (...) {
            log::error("a CPU work item failed with an exception", {{"error", "unknown"}});
          }
          admission->cpu_item_ran(
              std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start));
        }
        self->send(master, idle_atom_v, caf::actor{self});
      },
  };
}

struct cpu_pool_state {
  static inline const char* name = "ingestd.cpu_pool";
  std::deque<cpu_job> backlog;
  /// The first `continuing` items of the backlog continue started work.
  size_t continuing = 0;
  std::vector<caf::actor> idle;
  size_t max_backlog = 0;
  std::shared_ptr<node_admission> admission;

  /// Items still waiting when the pool stops get their `expired` call: every item is answered.
  ~cpu_pool_state() {
    for (auto& job : backlog)
      if (job.expired)
        job.expired();
  }
};

using cpu_pool_ptr = cpu_pool_actor::stateful_pointer<cpu_pool_state>;

cpu_pool_actor::behavior_type cpu_pool(cpu_pool_ptr self, int workers, int backlog,
                                       std::shared_ptr<node_admission> admission,
                                       cpu_workers mode) {
  auto& st = self->state;
  st.max_backlog = static_cast<size_t>(std::max(backlog, 0));
  st.admission = std::move(admission);
  auto master = caf::actor_cast<caf::actor>(self);
  for (int i = 0; i < std::max(workers, 1); ++i) {
    if (mode == cpu_workers::detached)
      self->spawn<caf::detached + caf::linked>(cpu_worker, master, st.admission);
    else
      self->spawn<caf::linked>(cpu_worker, master, st.admission);
  }
  return {
      [self](run_atom, cpu_job& job) {
        auto& st = self->state;
        if (!st.idle.empty()) {
          auto worker = std::move(st.idle.back());
          st.idle.pop_back();
          caf::anon_send(worker, run_atom_v, std::move(job));
        } else if (st.backlog.size() >= st.max_backlog) {
          if (job.expired)
            job.expired();
        } else {
          if (job.continues_started_work) {
            st.backlog.insert(st.backlog.begin() + static_cast<std::ptrdiff_t>(st.continuing),
                              std::move(job));
            ++st.continuing;
          } else {
            st.backlog.push_back(std::move(job));
          }
          st.admission->cpu_backlog_is(static_cast<int64_t>(st.backlog.size()));
        }
      },
      [self](idle_atom, caf::actor& worker) {
        auto& st = self->state;
        auto now = clock::now();
        while (!st.backlog.empty()) {
          auto job = std::move(st.backlog.front());
          st.backlog.pop_front();
          if (st.continuing > 0)
            --st.continuing;
          st.admission->cpu_backlog_is(static_cast<int64_t>(st.backlog.size()));
          if (now > job.deadline) {
            if (job.expired)
              job.expired();
            continue;
          }
          caf::anon_send(worker, run_atom_v, std::move(job));
          return;
        }
        st.idle.push_back(std::move(worker));
      },
  };
}

class actor_cpu_executor : public cpu_executor {
public:
  actor_cpu_executor(cpu_pool_actor pool, std::shared_ptr<sandbox::decoder> decoder)
      : pool_(std::move(pool)), decoder_(std::move(decoder)) {}
  void submit(cpu_job job) override { caf::anon_send(pool_, run_atom_v, std::move(job)); }
  std::shared_ptr<sandbox::decoder> decoder() const override { return decoder_; }

private:
  cpu_pool_actor pool_;
  std::shared_ptr<sandbox::decoder> decoder_;
};

} // namespace

cpu_pool_actor spawn_cpu_pool(caf::actor_system& sys, int workers, int backlog,
                              std::shared_ptr<node_admission> admission, cpu_workers mode) {
  return sys.spawn(cpu_pool, workers, backlog, std::move(admission), mode);
}

std::shared_ptr<cpu_executor> make_cpu_executor(cpu_pool_actor pool,
                                                std::shared_ptr<sandbox::decoder> decoder) {
  return std::make_shared<actor_cpu_executor>(std::move(pool), std::move(decoder));
}

int cpu_pool_size(int reserved) {
  auto cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores - reserved);
}

} // namespace ingestd
