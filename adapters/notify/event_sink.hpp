// The status event stream's sink port: where the relay (actors/relay.cpp) delivers each event of
// the outbox, at least once and in order per document. Implemented by event_webhook_sink (a
// signed HTTP POST) and queue_event_sink (a queue message, e.g. SQS, for fan-out).
#pragma once

#include <string>

#include "messages/result.hpp"

namespace ingestd {

/// One event to deliver.
struct sink_event {
  std::string event_id;
  /// The event as JSON (migration 009's ingestd_emit_event writes it).
  std::string body;
};

/// Asynchronous: deliver returns at once and calls `done` exactly once, from any thread; an
/// error means "not delivered, try again later".
class event_sink {
public:
  virtual ~event_sink() = default;
  virtual void deliver(sink_event event, callback<void> done) = 0;
};

} // namespace ingestd
