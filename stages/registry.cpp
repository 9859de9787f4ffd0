// The registry of stages: one line per stage.
#include "stages/registry.hpp"

#include <algorithm>

#include "stages/ingest/ingest_stage.hpp"
#include "stages/match/match_stage.hpp"
#include "stages/unpack/unpack_stage.hpp"

namespace ingestd {

const std::vector<registered_stage>& stage_registry() {
  static const std::vector<registered_stage> stages{
      {"ingest", ingest_queues, ingest_stages},
      {"match", match_queues, match_stages},
      {"unpack", unpack_queues, unpack_stages},
  };
  return stages;
}

const registered_stage* find_stage(std::string_view name) {
  for (auto& s : stage_registry())
    if (s.name == name)
      return &s;
  return nullptr;
}

std::vector<queue_spec> configured_queues(const config& cfg) {
  std::vector<queue_spec> out;
  for (auto& s : stage_registry())
    if (stage_enabled(cfg, std::string{s.name}))
      for (auto& q : s.queues(cfg))
        out.push_back(std::move(q));
  return out;
}

result<std::vector<std::shared_ptr<const stage>>> build_stages(stage_env& env) {
  auto served = served_stages(env.cfg);
  std::vector<std::shared_ptr<const stage>> out;
  for (auto& s : stage_registry()) {
    if (std::find(served.begin(), served.end(), s.name) == served.end())
      continue;
    auto made = s.make(env);
    if (!made)
      return made.error();
    for (auto& instance : *made)
      out.push_back(std::move(instance));
  }
  return out;
}

} // namespace ingestd
