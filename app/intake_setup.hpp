// The intake's options as a configuration gives them: the file limit, where each kind of document
// starts (the ingest stage's queue, its large size class's, the unpack stage's for containers),
// and how a document's pages are counted for its size class.
#pragma once

#include <memory>

#include "adapters/support/cpu_executor.hpp"
#include "config/config.hpp"
#include "intake/intake_service.hpp"

namespace ingestd {

/// `decoder`: the helpers that count a document's pages for its size class (null: in process).
intake_options intake_options_of(const config& cfg,
                                 std::shared_ptr<sandbox::decoder> decoder = nullptr);

} // namespace ingestd
