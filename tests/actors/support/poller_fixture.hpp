// The fixture of the poller's and the shutdown coordinator's tests: a heartbeat, documents waiting
// on the fake queue, and a poller over them that the fixture stops at the end.
#pragma once

#include <string>

#include "actors/poller.hpp"
#include "tests/actors/support/actor_fixture.hpp"

namespace ingestd::test {

struct poller_fixture : actor_fixture {
  heartbeat_actor hb = heartbeat();

  /// `n` ingestions with their documents stored and their messages on the queue.
  void add_documents(int n) {
    for (int i = 0; i < n; ++i) {
      auto id = db->add("documents/d" + std::to_string(i) + ".txt");
      store->set("documents/d" + std::to_string(i) + ".txt", "text");
      queue->push(id.str());
    }
  }

  /// Spawns a poller (not yet run) that sends its jobs' claims to `hb`.
  poller_actor poller() {
    auto p = spawn_poller(sys, ctx, {hb});
    periodic.push_back(caf::actor_cast<caf::actor>(p));
    return p;
  }
};

} // namespace ingestd::test
