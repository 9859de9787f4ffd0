#include "app/intake_setup.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/http_server/checks.hpp"
#include "adapters/ocr/document_source.hpp"
#include "adapters/sandbox/decoder.hpp"
#include "app/queues.hpp"
#include "app/runtime.hpp"
#include "stages/registry.hpp"

namespace ingestd {

result<std::vector<mailbox>> configured_mailboxes(const config& cfg) {
  auto entries = mailboxes_of(cfg.acquisition.mailboxes);
  if (!entries)
    return entries.error();
  std::vector<mailbox> out;
  for (auto& e : *entries) {
    const char* password = std::getenv(e.password_env.c_str());
    if (password == nullptr || *password == '\0')
      return error::make_permanent("config.mailbox_password",
                                   e.password_env + " is not set: the password of " + e.user
                                       + " at " + e.url + " (acquisition.mailboxes)");
    mailbox m;
    m.tenant_id = *uuid::parse(e.tenant);
    m.imap.url = e.url;
    m.imap.user = e.user;
    m.imap.password = password;
    m.imap.processed_folder = e.processed_folder;
    m.imap.ca_file = cfg.acquisition.ca_file;
    m.imap.timeout = std::chrono::seconds{cfg.acquisition.timeout_seconds};
    out.push_back(std::move(m));
  }
  return out;
}

result<std::vector<inbound_bucket>> configured_buckets(const config& cfg, runtime& rt) {
  auto entries = buckets_of(cfg.acquisition.buckets);
  if (!entries)
    return entries.error();
  std::vector<inbound_bucket> out;
  for (auto& e : *entries) {
    inbound_bucket b;
    b.tenant_id = *uuid::parse(e.tenant);
    b.bucket = e.bucket;
    b.prefix = e.prefix;
    auto q = open_sqs_queue_named(cfg, e.queue, "notifications of bucket " + e.bucket,
                                  [&rt] { return rt.providers->http(); });
    if (!q)
      return q.error();
    b.notifications = std::move(*q);
    auto objects = rt.open_bucket(e.bucket);
    if (!objects)
      return objects.error();
    b.objects = std::move(*objects);
    out.push_back(std::move(b));
  }
  return out;
}

intake_options intake_options_of(const config& cfg, std::shared_ptr<sandbox::decoder> decoder) {
  intake_options opts;
  opts.max_bytes = static_cast<size_t>(
      std::min(cfg.transcription.max_file_bytes, cfg.storage.max_object_bytes));
  opts.ingest_queue = cfg.queue.name;
  if (stage_enabled(cfg, "unpack"))
    opts.unpack_queue = cfg.containers.queue_name;
  for (const auto& spec : configured_queues(cfg))
    opts.stage_queues.emplace_back(spec.stage, spec.name);
  opts.via_outbox = cfg.queue.backend == "sqs";
  if (!cfg.classes.enabled)
    return opts;
  opts.large_queue = cfg.classes.large_queue_name;
  opts.large_min_bytes = static_cast<size_t>(cfg.classes.large_min_bytes);
  opts.large_min_pages = cfg.classes.large_min_pages;
  // The page count as the OCR opens the document (without decoding a page), in a decoder
  // helper; a document it cannot open counts 0 pages and is routed by its size alone (the OCR
  // reports the problem).
  opts.count_pages = [max_pages = cfg.transcription.max_pages,
                      decoder = std::move(decoder)](std::string_view bytes, std::string_view mime) {
    document_limits limits;
    limits.max_file_bytes = bytes.size() + 1;
    limits.max_pages = std::max(max_pages, 100000);
    auto n = decoder
                 ? sandbox::count_pages(*decoder, bytes, mime, limits,
                                        std::chrono::steady_clock::now() + std::chrono::seconds{30})
                 : count_pages(std::string{bytes}, mime, limits);
    return n ? *n : 0;
  };
  return opts;
}

result<std::shared_ptr<intake_access>>
intake_access_of(const config& cfg, const std::shared_ptr<pg_intake_repository>& db) {
  auto tokens = http_server::tenant_tokens::parse(
      cfg.secrets.intake_token, uuid::parse(cfg.intake.default_tenant), "INGESTD_INTAKE_TOKEN");
  if (!tokens)
    return tokens.error();
  auto weak = [](const char* variable, size_t length) -> result<void> {
    if (length == 0 || length >= http_server::min_token_length)
      return {};
    return error::make_permanent(
        "config.weak_token", std::string{variable} + " holds a token of " + std::to_string(length)
                                 + " characters; each token must have at least "
                                 + std::to_string(http_server::min_token_length)
                                 + " (for example: openssl rand -hex 32)");
  };
  if (auto ok = weak("INGESTD_INTAKE_TOKEN", tokens->shortest()); !ok)
    return ok.error();
  if (auto ok = weak("INGESTD_INTAKE_ADMIN_TOKEN", cfg.secrets.intake_admin_token.size()); !ok)
    return ok.error();
  const std::chrono::milliseconds deadline{5000};
  intake_access::stored_lookup lookup
      = [db, deadline](const std::string& digest) { return db->tenant_of_token(digest, deadline); };
  intake_access::stored_any any = [db, deadline] { return db->any_tenant_token(deadline); };
  return std::make_shared<intake_access>(std::move(*tokens), cfg.secrets.intake_admin_token,
                                         uuid::parse(cfg.intake.default_tenant), std::move(lookup),
                                         std::move(any));
}

} // namespace ingestd
