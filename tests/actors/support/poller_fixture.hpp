// The fixture of the poller's and the shutdown coordinator's tests: a heartbeat, documents waiting
// on the fake queue, and a poller of the ingest stage over them that the fixture stops at the end.
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
      auto key = "documents/d" + std::to_string(next_document) + ".txt";
      ++next_document;
      auto id = db->add(key);
      store->set(key, "text");
      queue->push(id.str());
    }
  }

  /// Spawns a poller of `s` (not yet run) that sends its jobs' claims to `hb`; the node's
  /// admission takes the settings as they are now.
  poller_actor poller(std::shared_ptr<const stage> s) {
    configure_admission();
    auto p = spawn_poller(sys, ctx, std::move(s), {hb});
    periodic.push_back(caf::actor_cast<caf::actor>(p));
    return p;
  }

  /// A poller of the ingest stage.
  poller_actor poller() { return poller(ingest_stage()); }

  int next_document = 0;
};

} // namespace ingestd::test
