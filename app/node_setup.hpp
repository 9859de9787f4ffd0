// A node as `ingestd run` builds it from its configuration, in two steps: prepare() makes what it
// runs with (the CPU pool, the adapters, the stages the registry builds, the node's row in the
// registry, the event sinks and WORKER_STARTED), start() spawns its actors (actors/node.cpp). One
// handle owns it all; `ingestd run` keeps the signals and the HTTP endpoints.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actors/node.hpp"
#include "actors/node_context.hpp"
#include "adapters/db/pg_node_repository.hpp"
#include "app/runtime.hpp"
#include "config/config.hpp"

namespace ingestd {

class node_setup {
public:
  /// Makes the node's parts; nothing polls yet. `version` goes in the registry.
  static result<std::unique_ptr<node_setup>> prepare(caf::actor_system& sys, const config& cfg,
                                                     const std::string& version);
  /// Stops the CPU pool if the node never started.
  ~node_setup();
  node_setup(const node_setup&) = delete;
  node_setup& operator=(const node_setup&) = delete;

  /// Starts the actors. `on_self_drain` runs when the node decides to drain itself (its lifetime
  /// or idle limit), before the drain starts; `periodic` is the caller's background work besides
  /// the node's own (the mailboxes).
  const node& start(std::function<void(const std::string& why)> on_self_drain,
                    std::vector<periodic_task> periodic = {});

  /// After the node stopped: marks its registry row stopped and writes WORKER_FINISHED, each
  /// within a short deadline (a database that does not answer must not hold the exit).
  void finish();

  const std::shared_ptr<node_context>& context() const { return ctx_; }
  runtime& adapters() { return *rt_; }
  const std::shared_ptr<cpu_executor>& cpu() const { return cpu_; }
  const std::shared_ptr<node_drain_flags>& drain_flags() const { return flags_; }
  const node& actors() const { return node_; }
  /// The queue of each stage the node serves, for /metrics.
  std::vector<std::shared_ptr<queue>> stage_queues() const;

private:
  node_setup(caf::actor_system& sys, const config& cfg) : sys_(sys), cfg_(cfg) {}

  caf::actor_system& sys_;
  const config& cfg_;
  std::shared_ptr<node_context> ctx_;
  cpu_pool_actor pool_;
  std::shared_ptr<cpu_executor> cpu_;
  std::unique_ptr<runtime> rt_;
  std::shared_ptr<pg_node_repository> nodes_;
  node_registration me_;
  std::shared_ptr<node_drain_flags> flags_ = std::make_shared<node_drain_flags>();
  node node_;
  bool started_ = false;
};

} // namespace ingestd
