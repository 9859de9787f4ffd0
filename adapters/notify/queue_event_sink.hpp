// The event sink over a queue port (the SQS sink for fan-out to other consumers): one message per
// event, its body the event's JSON, its attributes the event's type, tenant_id and document_id
// (SQS message attributes, so that subscribers can filter without reading the body).
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/notify/event_sink.hpp"
#include "adapters/queue/queue.hpp"

namespace ingestd {

/// The message attributes of an event (its JSON): type, tenant_id and document_id, and a batch
/// event's payload.batch_id, those that are strings in it.
std::vector<std::pair<std::string, std::string>> event_attributes(std::string_view event_json);

class queue_event_sink final : public event_sink {
public:
  explicit queue_event_sink(std::shared_ptr<queue> q) : queue_(std::move(q)) {}

  void deliver(sink_event event, callback<void> done) override;

private:
  std::shared_ptr<queue> queue_;
};

} // namespace ingestd
