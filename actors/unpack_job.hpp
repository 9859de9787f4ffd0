// The unpack stage (issue 14): a container (ZIP, TAR, .tar.gz, e-mail, mbox) taken apart into
// child documents, each with its own ingestion and queue message.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "actors/stage.hpp"
#include "actors/worker_context.hpp"

namespace ingestd {

struct unpack_stage_settings {
  std::shared_ptr<ingestd::queue> queue;
  std::string queue_name = "ingestd-unpack";
  /// 0: worker.max_in_flight.
  int max_in_flight = 0;
  /// How many containers deep the unpacking goes (a submitted container is the first): a
  /// container whose member is a container beyond it fails whole ("container.too_deep").
  int max_depth = 3;
};

/// The unpack stage over the context's ports (db for the claim, containers, unpacker, storage).
std::shared_ptr<stage> make_unpack_stage(const worker_context& ctx, unpack_stage_settings settings);

} // namespace ingestd
