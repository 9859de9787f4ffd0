// The intake's options as a configuration gives them: the file limit, where each kind of document
// starts (the ingest stage's queue, its large size class's, the unpack stage's for containers),
// how a document's pages are counted for its size class, the HTTP intake's credentials, and the
// mailboxes and buckets read for documents.
#pragma once

#include <memory>
#include <vector>

#include "adapters/support/cpu_executor.hpp"
#include "config/config.hpp"
#include "intake/bucket_intake.hpp"
#include "intake/intake_access.hpp"
#include "intake/intake_service.hpp"
#include "intake/mailbox_intake.hpp"

namespace ingestd {

/// `decoder`: the helpers that count a document's pages for its size class (null: in process).
intake_options intake_options_of(const config& cfg,
                                 std::shared_ptr<sandbox::decoder> decoder = nullptr);

/// The mailboxes of acquisition.mailboxes with their passwords from the environment.
/// Errors (permanent): "config.mailbox_password" when a mailbox's password variable is unset.
result<std::vector<mailbox>> configured_mailboxes(const config& cfg);

struct runtime;

/// The buckets of acquisition.buckets, each with its notification queue and its objects on the
/// configured S3 endpoint. Errors: a queue that cannot be opened (transient or permanent, as the
/// queue says), credentials missing from the environment.
result<std::vector<inbound_bucket>> configured_buckets(const config& cfg, runtime& rt);

class pg_intake_repository;

/// The HTTP intake's credentials: INGESTD_INTAKE_TOKEN's tenant tokens, INGESTD_INTAKE_ADMIN_TOKEN
/// and the tenant tokens stored in `db` (each look-up within 5 s). Errors (permanent): a bad
/// INGESTD_INTAKE_TOKEN ("config.bad_token"), a token shorter than
/// http_server::min_token_length ("config.weak_token").
result<std::shared_ptr<intake_access>>
intake_access_of(const config& cfg, const std::shared_ptr<pg_intake_repository>& db);

} // namespace ingestd
