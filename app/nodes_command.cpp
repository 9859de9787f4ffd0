// `ingestd nodes [--json]`: the cluster at a glance from the node registry (worker_node); and
// `ingestd drain NODE_ID | --all [--wait]`: asks nodes to drain through the registry (each sees
// the request on its next heartbeat refresh, stops polling, finishes or gives back its work and
// exits 0).
#include <cmath>
#include <cstdio>
#include <thread>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/db/pg_node_repository.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"

namespace ingestd::cli {

namespace {

constexpr const char* nodes_usage = R"(Usage: ingestd nodes [--json]

The nodes of the cluster as the registry knows them: per node its id, state, jobs in flight
against its capacity, its capacity usage (weighted slots in use over worker.capacity_slots, or
jobs over worker.max_in_flight), jobs finished in the last minute, when it was last seen, host,
pid, version, and the stages (with the size classes) it serves. A state is running, draining, stopped, or lost (a node not stopped that has
not refreshed its row for its lease: killed, frozen or cut off; its work is taken over once its
claims expire). Rows of stopped and lost nodes go after cluster.node_retention_hours.

  --json   {"nodes": [...], "by_state": {"running": N, "draining": N, "stopped": N, "lost": N}}
)";

constexpr const char* drain_usage
    = R"(Usage: ingestd drain NODE_ID | --all [--wait [--timeout SECONDS]]

Asks a node (--all: every node not stopped) to drain: within one heartbeat it stops polling,
lets its jobs finish within worker.shutdown_grace_seconds, gives back the rest and exits 0, as
on SIGTERM. The registry shows it draining, then stopped ('ingestd nodes').

  --wait      wait until every node asked has stopped (or is lost); exit 1 at the timeout
  --timeout   how long --wait waits, in seconds (default 660: the default grace plus margin)
)";

/// The deadline of each registry call.
constexpr std::chrono::seconds nodes_timeout{60};

result<std::vector<node_info>> list_nodes(node_repository& nodes) {
  return blocking_call<std::vector<node_info>>(nodes_timeout, "nodes.timeout", "the database",
                                               [&](auto cb) { nodes.list(cb); });
}

const char* const node_states[] = {"running", "draining", "stopped", "lost"};

int64_t count_state(const std::vector<node_info>& nodes, const std::string& state) {
  int64_t n = 0;
  for (auto& node : nodes)
    n += node.state == state ? 1 : 0;
  return n;
}

std::string ago(int64_t seconds) {
  if (seconds < 120)
    return std::to_string(seconds) + " s ago";
  if (seconds < 7200)
    return std::to_string(seconds / 60) + " min ago";
  return std::to_string(seconds / 3600) + " h ago";
}

void print_json(const std::vector<node_info>& nodes) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  w.Key("nodes");
  w.StartArray();
  for (auto& n : nodes) {
    w.StartObject();
    w.Key("id");
    w.String(n.id.c_str());
    w.Key("state");
    w.String(n.state.c_str());
    w.Key("drain_requested");
    w.Bool(n.drain_requested);
    w.Key("in_flight");
    w.Int(n.in_flight);
    w.Key("capacity");
    w.Int(n.capacity);
    w.Key("capacity_usage");
    w.Double(n.capacity_usage);
    w.Key("done_last_minute");
    w.Int(n.done_last_minute);
    w.Key("last_seen");
    w.String(n.last_seen.c_str());
    w.Key("last_seen_seconds_ago");
    w.Int64(n.last_seen_seconds_ago);
    w.Key("started_at");
    w.String(n.started_at.c_str());
    w.Key("host");
    w.String(n.host.c_str());
    w.Key("pid");
    w.Int(n.pid);
    w.Key("version");
    w.String(n.version.c_str());
    w.Key("stages");
    w.String(n.stages.c_str());
    w.Key("classes");
    w.String(n.classes.c_str());
    w.EndObject();
  }
  w.EndArray();
  w.Key("by_state");
  w.StartObject();
  for (auto* state : node_states) {
    w.Key(state);
    w.Int64(count_state(nodes, state));
  }
  w.EndObject();
  w.EndObject();
  std::printf("%s\n", buf.GetString());
}

void print_table(const std::vector<node_info>& nodes) {
  std::printf("%-24s %-9s %-11s %5s %7s %-12s %-20s %7s %-8s %s\n", "ID", "STATE", "IN FLIGHT",
              "USE", "DONE/1m", "LAST SEEN", "HOST", "PID", "VERSION", "STAGES");
  for (auto& n : nodes) {
    auto state = n.state + (n.drain_requested && n.state == "running" ? "*" : "");
    auto flight = std::to_string(n.in_flight) + "/" + std::to_string(n.capacity);
    auto use = std::to_string(std::lround(n.capacity_usage * 100)) + "%";
    auto stages = n.stages + (n.classes.empty() ? "" : " (" + n.classes + ")");
    std::printf("%-24s %-9s %-11s %5s %7d %-12s %-20s %7d %-8s %s\n", n.id.c_str(), state.c_str(),
                flight.c_str(), use.c_str(), n.done_last_minute,
                ago(n.last_seen_seconds_ago).c_str(), n.host.c_str(), n.pid, n.version.c_str(),
                stages.c_str());
  }
  std::printf("nodes: %zu", nodes.size());
  for (auto* state : node_states)
    std::printf("   %s %lld", state, static_cast<long long>(count_state(nodes, state)));
  std::printf("%s\n", nodes.empty()
                          ? "   (none registered: no `ingestd run` against this database yet)"
                          : "");
  for (auto& n : nodes)
    if (n.drain_requested && n.state == "running") {
      std::printf("* drain requested, not seen by the node yet\n");
      break;
    }
}

/// Waits until none of `ids` is running or draining; false at the deadline.
bool wait_stopped(node_repository& nodes, const std::vector<std::string>& ids,
                  std::chrono::seconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto all = list_nodes(nodes);
    if (all) {
      size_t left = 0;
      for (auto& n : *all)
        for (auto& id : ids)
          left += n.id == id && (n.state == "running" || n.state == "draining") ? 1 : 0;
      if (left == 0)
        return true;
    }
    if (std::chrono::steady_clock::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{500});
  }
}

} // namespace

int nodes_command(const arguments& args) {
  bool json = false;
  for (auto& a : args.raw) {
    if (a == "-h" || a == "--help") {
      std::fputs(nodes_usage, stdout);
      return ok;
    }
    if (a != "--json") {
      std::fprintf(stderr, "ingestd nodes: unknown argument %s\n%s", a.c_str(), nodes_usage);
      return usage;
    }
    json = true;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_node_repository nodes{cfg->database.url};
  auto all = list_nodes(nodes);
  if (!all) {
    std::fprintf(stderr, "ingestd nodes: database: %s\n", all.error().describe().c_str());
    return failure;
  }
  if (json)
    print_json(*all);
  else
    print_table(*all);
  return ok;
}

int drain_command(const arguments& args) {
  bool all = false, wait = false;
  std::optional<std::string> id;
  std::chrono::seconds timeout{660};
  for (size_t i = 0; i < args.raw.size(); ++i) {
    auto& a = args.raw[i];
    if (a == "-h" || a == "--help") {
      std::fputs(drain_usage, stdout);
      return ok;
    }
    if (a == "--all") {
      all = true;
    } else if (a == "--wait") {
      wait = true;
    } else if (a == "--timeout") {
      long long secs = 0;
      if (i + 1 >= args.raw.size() || std::sscanf(args.raw[i + 1].c_str(), "%lld", &secs) != 1
          || secs < 1) {
        std::fprintf(stderr, "ingestd drain: --timeout needs a number of seconds (at least 1)\n");
        return usage;
      }
      timeout = std::chrono::seconds{secs};
      ++i;
    } else if (a.rfind("--", 0) == 0 || id) {
      std::fprintf(stderr, "ingestd drain: unexpected argument %s\n%s", a.c_str(), drain_usage);
      return usage;
    } else {
      id = a;
    }
  }
  if (all == id.has_value()) {
    std::fprintf(stderr, "ingestd drain: name one NODE_ID or --all\n%s", drain_usage);
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  pg_node_repository nodes{cfg->database.url};
  auto asked
      = blocking_call<std::vector<std::string>>(nodes_timeout, "nodes.timeout", "the database",
                                                [&](auto cb) { nodes.request_drain(id, cb); });
  if (!asked) {
    std::fprintf(stderr, "ingestd drain: database: %s\n", asked.error().describe().c_str());
    return failure;
  }
  if (id && asked->empty()) {
    auto known = list_nodes(nodes);
    if (known)
      for (auto& n : *known)
        if (n.id == *id) {
          std::printf("node %s is stopped already\n", id->c_str());
          return ok;
        }
    std::fprintf(stderr,
                 "ingestd drain: no node \"%s\" in the registry ('ingestd nodes' lists them)\n",
                 id->c_str());
    return failure;
  }
  for (auto& n : *asked)
    std::printf("drain requested: %s\n", n.c_str());
  if (asked->empty())
    std::printf("no node is running\n");
  if (!wait)
    return ok;
  if (!wait_stopped(nodes, *asked, timeout)) {
    std::fprintf(stderr, "ingestd drain: not every node stopped within %lld s ('ingestd nodes')\n",
                 static_cast<long long>(timeout.count()));
    return failure;
  }
  std::printf("stopped\n");
  return ok;
}

} // namespace ingestd::cli
