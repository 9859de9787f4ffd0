// The node registry fake.
#include "tests/support/fakes/node_fakes.hpp"

namespace ingestd::test {

void fake_node_repository::register_node(node_registration node, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (node.id.empty() || node.capacity < 1 || node.lease.count() <= 0)
      violations_.push_back("register_node of \"" + node.id + "\" with capacity "
                            + std::to_string(node.capacity) + " and lease "
                            + std::to_string(node.lease.count()) + " s");
    if (auto err = take_failure("register_node"))
      r = *err;
    else
      rows_[node.id] = row{node};
    if (maybe_hold("register_node", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_node_repository::refresh(node_refresh node, callback<node_refresh_answer> done) {
  result<node_refresh_answer> r = node_refresh_answer{};
  {
    std::lock_guard guard{mtx_};
    refreshes_.push_back(node);
    if (node.in_flight < 0 || node.done_last_minute < 0)
      violations_.push_back("refresh of \"" + node.id + "\" with in flight "
                            + std::to_string(node.in_flight) + " and done "
                            + std::to_string(node.done_last_minute));
    if (auto err = take_failure("refresh")) {
      r = *err;
    } else if (auto i = rows_.find(node.id); i != rows_.end()
                                             && i->second.node.incarnation == node.incarnation
                                             && i->second.state != "stopped") {
      auto& row = i->second;
      row.in_flight = node.in_flight;
      row.done_last_minute = node.done_last_minute;
      row.state = node.draining ? "draining" : "running";
      ++row.refreshes;
      r = node_refresh_answer{true, row.drain_requested};
    }
    if (maybe_hold("refresh", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_node_repository::mark_stopped(std::string id, uuid incarnation, callback<void> done) {
  result<void> r;
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("mark_stopped"))
      r = *err;
    else if (auto i = rows_.find(id);
             i != rows_.end() && i->second.node.incarnation == incarnation) {
      i->second.state = "stopped";
      i->second.in_flight = 0;
    }
    if (maybe_hold("mark_stopped", [done, r] { done(r); }))
      return;
  }
  done(r);
}

void fake_node_repository::list(callback<std::vector<node_info>> done) {
  result<std::vector<node_info>> r = std::vector<node_info>{};
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("list")) {
      r = *err;
    } else {
      for (auto& [id, row] : rows_) {
        node_info n;
        n.id = id;
        n.host = row.node.host;
        n.pid = row.node.pid;
        n.version = row.node.version;
        n.stages = row.node.stages;
        n.capacity = row.node.capacity;
        n.in_flight = row.in_flight;
        n.done_last_minute = row.done_last_minute;
        n.state = row.state;
        n.drain_requested = row.drain_requested;
        r->push_back(std::move(n));
      }
    }
    if (maybe_hold("list", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_node_repository::request_drain(std::optional<std::string> id,
                                         callback<std::vector<std::string>> done) {
  result<std::vector<std::string>> r = std::vector<std::string>{};
  {
    std::lock_guard guard{mtx_};
    if (auto err = take_failure("request_drain")) {
      r = *err;
    } else {
      for (auto& [key, row] : rows_)
        if ((!id || *id == key) && row.state != "stopped") {
          row.drain_requested = true;
          r->push_back(key);
        }
    }
    if (maybe_hold("request_drain", [done, r] { done(r); }))
      return;
  }
  done(std::move(r));
}

void fake_node_repository::prune(std::chrono::seconds retention, callback<int64_t> done) {
  result<int64_t> r = int64_t{0};
  {
    std::lock_guard guard{mtx_};
    prune_calls_.push_back(retention);
    if (retention.count() <= 0)
      violations_.push_back("prune with a retention of " + std::to_string(retention.count())
                            + " s");
    if (auto err = take_failure("prune"))
      r = *err;
    if (maybe_hold("prune", [done, r] { done(r); }))
      return;
  }
  done(r);
}

std::optional<fake_node_repository::row> fake_node_repository::find(const std::string& id) {
  std::lock_guard guard{mtx_};
  auto i = rows_.find(id);
  if (i == rows_.end())
    return std::nullopt;
  return i->second;
}

std::vector<node_refresh> fake_node_repository::refreshes() {
  std::lock_guard guard{mtx_};
  return refreshes_;
}

std::vector<std::chrono::seconds> fake_node_repository::prune_calls() {
  std::lock_guard guard{mtx_};
  return prune_calls_;
}

std::vector<std::string> fake_node_repository::violations() {
  std::lock_guard guard{mtx_};
  return violations_;
}

} // namespace ingestd::test
