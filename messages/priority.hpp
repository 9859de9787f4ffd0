// Priority classes as the configuration gives them (queue.priority_classes and
// queue.priority_class_weights): checked by the configuration loader and by the SQS
// priority_queues adapter alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ingestd {

/// Class bounds strictly ascending within 0..100 and ending at 100, as many weights, each
/// 1..1000; empty bounds (one queue) take no weights. What was expected when not.
inline std::optional<std::string> check_priority_classes(const std::vector<int64_t>& bounds,
                                                         const std::vector<int64_t>& weights) {
  if (bounds.empty()) {
    if (weights.empty())
      return std::nullopt;
    return std::string{"no weights without queue.priority_classes"};
  }
  int64_t previous = -1;
  for (auto b : bounds) {
    if (b <= previous || b > 100)
      return std::string{"class bounds strictly ascending within 0..100"};
    previous = b;
  }
  if (bounds.back() != 100)
    return std::string{"class bounds ending at 100 (the last class takes the least urgent)"};
  if (weights.size() != bounds.size())
    return "one weight per class (" + std::to_string(bounds.size()) + ")";
  for (auto w : weights)
    if (w < 1 || w > 1000)
      return std::string{"weights of 1..1000"};
  return std::nullopt;
}

} // namespace ingestd
