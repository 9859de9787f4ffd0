// The node's memory budget for work that holds large buffers (a container's members while it is
// unpacked and stored): a piece of work reserves its bytes before it asks for them and gives them
// back when it ends, whichever way. Requests wait in arrival order (FIFO, nobody overtakes a
// waiting request) and never fail for want of budget; one larger than the whole budget is
// admitted alone, when nothing else is reserved. A waiting request whose work is cancelled
// leaves the line. No CAF here: the grant is a callback.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>

namespace ingestd {

class memory_budget : public std::enable_shared_from_this<memory_budget> {
public:
  /// Bytes reserved for one piece of work; given back when the last copy of the pointer goes.
  class reservation {
  public:
    reservation(std::weak_ptr<memory_budget> budget, uint64_t bytes)
        : budget_(std::move(budget)), bytes_(bytes) {}
    ~reservation();
    reservation(const reservation&) = delete;
    reservation& operator=(const reservation&) = delete;
    uint64_t bytes() const { return bytes_; }

  private:
    std::weak_ptr<memory_budget> budget_;
    uint64_t bytes_;
  };

  /// The reservation; null when the request was withdrawn (its stop token).
  using granted = std::function<void(std::shared_ptr<reservation>)>;

  /// `total` bytes (at least 1). Make it with std::make_shared: reservations refer back to it.
  explicit memory_budget(uint64_t total);

  /// Reserves `bytes`: calls `done` exactly once with the reservation, inside this call when
  /// they are free and nobody waits, else later from the thread whose give-back frees them; or
  /// with null from the thread that requests a stop on `stop` while it waits (it leaves the
  /// line). Answers whether it was granted at once. `done` must not block.
  bool reserve(uint64_t bytes, granted done, const std::stop_token& stop = {});

  uint64_t total() const { return total_; }
  uint64_t reserved() const;
  /// Requests waiting for bytes now.
  size_t waiting() const;

private:
  struct waiter {
    uint64_t id;
    uint64_t bytes;
    granted done;
    /// Withdraws it when its work is cancelled; destroyed outside the lock.
    std::unique_ptr<std::stop_callback<std::function<void()>>> on_stop;
  };

  /// Whether `bytes` fit now (a request over the whole budget fits when nothing is reserved).
  bool fits(uint64_t bytes) const;
  void give_back(uint64_t bytes);
  void withdraw(uint64_t id);

  const uint64_t total_;
  mutable std::mutex mtx_;
  uint64_t reserved_ = 0;
  uint64_t next_id_ = 0;
  std::deque<waiter> waiting_;
};

} // namespace ingestd
