// The unpack stage: a container (ZIP, TAR, .tar.gz, e-mail, mbox) taken apart into child
// documents, each with its own ingestion and work item, written with the container's completion.
#pragma once

#include <memory>
#include <string>

#include "actors/memory_budget.hpp"
#include "actors/stage.hpp"
#include "adapters/containers/unpacker.hpp"
#include "adapters/db/container_repository.hpp"
#include "adapters/storage/object_store.hpp"

namespace ingestd {

struct config;
struct stage_env;
struct queue_spec;

/// The adapters the unpack stage runs with.
struct unpack_ports {
  std::shared_ptr<container_repository> db;
  std::shared_ptr<object_store> storage;
  std::shared_ptr<container_unpacker> unpacker;
  /// The node's memory for unpacking (containers.memory_budget_bytes); null: none.
  std::shared_ptr<memory_budget> budget;
};

struct unpack_settings {
  std::shared_ptr<ingestd::queue> queue;
  std::string queue_name = "ingestd-unpack";
  /// 0: worker.max_in_flight.
  int max_in_flight = 0;
  int max_attempts = 3;
  std::vector<std::chrono::seconds> retry_backoff{std::chrono::minutes{5},
                                                  std::chrono::minutes{30}};
  bool dead_letter = false;
  size_t max_file_bytes = size_t{50} << 20;
  /// How many containers deep the unpacking goes (a submitted container is the first): a
  /// container whose member is a container beyond it fails whole ("container.too_deep").
  int max_depth = 3;
  /// Where the children's messages go: documents to the ingest stage's queue, containers to this
  /// stage's own.
  std::string ingest_queue = "ingestd-ingest";
};

std::shared_ptr<stage> make_unpack_stage(std::shared_ptr<const unpack_ports> ports,
                                         const unpack_settings& settings);

/// The stage's queue.
std::vector<queue_spec> unpack_queues(const config& cfg);

/// The stage as the configuration asks for it.
result<std::vector<std::shared_ptr<const stage>>> unpack_stages(stage_env& env);

} // namespace ingestd
