// Size classes (seed 004) as a configuration asks for them: the ingest stage once per class this
// node serves (worker.classes), and intake's routing by size and page count.
#pragma once

#include <memory>
#include <vector>

#include "actors/stage.hpp"
#include "actors/worker_context.hpp"
#include "config/config.hpp"
#include "intake/intake_service.hpp"

namespace ingestd {

/// The ingest stage of each class in worker.classes (classes.enabled), over the context's
/// ingest_queue (small) and large_ingest_queue; `ingest_max_in_flight` caps each (0: none).
std::vector<std::shared_ptr<stage>> make_size_class_stages(const config& cfg, const worker_context& ctx,
                                                           int ingest_max_in_flight);

/// Sets intake's routing (thresholds, the large queue, a page counter) when classes.enabled.
void configure_intake_classes(const config& cfg, const worker_ports& ports, intake_options& opts);

} // namespace ingestd
