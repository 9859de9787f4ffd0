#include "app/size_classes.hpp"

#include <algorithm>
#include <string>

#include "actors/ingest_job.hpp"
#include "adapters/ocr/document_source.hpp"

namespace ingestd {

std::vector<std::shared_ptr<stage>> make_size_class_stages(const config& cfg, const worker_context& ctx,
                                                           int ingest_max_in_flight) {
  std::vector<std::shared_ptr<stage>> out;
  auto served = stage_list(cfg.worker.classes);
  auto serves = [&](const char* c) { return std::find(served.begin(), served.end(), c) != served.end(); };
  if (serves("small")) {
    size_class_settings small;
    small.name = "small";
    small.queue = ctx.ports.ingest_queue;
    small.queue_name = cfg.queue.name;
    small.weight = cfg.classes.small_weight;
    small.step_timeout = std::chrono::seconds{cfg.worker.step_timeout_seconds};
    small.ocr_timeout = std::chrono::seconds{cfg.transcription.timeout_seconds};
    small.escalate_to = ctx.ports.large_ingest_queue;
    small.class_max_attempts = cfg.classes.small_max_attempts;
    small.max_in_flight = ingest_max_in_flight;
    out.push_back(make_ingest_class_stage(ctx, small));
  }
  if (serves("large")) {
    size_class_settings large;
    large.name = "large";
    large.queue = ctx.ports.large_ingest_queue;
    large.queue_name = cfg.classes.large_queue_name;
    large.weight = cfg.classes.large_weight;
    large.step_timeout = std::chrono::seconds{cfg.classes.large_step_timeout_seconds};
    large.ocr_timeout = std::chrono::seconds{cfg.classes.large_ocr_timeout_seconds};
    large.class_max_attempts = cfg.classes.large_max_attempts;
    large.max_in_flight = ingest_max_in_flight;
    out.push_back(make_ingest_class_stage(ctx, large));
  }
  return out;
}

void configure_intake_classes(const config& cfg, const worker_ports& ports, intake_options& opts) {
  if (!cfg.classes.enabled || !ports.large_ingest_queue)
    return;
  opts.large_queue = ports.large_ingest_queue;
  opts.large_min_bytes = static_cast<size_t>(cfg.classes.large_min_bytes);
  opts.large_min_pages = cfg.classes.large_min_pages;
  // The page count as the OCR opens the document (without rendering a page); a document it
  // cannot open counts 0 pages and is routed by its size alone (the OCR reports the problem).
  opts.count_pages = [max_pages = cfg.transcription.max_pages](std::string_view bytes, std::string_view mime) {
    document_limits limits;
    limits.max_file_bytes = bytes.size() + 1;
    limits.max_pages = std::max(max_pages, 100000);
    auto src = open_document(std::make_shared<const std::string>(bytes), mime, limits);
    return src ? (*src)->page_count() : 0;
  };
}

} // namespace ingestd
