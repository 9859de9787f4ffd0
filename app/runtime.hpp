// The adapters a configuration asks for, built and owned in one place (used by `run` and the
// one-document commands): the HTTP engine, the queue, storage, database, OCR and extraction.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/worker_context.hpp"
#include "adapters/db/outbox_repository.hpp"
#include "adapters/notify/event_sink.hpp"
#include "config/config.hpp"

namespace ingestd {

class curl_engine;
class cpu_executor;
class rate_limited_client;

struct runtime {
  // Declared first so it is destroyed last: the adapters in `ports` hold references to it. Null
  // when no backend speaks HTTP. It is also the LLM client's retry timer.
  std::shared_ptr<curl_engine> http;
  /// Each provider's limits in front of the engine (the LLM, Document AI, webhooks), for the
  /// providers the configuration uses; the adapters in `ports` hold references to them.
  std::vector<std::shared_ptr<rate_limited_client>> limiters;
  /// The adapters, handed to the worker as they are (`gate` stays empty: the default gate).
  worker_ports ports;
  /// The outbox the relay sends from (next jobs on SQS); null when nothing goes through it.
  std::shared_ptr<outbox_repository> outbox;
  /// The status event sinks by their outbox destination ("events:webhook", "events:sqs"), built
  /// when runtime_parts::event_sinks asks and the environment or configuration names them.
  std::map<std::string, std::shared_ptr<event_sink>> event_sinks;

  /// Tears down in the order that lets late callbacks find what they use: the adapters (the
  /// failure notifier first, the queue last: worker_ports' members in reverse), then the HTTP
  /// engine (which answers its calls still in flight and drops pending retries).
  ~runtime();
};

/// Which adapters to build: the one-document commands need neither queue nor database.
struct runtime_parts {
  bool queue = true;
  bool database = true;
  bool storage = true;
  /// A Postgres queue that `ingestd queues create` has not made is an error (a node, submit);
  /// false for status, which reports an empty queue then.
  bool require_queues = true;
  /// The event sinks and the outbox their relay reads (`run`).
  bool event_sinks = false;
};

/// Builds the adapters of `cfg`. `cpu` runs local OCR (it must outlive the runtime). Blocking
/// (it may look an SQS queue URL up): call it before the actors start.
result<std::unique_ptr<runtime>> make_runtime(const config& cfg, cpu_executor& cpu,
                                              runtime_parts parts = {});

} // namespace ingestd
