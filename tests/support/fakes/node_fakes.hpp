// An in-memory fake of the node registry port (adapters/db/node_repository.hpp), in the style of
// fakes.hpp: it keeps the contract of pg_node_repository (a reused id takes the row over, the
// incarnation fences refreshes, a stopped row stays stopped), records every call, can be told to
// fail (fail_next) or to hold a call back (hold), and lists misuse in violations().
// Thread-safe; callbacks run inline on the caller's thread unless held.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "adapters/db/node_repository.hpp"
#include "tests/support/fakes/fakes.hpp"

namespace ingestd::test {

class fake_node_repository : public node_repository, public fault_script {
public:
  struct row {
    node_registration node;
    int32_t in_flight = 0;
    int32_t done_last_minute = 0;
    std::string state = "running";
    bool drain_requested = false;
    int refreshes = 0;
  };

  void register_node(node_registration node, callback<void> done) override;
  void refresh(node_refresh node, callback<node_refresh_answer> done) override;
  void mark_stopped(std::string id, uuid incarnation, callback<void> done) override;
  /// Lost is not computed here (no clock): rows show their stored state.
  void list(callback<std::vector<node_info>> done) override;
  void request_drain(std::optional<std::string> id,
                     callback<std::vector<std::string>> done) override;
  void prune(std::chrono::seconds retention, callback<int64_t> done) override;

  std::optional<row> find(const std::string& id);
  /// Every refresh received, in order.
  std::vector<node_refresh> refreshes();
  /// The retention of every prune.
  std::vector<std::chrono::seconds> prune_calls();
  std::vector<std::string> violations();

private:
  std::map<std::string, row> rows_;
  std::vector<node_refresh> refreshes_;
  std::vector<std::chrono::seconds> prune_calls_;
};

} // namespace ingestd::test
