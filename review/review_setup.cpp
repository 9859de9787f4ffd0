// The review desk's start-up: configuration checks and wiring onto the admin endpoint.
#include "review/review_setup.hpp"

#include "adapters/db/pg_review_repository.hpp"
#include "adapters/http_server/checks.hpp"
#include "adapters/http_server/server.hpp"
#include "admin/admin_server.hpp"
#include "config/providers.hpp"
#include "review/review_desk.hpp"
#include "review/review_service.hpp"

namespace ingestd {

namespace {

result<http_server::tenant_tokens> tokens_of(const config& cfg) {
  return http_server::tenant_tokens::parse(
      cfg.secrets.review_token, uuid::parse(cfg.intake.default_tenant), "INGESTD_REVIEW_TOKEN");
}

} // namespace

result<void> check_review_config(const config& cfg) {
  if (!cfg.review.enabled)
    return {};
  if (cfg.admin.port == 0)
    return error::make_permanent("config.invalid",
                                 "review.enabled is true but admin.port is 0: the review desk is "
                                 "served by the admin endpoint; give admin.port a port");
  auto tokens = tokens_of(cfg);
  if (!tokens)
    return tokens.error();
  if (tokens->empty() && !uuid::parse(cfg.intake.default_tenant))
    return error::make_permanent("config.invalid",
                                 "review.enabled is true without INGESTD_REVIEW_TOKEN and "
                                 "intake.default_tenant is empty: the open desk has no tenant");
  if (!tokens->empty() && tokens->shortest() < http_server::min_token_length)
    return error::make_permanent("review.weak_token",
                                 "INGESTD_REVIEW_TOKEN holds a token of "
                                     + std::to_string(tokens->shortest())
                                     + " characters; each token must have at least "
                                     + std::to_string(http_server::min_token_length)
                                     + " (for example: openssl rand -hex 32)");
  return check_review_exposure(cfg.admin.bind, *tokens);
}

result<void> mount_review_desk(admin_server& admin, const config& cfg,
                               std::shared_ptr<object_store> storage,
                               std::shared_ptr<cpu_executor> cpu) {
  auto tokens = tokens_of(cfg);
  if (!tokens)
    return tokens.error();
  review_options opts;
  opts.max_file_bytes = static_cast<size_t>(cfg.storage.max_object_bytes);
  // The providers the node's runtime builds from the same configuration.
  opts.providers = {available_transcription_providers(cfg), available_extraction_providers(cfg)};
  auto service = std::make_shared<review_service>(
      std::make_shared<pg_review_repository>(cfg.database.url, cfg.queue.name,
                                             cfg.queue.backend == "sqs"),
      std::move(storage), std::move(cpu), opts);
  review_desk_options desk_opts;
  desk_opts.tokens = std::move(*tokens);
  desk_opts.default_tenant = uuid::parse(cfg.intake.default_tenant);
  desk_opts.secure_cookie = cfg.review.secure_cookie;
  desk_opts.session_lifetime = std::chrono::minutes{cfg.review.session_lifetime_minutes};
  desk_opts.max_sessions = static_cast<size_t>(cfg.review.max_sessions);
  desk_opts.sign_in_attempts_per_minute = cfg.review.sign_in_attempts_per_minute;
  auto desk = std::make_shared<review_desk>(std::move(service), std::move(desk_opts));
  // A few reviewers at once, each page loading its image beside the probes and scrapes.
  admin.mount([desk](http_server::server& svr) { desk->mount(svr); }, 4);
  return {};
}

std::string review_address(const config& cfg, int port) {
  auto host = cfg.admin.bind;
  if (host == "0.0.0.0" || host == "::" || host.empty())
    host = "127.0.0.1";
  if (host.find(':') != std::string::npos)
    host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(port) + "/review";
}

} // namespace ingestd
