// The event sink over a queue port (the SQS sink for fan-out to other consumers): one message per
// event, its body the event's JSON.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "adapters/notify/event_sink.hpp"
#include "adapters/queue/queue.hpp"

namespace ingestd {

class queue_event_sink final : public event_sink {
public:
  explicit queue_event_sink(std::shared_ptr<queue> q) : queue_(std::move(q)) {}

  void deliver(sink_event event, callback<void> done) override {
    std::vector<outgoing_message> messages{{std::move(event.body), std::chrono::seconds{0}}};
    queue_->send(
        std::move(messages), [done = std::move(done)](result<std::vector<batch_entry_result>> r) {
          if (!r)
            return done(r.error());
          if (r->empty())
            return done(
                error::make_transient("events.queue", "the queue answered no entry for the event"));
          if (r->front().failed)
            return done(r->front().error);
          done(result<void>{});
        });
  }

private:
  std::shared_ptr<queue> queue_;
};

} // namespace ingestd
