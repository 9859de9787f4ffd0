#include "actors/deadlines.hpp"

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace ingestd {

void step_deadlines::set(caf::abstract_actor* job, time_point at) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto [i, added] = entries_.try_emplace(job->id());
  if (added)
    i->second.job = caf::actor_cast<caf::actor>(job);
  i->second.at = at;
}

void step_deadlines::remove(caf::actor_id job) {
  std::lock_guard<std::mutex> guard{mtx_};
  entries_.erase(job);
}

std::vector<caf::actor> step_deadlines::take_passed(time_point now) {
  std::vector<caf::actor> passed;
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto i = entries_.begin(); i != entries_.end();) {
    if (i->second.at <= now) {
      passed.push_back(std::move(i->second.job));
      i = entries_.erase(i);
    } else {
      ++i;
    }
  }
  return passed;
}

size_t step_deadlines::size() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return entries_.size();
}

namespace {

deadline_sweep_actor::behavior_type sweep(deadline_sweep_actor::pointer self,
                                          const std::shared_ptr<step_deadlines>& table) {
  self->delayed_send(self, step_deadlines::sweep_interval, tick_atom_v);
  return {
      [self, table](tick_atom) {
        self->delayed_send(self, step_deadlines::sweep_interval, tick_atom_v);
        for (auto& job : table->take_passed(self->clock().now()))
          self->send(caf::actor_cast<job_actor>(job), timeout_atom_v);
      },
  };
}

} // namespace

deadline_sweep_actor spawn_deadline_sweep(caf::actor_system& sys,
                                          std::shared_ptr<step_deadlines> table) {
  return sys.spawn(sweep, std::move(table));
}

} // namespace ingestd
