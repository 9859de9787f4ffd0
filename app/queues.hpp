// How `ingestd queues create` makes the queues of the enabled stages (stages/registry.hpp names
// them, each with its dead-letter queue) and how a node opens them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adapters/queue/queue.hpp"
#include "config/config.hpp"
#include "messages/result.hpp"
#include "stages/registry.hpp"

namespace ingestd {

class curl_engine;

/// The SQS queue names of a spec: with queue.priority_classes, the ingest stage has one queue per
/// class ("<name>-p<bound>", most urgent first); otherwise the spec's own name.
std::vector<std::string> sqs_queue_names(const config& cfg, const queue_spec& spec);

/// Creates each queue and its dead-letter queue with the redrive policy, on SQS or on the
/// Postgres queue; idempotent. Answers one line per queue for the user.
result<std::vector<std::string>> create_queues(const config& cfg);

/// Opens `spec`'s queue for the worker, or fails naming the queue and `ingestd queues create`
/// when it does not exist (on the Postgres queue only when `require_registered`; an SQS queue
/// that does not exist cannot be opened). `http` is made on first need (SQS).
result<std::shared_ptr<queue>> open_queue(const config& cfg, const queue_spec& spec,
                                          const std::function<std::shared_ptr<curl_engine>()>& http,
                                          bool require_registered = true);

/// An SQS queue by its name (looked up) or URL on the configured SQS endpoint, whatever
/// queue.backend says: the status event stream's sink (outbox.events_sqs_queue), a bucket's
/// notifications (acquisition.buckets). `what` names it in errors.
result<std::shared_ptr<queue>>
open_sqs_queue_named(const config& cfg, const std::string& name_or_url, const std::string& what,
                     const std::function<std::shared_ptr<curl_engine>()>& http);

} // namespace ingestd
