// The intake's options as a configuration gives them: the file limit, where each kind of document
// starts (the ingest stage's queue, its large size class's, the unpack stage's for containers),
// how a document's pages are counted for its size class, and the HTTP intake's credentials.
#pragma once

#include <memory>

#include "adapters/support/cpu_executor.hpp"
#include "config/config.hpp"
#include "intake/intake_access.hpp"
#include "intake/intake_service.hpp"

namespace ingestd {

/// `decoder`: the helpers that count a document's pages for its size class (null: in process).
intake_options intake_options_of(const config& cfg,
                                 std::shared_ptr<sandbox::decoder> decoder = nullptr);

class pg_intake_repository;

/// The HTTP intake's credentials: INGESTD_INTAKE_TOKEN's tenant tokens, INGESTD_INTAKE_ADMIN_TOKEN
/// and the tenant tokens stored in `db` (each look-up within 5 s). Errors (permanent): a bad
/// INGESTD_INTAKE_TOKEN ("config.bad_token"), a token shorter than
/// http_server::min_token_length ("config.weak_token").
result<std::shared_ptr<intake_access>>
intake_access_of(const config& cfg, const std::shared_ptr<pg_intake_repository>& db);

} // namespace ingestd
