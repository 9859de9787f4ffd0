// Builds the configured adapters.
#include "app/runtime.hpp"

#include <algorithm>

#include "adapters/aws/aws_credentials.hpp"
#include "adapters/db/batching_repository.hpp"
#include "adapters/db/pg_container_repository.hpp"
#include "adapters/db/pg_matching_repository.hpp"
#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/db/pg_repository.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/http/rate_limited_client.hpp"
#include "adapters/extraction/fallback_extractor.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/ocr/recovering_transcriber.hpp"
#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/matching/llm_matcher.hpp"
#include "adapters/matching/local_matcher.hpp"
#include "adapters/notify/event_webhook_sink.hpp"
#include "adapters/notify/queue_event_sink.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "adapters/ocr/document_ai_transcriber.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/queue/sqs_queue.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "adapters/storage/s3_store.hpp"
#include "app/queues.hpp"
#include "config/providers.hpp"
#include "review/review_setup.hpp"
#include "adapters/support/blocking_call.hpp"
#include "adapters/support/log.hpp"

namespace ingestd {

// Members go in reverse order of declaration: `ports` (its own members in reverse), then `http`.
runtime::~runtime() = default;

result<std::unique_ptr<runtime>> make_runtime(const config& cfg, cpu_executor& cpu, runtime_parts parts) {
  auto rt = std::make_unique<runtime>();
  // The HTTP engine's thread exists only when a backend speaks HTTP (SQS, S3, Document AI, the
  // LLM, the webhook); the embedded default (Postgres, files, Tesseract, local rules) has none.
  auto http = [&rt, &cfg] {
    if (!rt->http) {
      curl_engine_options opts;
      opts.max_total_connections = cfg.http.max_total_connections;
      opts.max_connections_per_host = cfg.http.max_connections_per_host;
      opts.connection_cache_size = cfg.http.connection_cache_size;
      rt->http = std::make_shared<curl_engine>(opts);
    }
    return rt->http;
  };
  // One limiter per provider, shared by its adapters (the extractor and the matcher both call the
  // LLM), even without limits: its figures show each provider's traffic in /metrics.
  auto wait_ms = std::chrono::milliseconds{std::chrono::seconds{cfg.limits.max_wait_seconds}};
  auto provider = [&rt, &http](const std::string& name, provider_limits limits) -> http_client& {
    for (auto& l : rt->limiters)
      if (l->provider() == name)
        return *l;
    auto engine = http();
    rt->limiters.push_back(std::make_shared<rate_limited_client>(name, *engine, *engine, limits));
    return *rt->limiters.back();
  };
  auto llm_http = [&]() -> http_client& {
    return provider("llm", provider_limits{cfg.limits.llm_max_concurrent, cfg.limits.llm_requests_per_minute,
                                           cfg.limits.llm_tokens_per_minute, wait_ms});
  };
  auto webhook = [&]() -> http_client& {
    return provider("webhook", provider_limits{cfg.limits.webhook_max_concurrent,
                                               cfg.limits.webhook_requests_per_minute, 0, wait_ms});
  };

  bool aws_needed = parts.storage && cfg.storage.backend == "s3";
  aws::aws_credentials creds;
  if (aws_needed) {
    auto c = aws::credentials_from_env();
    if (!c)
      return c.error();
    creds = *c;
  }

  pg::session_options session{std::chrono::seconds{cfg.database.statement_timeout_seconds},
                              std::chrono::seconds{cfg.database.lock_timeout_seconds},
                              std::chrono::seconds{cfg.database.tcp_user_timeout_seconds}};
  if (parts.database) {
    // A completed ingestion makes its matching job in the same statement: a Postgres queue row,
    // or an outbox row the relay sends to SQS.
    next_job_options next;
    if (stage_enabled(cfg, "match"))
      next = {cfg.matching.queue_name, cfg.queue.backend == "sqs"};
    // Claims, completions and audit events of concurrent jobs coalesced into few statements.
    rt->ports.db = std::make_shared<batching_repository>(std::make_shared<pg_repository>(
      cfg.database.url, pg_repository_options{cfg.database.pool_size, session, next}));
    bool unpack = stage_enabled(cfg, "unpack");
    if (next.via_outbox || (unpack && cfg.queue.backend == "sqs") || parts.event_sinks)
      rt->outbox = std::make_shared<pg_outbox_repository>(cfg.database.url, session);
    if (unpack) {
      // A container's children are written with its unpacking's completion, their messages in
      // the same transaction (or through the outbox on SQS).
      rt->ports.containers = std::make_shared<pg_container_repository>(
        cfg.database.url, container_queues{cfg.queue.name, cfg.containers.queue_name, cfg.queue.backend == "sqs"},
        1, session);
    }
  }

  if (parts.event_sinks) {
    // The status event stream's sinks: the webhook when INGESTD_EVENTS_WEBHOOK_URL is set, SQS
    // when outbox.events_sqs_queue names a queue.
    event_webhook_options hook{cfg.secrets.events_webhook_url, cfg.secrets.events_webhook_secret};
    if (auto valid = validate(hook); !valid)
      return valid.error();
    if (!hook.url.empty())
      rt->event_sinks[event_sink_destination("webhook")] = std::make_shared<event_webhook_sink>(webhook(), hook);
    if (!cfg.outbox.events_sqs_queue.empty()) {
      auto q = open_event_queue(cfg, http);
      if (!q)
        return q.error();
      rt->event_sinks[event_sink_destination("sqs")] = std::make_shared<queue_event_sink>(std::move(*q));
    }
  }

  if (parts.queue) {
    // Each enabled stage's queue; a missing one stops the node with a message naming it.
    for (auto& spec : configured_queues(cfg)) {
      auto q = open_queue(cfg, spec, http, parts.require_queues);
      if (!q)
        return q.error();
      (spec.stage == "match"          ? rt->ports.match_queue
       : spec.stage == "unpack"       ? rt->ports.unpack_queue
       : spec.stage == "ingest.large" ? rt->ports.large_ingest_queue
                                      : rt->ports.ingest_queue) = std::move(*q);
    }
  }

  if (parts.storage) {
    if (cfg.storage.backend == "filesystem") {
      // Local file I/O is quick: one thread keeps the thread count low.
      rt->ports.storage = std::make_shared<filesystem_store>(cfg.storage.root, 1);
    } else {
      s3_options opts;
      opts.credentials = creds;
      opts.region = cfg.aws.region;
      opts.endpoint = cfg.aws.endpoint;
      opts.bucket = cfg.storage.bucket;
      opts.path_style = cfg.storage.path_style;
      rt->ports.storage = std::make_shared<s3_store>(http(), opts);
    }
  }

  // Every provider whose configuration is complete, by name (config/providers.hpp): the
  // configured ones serve every ingestion, the others those a reprocess chose them for.
  if (cfg.transcription.provider == "document_ai" && cfg.secrets.document_ai_token.empty())
    return error::make_permanent("config.secret_missing",
                                 "transcription.provider is document_ai but INGESTD_DOCUMENT_AI_TOKEN is not set");
  auto tesseract = [&]() -> std::shared_ptr<transcriber> {
    auto opts = make_local_transcriber_options(
      cfg.transcription.languages, static_cast<size_t>(cfg.transcription.max_file_bytes),
      cfg.transcription.max_pages, std::chrono::seconds{cfg.transcription.timeout_seconds});
    return std::make_shared<local_transcriber>(cpu, opts);
  };
  auto document_ai = [&]() -> std::shared_ptr<transcriber> {
    document_ai_options opts;
    opts.endpoint = cfg.transcription.document_ai_endpoint;
    opts.access_token = cfg.secrets.document_ai_token;
    opts.timeout = std::chrono::seconds{cfg.transcription.timeout_seconds};
    opts.max_file_bytes = static_cast<size_t>(cfg.transcription.max_file_bytes);
    // Seed 004's recovery: a document Document AI refuses goes to Tesseract; a poor reading is
    // preprocessed and sent once more.
    // The local provider's own page limit: a document over Document AI's is what it is there for.
    document_limits defaults;
    auto local = make_local_transcriber_options(
      cfg.transcription.languages, static_cast<size_t>(cfg.transcription.max_file_bytes),
      std::max(cfg.transcription.max_pages, defaults.max_pages),
      std::chrono::seconds{cfg.transcription.timeout_seconds});
    auto& limited = provider("document_ai",
                             provider_limits{cfg.limits.document_ai_max_concurrent,
                                             cfg.limits.document_ai_requests_per_minute, 0, wait_ms});
    return std::make_shared<recovering_transcriber>(
      std::make_shared<document_ai_transcriber>(limited, opts), std::make_shared<local_transcriber>(cpu, local),
      cpu, local.limits);
  };
  for (auto& name : available_transcription_providers(cfg))
    rt->ports.transcribers[name] = name == "document_ai" ? document_ai() : tesseract();
  rt->ports.ocr = rt->ports.transcribers.at(cfg.transcription.provider);

  auto llm = [&]() -> std::shared_ptr<extractor> {
    if (cfg.secrets.llm_api_key.empty())
      log::warn("the LLM extractor has no INGESTD_LLM_API_KEY: requests go without a key");
    openai_options opts;
    opts.base_url = cfg.extraction.llm_base_url;
    opts.api_key = cfg.secrets.llm_api_key;
    opts.model = cfg.extraction.llm_model;
    opts.request_timeout = std::chrono::seconds{cfg.extraction.timeout_seconds};
    opts.max_attempts = cfg.extraction.max_attempts;
    // The engine's thread also runs the retry back-off.
    // Seed 004's recovery: a text too long for the model goes to the local rules, for review.
    return std::make_shared<fallback_extractor>(
      std::make_shared<openai_extractor>(llm_http(), *http(), opts), std::make_shared<local_extractor>());
  };
  for (auto& name : available_extraction_providers(cfg))
    rt->ports.extractors[name] = name == "llm" ? llm() : std::make_shared<local_extractor>();
  rt->ports.extract = rt->ports.extractors.at(cfg.extraction.provider);

  if (stage_enabled(cfg, "unpack")) {
    unpack_limits limits;
    limits.max_total_bytes = static_cast<uint64_t>(cfg.containers.max_total_bytes);
    limits.max_members = cfg.containers.max_members;
    limits.max_ratio = cfg.containers.max_ratio;
    limits.max_member_bytes = static_cast<uint64_t>(cfg.containers.max_member_bytes);
    rt->ports.unpacker = std::make_shared<container_unpacker>(cpu, limits,
                                                              std::chrono::seconds{cfg.containers.timeout_seconds});
  }

  if (parts.database && stage_enabled(cfg, "match")) {
    // Its own connections: a write phase waiting for its tenant's lock never holds up ingestion.
    rt->ports.matching = std::make_shared<pg_matching_repository>(
      cfg.database.url, pg_repository_options{cfg.database.pool_size, session});
    if (cfg.matching.provider == "local") {
      rt->ports.match = std::make_shared<local_matcher>();
    } else {
      llm_matcher_options opts;
      opts.base_url = cfg.extraction.llm_base_url;
      opts.api_key = cfg.secrets.llm_api_key;
      opts.model = cfg.matching.llm_model.empty() ? cfg.extraction.llm_model : cfg.matching.llm_model;
      opts.request_timeout = std::chrono::seconds{cfg.matching.timeout_seconds};
      opts.max_candidates = static_cast<size_t>(cfg.matching.candidate_limit);
      // The engine's thread also runs the retry back-off (seed 003: 2 s, 4 s, 8 s).
      rt->ports.match = std::make_shared<llm_matcher>(llm_http(), *http(), opts);
    }
  }

  if (!cfg.secrets.notify_webhook_url.empty()) {
    webhook_options opts;
    opts.url = cfg.secrets.notify_webhook_url;
    if (!cfg.notify.link_template.empty())
      opts.link_template = cfg.notify.link_template;
    else if (cfg.review.enabled && cfg.admin.port != 0)
      // The review desk's document page, where the person resolves it.
      opts.link_template = review_address(cfg, cfg.admin.port) + "/documents/{document_id}";
    opts.worker_id = make_worker_settings(cfg).worker_id;
    auto notifier = std::make_shared<webhook_notifier>(webhook(), opts);
    rt->ports.on_failed = [notifier](const claimed_ingestion& c, const error& e, int32_t attempts) {
      notifier->notify_failed(failure_notice{c.ingestion_id.str(), c.document_id.str(), c.tenant_id.str(),
                                             e.describe(), std::string{to_string(e.cls)}, attempts},
                              [](const result<void>&) {});
    };
    rt->ports.on_matching_failed = [notifier](const matching_claim& c, const error& e, int32_t attempts) {
      notifier->notify_failed(failure_notice{"", c.document_id.str(), c.tenant_id.str(), e.describe(),
                                             std::string{to_string(e.cls)}, attempts, "match"},
                              [](const result<void>&) {});
    };
  }
  return rt;
}

} // namespace ingestd
