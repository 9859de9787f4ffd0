// A message received from the ingestion queue (SQS or the Postgres-backed queue).
#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

namespace ingestd {

struct queue_message {
  /// The queue's id of the message (SQS MessageId, or queue_message.id).
  std::string id;
  /// The handle that this receive got; deletes and visibility changes need it. A later receive
  /// of the same message gets a new one and makes this one stale.
  std::string receipt;
  /// The body: an ingestion id for the ingestion queue.
  std::string body;
  /// How many times the message has been received, this receive included (1 on first delivery).
  int32_t receive_count = 0;
  /// When the message was first sent, Unix milliseconds (0 if the queue does not say).
  int64_t sent_at_ms = 0;
  /// The priority it was sent with (0..100, lower first; 50 when the queue does not say).
  int32_t priority = 50;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, queue_message& x) {
  return f(caf::meta::type_name("queue_message"), x.id, x.receipt, x.body, x.receive_count,
           x.sent_at_ms, x.priority);
}

} // namespace ingestd
