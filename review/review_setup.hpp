// The review desk as `ingestd run` starts it: checked against the configuration before anything
// connects, then built over the node's storage and CPU pool and mounted on its admin endpoint.
#pragma once

#include <memory>
#include <string>

#include "config/config.hpp"
#include "messages/result.hpp"

namespace ingestd {

class admin_server;
class object_store;
class cpu_executor;

/// With review.enabled: admin.port must not be 0, INGESTD_REVIEW_TOKEN must parse with every
/// token at least http_server::min_token_length characters long, and an open desk (no token)
/// needs a loopback admin.bind. Errors are permanent and name the key or the variable.
result<void> check_review_config(const config& cfg);

/// Builds the desk and mounts it on `admin` (before admin.start()).
/// A reprocess's ingestion gets its message on the ingest queue (cfg.queue.name), an outbox row
/// with SQS.
result<void> mount_review_desk(admin_server& admin, const config& cfg,
                               std::shared_ptr<object_store> storage,
                               std::shared_ptr<cpu_executor> cpu);

/// "http://127.0.0.1:9464/review" for the bound admin port.
std::string review_address(const config& cfg, int port);

} // namespace ingestd
