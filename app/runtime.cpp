// Builds the configured adapters that a process shares.
#include "app/runtime.hpp"

#include <algorithm>

#include "actors/node_context.hpp"
#include "adapters/aws/aws_credentials.hpp"
#include "adapters/db/pg_outbox_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/notify/event_webhook_sink.hpp"
#include "adapters/notify/queue_event_sink.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "adapters/storage/s3_store.hpp"
#include "app/queues.hpp"
#include "review/review_setup.hpp"

namespace ingestd {

result<std::shared_ptr<queue>> runtime::open_queue(const queue_spec& spec) {
  if (auto it = queues.find(spec.name); it != queues.end())
    return it->second;
  auto q = ingestd::open_queue(
      *cfg, spec, [this] { return providers->http(); }, require_queues);
  if (!q)
    return q.error();
  queues[spec.name] = *q;
  return *q;
}

result<std::shared_ptr<object_store>> runtime::open_bucket(const std::string& bucket) {
  auto creds = aws::credentials_from_env();
  if (!creds)
    return creds.error();
  s3_options opts;
  opts.credentials = *creds;
  opts.region = cfg->aws.region;
  opts.endpoint = cfg->aws.endpoint;
  opts.bucket = bucket;
  opts.path_style = cfg->storage.path_style;
  return std::shared_ptr<object_store>{std::make_shared<s3_store>(providers->http(), opts)};
}

result<std::unique_ptr<runtime>> make_runtime(const config& cfg, cpu_executor& cpu,
                                              runtime_parts parts) {
  auto rt = std::make_unique<runtime>();
  rt->cfg = &cfg;
  rt->require_queues = parts.require_queues;
  rt->providers = std::make_unique<provider_set>(cfg, cpu);
  rt->session = pg::session_options{std::chrono::seconds{cfg.database.statement_timeout_seconds},
                                    std::chrono::seconds{cfg.database.lock_timeout_seconds},
                                    std::chrono::seconds{cfg.database.tcp_user_timeout_seconds}};
  bool via_outbox = cfg.queue.backend == "sqs";

  if (parts.storage) {
    if (cfg.storage.backend == "filesystem") {
      // Local file I/O is quick: one thread keeps the thread count low.
      rt->storage = std::make_shared<filesystem_store>(cfg.storage.root, 1);
    } else {
      auto bucket = rt->open_bucket(cfg.storage.bucket);
      if (!bucket)
        return bucket.error();
      rt->storage = std::move(*bucket);
    }
  }

  if (parts.database) {
    // Claims, completions and audit rows of concurrent jobs coalesce into few statements.
    rt->work = std::make_shared<pg_work_repository>(
        cfg.database.url, pg_work_options{cfg.database.pool_size, rt->session, via_outbox});
    if (via_outbox || parts.event_sinks)
      rt->outbox = std::make_shared<pg_outbox_repository>(cfg.database.url, rt->session);
  }

  if (parts.event_sinks) {
    // The status event stream's sinks: the webhook when INGESTD_EVENTS_WEBHOOK_URL is set, SQS
    // when outbox.events_sqs_queue names a queue, the failure notifier when
    // INGESTD_NOTIFY_WEBHOOK_URL is set (it takes the failure events only).
    event_webhook_options hook{cfg.secrets.events_webhook_url, cfg.secrets.events_webhook_secret};
    if (auto valid = validate(hook); !valid)
      return valid.error();
    if (!hook.url.empty()) {
      auto destination = event_sink_destination("webhook");
      rt->event_sinks[destination]
          = std::make_shared<event_webhook_sink>(rt->providers->webhook_client(), hook);
      rt->event_sink_types[destination] = name_list(cfg.outbox.events_webhook_types);
    }
    if (!cfg.outbox.events_sqs_queue.empty()) {
      auto q = open_sqs_queue_named(cfg, cfg.outbox.events_sqs_queue, "events",
                                    [&rt] { return rt->providers->http(); });
      if (!q)
        return q.error();
      auto destination = event_sink_destination("sqs");
      rt->event_sinks[destination] = std::make_shared<queue_event_sink>(std::move(*q));
      rt->event_sink_types[destination] = name_list(cfg.outbox.events_sqs_types);
    }
    if (!cfg.secrets.notify_webhook_url.empty()) {
      webhook_options opts;
      opts.url = cfg.secrets.notify_webhook_url;
      if (!cfg.notify.link_template.empty())
        opts.link_template = cfg.notify.link_template;
      else if (cfg.review.enabled && cfg.admin.port != 0)
        // The review desk's document page, where the person resolves it.
        opts.link_template = review_address(cfg, cfg.admin.port) + "/documents/{document_id}";
      opts.worker_id = make_node_settings(cfg).worker_id;
      auto destination = event_sink_destination("notify");
      rt->event_sinks[destination]
          = std::make_shared<webhook_notifier>(rt->providers->webhook_client(), opts);
      rt->event_sink_types[destination] = failure_event_types();
    }
  }
  return rt;
}

sandbox::helper_pool_options decoder_pool_options(const config& cfg, int helpers) {
  tesseract_settings tesseract;
  tesseract.languages = cfg.transcription.languages;
  tesseract.other_languages = cfg.transcription.other_languages;
  auto document = static_cast<uint64_t>(
      std::max<int64_t>({cfg.transcription.max_file_bytes, cfg.storage.max_object_bytes, 0}));
  // An unpack answer holds every member and their names.
  auto members = static_cast<uint64_t>(std::max<int64_t>(cfg.containers.max_total_bytes, 0))
                 + static_cast<uint64_t>(std::max(cfg.containers.max_members, 0)) * 4096;
  auto options = sandbox::default_pool_options(helpers, tesseract, document, members);
  options.memory_limit_bytes = static_cast<uint64_t>(cfg.transcription.decoder_memory_bytes);
  return options;
}

stage_env stage_env_of(runtime& rt, std::shared_ptr<cpu_executor> cpu) {
  return stage_env{*rt.cfg,
                   rt.storage,
                   std::move(cpu),
                   *rt.providers,
                   [&rt](const queue_spec& spec) { return rt.open_queue(spec); },
                   rt.session,
                   rt.cfg->database.pool_size,
                   rt.cfg->queue.backend == "sqs"};
}

} // namespace ingestd
