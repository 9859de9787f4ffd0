// The ingest stage (seed 000): claim an ingestion, fetch its file, transcribe it (or reuse a
// stored transcription), extract the fields, run the quality gate and complete it.
#pragma once

#include <memory>

#include "actors/stage.hpp"
#include "actors/worker_context.hpp"

namespace ingestd {

/// The ingest stage over the context's ports (ingest_queue, db, storage, ocr, extract) and
/// settings (max_in_flight, max_attempts, retry_backoff, dead_letter_on_final_failure).
std::shared_ptr<stage> make_ingest_stage(const worker_context& ctx);

} // namespace ingestd
