// Priority classes over a queue without priorities (SQS): one queue per class, a message
// sent to the queue of its priority's class, receives that poll the classes with weights.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapters/queue/queue.hpp"
#include "messages/priority.hpp"

namespace ingestd {

/// One class: the priorities up to `max_priority` (from the previous class's bound + 1).
struct priority_class {
  int32_t max_priority = ingestd::max_priority;
  /// Receives that start with this class, relative to the others' weights (at least 1).
  int32_t weight = 1;
  std::shared_ptr<queue> q;
};

/// The queue port over several class queues. Each receive asks the classes one after another
/// without waiting, starting with the class a smooth weighted round robin picks (so a class of
/// weight 6 beside ones of 3 and 1 starts 6 receives in 10), then the others from the most urgent;
/// the first class with messages answers. When all are empty it long-polls the starting class
/// for at most one second and goes round again until the receive's wait has passed, so a message
/// of any class is seen within about a second. Receipts carry their class ("<index>|<receipt>").
/// A received message's priority is its class's lowest (the queue does not keep the exact one).
class priority_queues final : public queue {
public:
  /// `classes` by ascending max_priority; the last must cover 100. Throws std::invalid_argument
  /// otherwise (the configuration is checked before, see queue.priority_classes).
  explicit priority_queues(std::vector<priority_class> classes);

  void receive(int max_messages, std::chrono::seconds wait, std::chrono::seconds visibility,
               callback<std::vector<queue_message>> done) override;
  void remove(std::vector<std::string> receipts,
              callback<std::vector<batch_entry_result>> done) override;
  void change_visibility(std::vector<visibility_change> changes,
                         callback<std::vector<batch_entry_result>> done) override;
  void send(std::vector<outgoing_message> messages,
            callback<std::vector<batch_entry_result>> done) override;
  void stats(callback<queue_stats> done) override;
  std::string name() const override;

  /// The class index of a priority.
  size_t class_of(int32_t priority) const;
  /// The class order the next receive would use (for tests); advances the round robin.
  std::vector<size_t> next_order();

private:
  struct poll;
  void try_class(const std::shared_ptr<poll>& p, size_t i);

  std::vector<priority_class> classes_;
  std::mutex mtx_;
  std::vector<int64_t> credit_;
};

} // namespace ingestd
