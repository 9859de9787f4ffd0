// What a process's configuration asks for, built and owned in one place (by `run` and the commands
// that need part of it): the providers with their HTTP engine, storage, the claimed-work
// repository, the outbox with its event sinks, and the queues, opened once each.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "adapters/db/outbox_repository.hpp"
#include "adapters/db/work_repository.hpp"
#include "adapters/notify/event_sink.hpp"
#include "adapters/providers/provider_set.hpp"
#include "adapters/queue/queue.hpp"
#include "adapters/sandbox/helper_pool.hpp"
#include "adapters/storage/object_store.hpp"
#include "config/config.hpp"
#include "stages/registry.hpp"

namespace ingestd {

class cpu_executor;

struct runtime {
  // Declared first so that it goes last: every adapter below holds references to its engine.
  std::unique_ptr<provider_set> providers;
  std::shared_ptr<object_store> storage;
  std::shared_ptr<work_repository> work;
  /// The outbox the relay sends from: messages of hand-offs on SQS, and the status events.
  std::shared_ptr<outbox_repository> outbox;
  /// The status event sinks this node delivers to, by outbox destination ("events:webhook",
  /// "events:sqs", "events:notify"), each with the event types it takes (empty: all).
  std::map<std::string, std::shared_ptr<event_sink>> event_sinks;
  std::map<std::string, std::vector<std::string>> event_sink_types;
  /// The queues opened so far, by name.
  std::map<std::string, std::shared_ptr<queue>> queues;

  /// Opens the queue of `spec` (once; later calls answer the same one). A Postgres queue that
  /// `ingestd queues create` did not make is an error naming it, unless `require_queues` is off.
  result<std::shared_ptr<queue>> open_queue(const queue_spec& spec);

  /// An S3 bucket on the configured endpoint, with the credentials from the environment (the
  /// storage bucket's, an inbound bucket's).
  result<std::shared_ptr<object_store>> open_bucket(const std::string& bucket);

  /// The deadlines of the stages' own repositories.
  pg::session_options session;
  const config* cfg = nullptr;
  bool require_queues = true;
};

/// Which parts to build: the one-document commands need no database.
struct runtime_parts {
  bool database = true;
  bool storage = true;
  /// A Postgres queue that `ingestd queues create` has not made is an error (a node, submit);
  /// false for status, which reports an empty queue then.
  bool require_queues = true;
  /// The outbox and the event sinks (`run`).
  bool event_sinks = false;
};

/// Builds the parts of `cfg` (which must outlive the runtime). `cpu` runs local OCR (it must
/// outlive the runtime too). Blocking (it may look an SQS queue URL up): call it before the actors
/// start.
result<std::unique_ptr<runtime>> make_runtime(const config& cfg, cpu_executor& cpu,
                                              runtime_parts parts = {});

/// The decoder helper pool of a process that reads documents (a node, `ingestd transcribe`):
/// `helpers` helpers of this program (`ingestd decoder`), with the configured languages and
/// frames that hold the largest document and the largest container's members.
sandbox::helper_pool_options decoder_pool_options(const config& cfg, int helpers);

/// What the node shares with each stage's factory, over `rt`.
stage_env stage_env_of(runtime& rt, std::shared_ptr<cpu_executor> cpu);

} // namespace ingestd
