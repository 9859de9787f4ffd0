// Every configuration key: its section, name, field, default, range or choices, and the rules
// that make it required or tie it to other keys. One table; config.cpp reads, checks and prints
// through it.
#include "config/config_table.hpp"

#include <algorithm>
#include <cctype>

#include "messages/event_types.hpp"
#include "messages/priority.hpp"
#include "messages/uuid.hpp"

namespace ingestd::config_table {

namespace {

/// The string must be non-empty, when `applies` holds (always when it is null).
rule required(std::string expected, bool (*applies)(const config&) = nullptr) {
  return [expected = std::move(expected), applies](const config& c,
                                                   const value& v) -> std::optional<std::string> {
    if ((applies == nullptr || applies(c)) && std::get<std::string>(v).empty())
      return expected;
    return std::nullopt;
  };
}

/// The string must start with one of `schemes`, when `applies` holds (always when it is null).
rule url_of(std::vector<std::string> schemes, std::string expected,
            bool (*applies)(const config&) = nullptr) {
  return [schemes = std::move(schemes), expected = std::move(expected),
          applies](const config& c, const value& v) -> std::optional<std::string> {
    if (applies != nullptr && !applies(c))
      return std::nullopt;
    auto& url = std::get<std::string>(v);
    for (auto& scheme : schemes)
      if (url.rfind(scheme, 0) == 0)
        return std::nullopt;
    return expected;
  };
}

/// Padding of the receive visibility and of each extension over the lease: a crashed node's
/// message reappears this long after its claim has expired, so that the next node can claim it.
constexpr int64_t visibility_padding_seconds = 5;
/// SQS keeps a message invisible for at most 12 hours.
constexpr int64_t max_visibility_seconds = 43200;

/// The message visibility that agrees with the lease: the lease plus the padding.
int64_t visibility_for_lease(const config& c) {
  return std::min<int64_t>(c.worker.lease_seconds + visibility_padding_seconds,
                           max_visibility_seconds);
}

/// The value must be at least worker.lease_seconds: a message stays hidden while its claim lasts.
rule covers_lease() {
  return [](const config& c, const value& v) -> std::optional<std::string> {
    if (std::get<int64_t>(v) >= c.worker.lease_seconds)
      return std::nullopt;
    std::string expected = "at least worker.lease_seconds (";
    expected.append(std::to_string(c.worker.lease_seconds))
        .append("), or a message becomes visible to other nodes while its claim lasts");
    return expected;
  };
}

/// Days of the event stream that the outbox still holds: at most outbox.retention_hours, which
/// prunes every delivered row (0 and -1: not set).
std::optional<std::string> within_outbox(const config& c, int64_t days) {
  if (days <= 0 || days * 24 <= c.outbox.retention_hours)
    return std::nullopt;
  std::string expected = "at most outbox.retention_hours (";
  expected.append(std::to_string(c.outbox.retention_hours))
      .append(" h), which removes every delivered event first: raise it to keep events longer");
  return expected;
}

/// A comma-separated list of host names ("*" for any): letters, digits, '-', '.' and '_'.
rule host_names() {
  return [](const config&, const value& v) -> std::optional<std::string> {
    for (auto& name : name_list(std::get<std::string>(v))) {
      bool ok = name == "*" || std::all_of(name.begin(), name.end(), [](char c) {
                  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.'
                         || c == '_';
                });
      if (!ok)
        return "a comma-separated list of host names without ports (\"*\" for any); \"" + name
               + "\" is not one";
    }
    return std::nullopt;
  };
}

const std::vector<std::string> all_stages = {"ingest", "match", "unpack"};

/// A comma-separated list of the status event stream's types (empty: every type).
rule event_type_list() {
  return [](const config&, const value& v) -> std::optional<std::string> {
    for (auto& type : name_list(std::get<std::string>(v)))
      if (!known_event_type(type))
        return "a comma-separated list of event types (empty: all), e.g. "
               "INGESTION_COMPLETED,INGESTION_FAILED; \""
               + type + "\" is not one (`ingestd events --help` lists them)";
    return std::nullopt;
  };
}

/// A comma-separated list of known stages; `enabled`: the list of the deployment (it must hold
/// "ingest"), else a node's subset of it (may be empty: all enabled).
rule known_stages(bool enabled) {
  return [enabled](const config& c, const value& v) -> std::optional<std::string> {
    auto list = stage_list(std::get<std::string>(v));
    std::string expected = "a comma-separated list of stages from: ingest, match, unpack";
    for (auto& stage : list) {
      if (std::find(all_stages.begin(), all_stages.end(), stage) == all_stages.end())
        return expected.append(" (unknown: ").append(stage).append(")");
      if (!enabled && !stage_enabled(c, stage))
        return expected.append(", each enabled in stages.enabled (")
            .append(stage)
            .append(" is not)");
    }
    if (enabled && std::find(list.begin(), list.end(), "ingest") == list.end())
      return expected + ", with ingest";
    return std::nullopt;
  };
}

/// worker.classes: a non-empty list of "small" and "large".
rule size_classes() {
  return [](const config&, const value& v) -> std::optional<std::string> {
    auto list = stage_list(std::get<std::string>(v));
    if (list.empty())
      return "a comma-separated list of size classes: small, large";
    for (auto& c : list)
      if (c != "small" && c != "large")
        return "a comma-separated list of size classes: small, large (\"" + c + "\" is none)";
    return std::nullopt;
  };
}

} // namespace

const std::vector<key_spec>& schema() {
  static const std::vector<key_spec> all = [] {
    std::vector<key_spec> t;

    using database = config::database_section;
    keys(t, "database", &config::database)
        .text("url", &database::url, "postgresql://ingestd@127.0.0.1:55432/ingestd",
              url_of({"postgresql://", "postgres://"}, "a postgresql:// URL"))
        .masked()
        .integer("pool_size", &database::pool_size, 2, 1, 64)
        // Deadlines of every statement and lock wait on the server (0: none); a call that exceeds
        // one fails as a transient error instead of holding a connection thread.
        .integer("statement_timeout_seconds", &database::statement_timeout_seconds, 30, 0, 86400)
        .integer("lock_timeout_seconds", &database::lock_timeout_seconds, 10, 0, 86400)
        // Unacknowledged data older than this drops the connection (a silent network stall; 0: the
        // system's default).
        .integer("tcp_user_timeout_seconds", &database::tcp_user_timeout_seconds, 30, 0, 3600);

    using queue = config::queue_section;
    keys(t, "queue", &config::queue)
        .choice("backend", &queue::backend, "postgres", {"postgres", "sqs"})
        .text("name", &queue::name, "ingestd-ingest", required("a non-empty queue name"))
        // The SQS queue URL; looked up by the name when empty.
        .text("url", &queue::url, "")
        .text("dead_letter_name", &queue::dead_letter_name, "ingestd-ingest-dlq")
        // 0: no dead-letter redrive; failed ingestions are acked.
        .integer("max_receive_count", &queue::max_receive_count, 0, 0, 1000)
        .integer("wait_time_seconds", &queue::wait_time_seconds, 20, 0, 20)
        // Messages one receive takes (never more than the free slots); 0: the backend's most, SQS's
        // 10 or the Postgres queue's 100 (a receive of 100 costs the database about half of ten
        // receives of 10, and the jobs' later statements get larger batches).
        .integer("max_messages", &queue::max_messages, 0, 0, 100,
                 [](const config& c, const value& v) -> std::optional<std::string> {
                   if (c.queue.backend != "sqs" || std::get<int64_t>(v) <= 10)
                     return std::nullopt;
                   return "at most 10 with queue.backend = \"sqs\" (SQS's own limit)";
                 })
        .derived([](const config& c) -> int64_t { return c.queue.backend == "sqs" ? 10 : 100; })
        // Visibility at receive; 0: worker.lease_seconds plus a padding.
        .integer("visibility_timeout_seconds", &queue::visibility_timeout_seconds, 0, 0,
                 max_visibility_seconds, covers_lease())
        .derived(visibility_for_lease);
    // Scheduling: a message's effective priority improves by this many levels per
    // minute it waits (set on the Postgres queue by `ingestd queues create`; 0: strict priority).
    keys(t, "queue", &config::queue)
        .number("priority_ageing_per_minute", &queue::priority_ageing_per_minute, 1, 0, 100)
        // Fair scheduling between tenants on the Postgres queue (set by `ingestd queues create`):
        // within a priority, a tenant's messages rank as if sent no faster than one per this many
        // seconds divided by its weight, so one tenant's import does not hold the others' work
        // behind it. 0: every tenant's messages rank by their send time.
        .number("tenant_fair_spacing_seconds", &queue::tenant_fair_spacing_seconds, 1, 0, 3600)
        // "TENANT_ID:WEIGHT,...": a tenant of weight 2 gets twice the share of one of weight 1
        // (the default) while both have work waiting.
        .text("tenant_weights", &queue::tenant_weights, "",
              [](const config&, const value& v) -> std::optional<std::string> {
                auto weights = tenant_weights_of(std::get<std::string>(v));
                if (weights)
                  return std::nullopt;
                return "TENANT_ID:WEIGHT pairs separated by commas; " + weights.error().message;
              })
        // SQS has no priorities: one queue per class ("<name>-p<bound>"), each class taking the
        // priorities up to its bound; receives start with each class as often as its weight. Empty:
        // one queue. The Postgres queue ignores them (it orders by priority itself).
        .integer_list("priority_classes", &queue::priority_classes, {}, 0, 100)
        .integer_list("priority_class_weights", &queue::priority_class_weights, {}, 1, 1000,
                      [](const config& c, const value&) -> std::optional<std::string> {
                        if (c.queue.backend != "sqs")
                          return std::nullopt; // the Postgres queue orders by priority itself
                        return check_priority_classes(c.queue.priority_classes,
                                                      c.queue.priority_class_weights);
                      });

    using aws = config::aws_section;
    keys(t, "aws", &config::aws)
        .text("region", &aws::region, "eu-central-1")
        // E.g. a local emulator; empty for AWS itself.
        .text("endpoint", &aws::endpoint, "");

    using storage = config::storage_section;
    keys(t, "storage", &config::storage)
        .choice("backend", &storage::backend, "filesystem", {"filesystem", "s3"})
        .text("root", &storage::root, ".local/storage",
              required("a directory for the filesystem store",
                       [](const config& c) { return c.storage.backend == "filesystem"; }))
        .text("bucket", &storage::bucket, "ingestd-storage",
              required("a bucket name for the s3 store",
                       [](const config& c) { return c.storage.backend == "s3"; }))
        .boolean("path_style", &storage::path_style, true)
        .integer("max_object_bytes", &storage::max_object_bytes, int64_t{100} << 20, 1,
                 int64_t{1} << 34);

    using worker = config::worker_section;
    keys(t, "worker", &config::worker)
        // Empty: hostname-pid.
        .text("id", &worker::id, "")
        .integer("max_in_flight", &worker::max_in_flight, 1000, 1, 100000)
        .integer("heartbeat_pool_size", &worker::heartbeat_pool_size, 2, 1, 16)
        // CPU pool workers: the cores less this many.
        .integer("preprocessing_pool_size_dec", &worker::preprocessing_pool_size_dec, 1, 0, 256)
        .integer("shutdown_grace_seconds", &worker::shutdown_grace_seconds, 600, 0, 86400)
        // A crashed node's claims are taken over this long after its last heartbeat.
        .integer("lease_seconds", &worker::lease_seconds, 15, 2, max_visibility_seconds)
        // 0: a third of the lease.
        .integer("heartbeat_rate_seconds", &worker::heartbeat_rate_seconds, 0, 0, 3600,
                 [](const config& c, const value& v) -> std::optional<std::string> {
                   if (2 * std::get<int64_t>(v) <= c.worker.lease_seconds)
                     return std::nullopt;
                   std::string expected = "at most half of worker.lease_seconds (";
                   expected.append(std::to_string(c.worker.lease_seconds))
                       .append("), or one late heartbeat loses live claims");
                   return expected;
                 })
        .derived([](const config& c) { return std::max<int64_t>(c.worker.lease_seconds / 3, 1); })
        // Visibility set by each extension; 0: worker.lease_seconds plus a padding.
        .integer("heartbeat_extension_seconds", &worker::heartbeat_extension_seconds, 0, 0,
                 max_visibility_seconds, covers_lease())
        .derived(visibility_for_lease)
        .integer("stale_ingestion_threshold_minutes", &worker::stale_ingestion_threshold_minutes, 0,
                 0, max_visibility_seconds / 60)
        .alias_of("worker.lease_seconds",
                  [](config& c) {
                    if (c.worker.stale_ingestion_threshold_minutes > 0)
                      c.worker.lease_seconds = c.worker.stale_ingestion_threshold_minutes * 60;
                  })
        .integer("max_retry_attempts", &worker::max_retry_attempts, 3, 1, 100)
        // Visibility before the next attempt, by attempts so far (the last entry repeats).
        .integer_list("retry_backoff_seconds", &worker::retry_backoff_seconds, {300, 1800}, 0,
                      43200)
        .integer("step_timeout_seconds", &worker::step_timeout_seconds, 300, 1, 86400)
        .integer("sweeper_interval_seconds", &worker::sweeper_interval_seconds, 60, 1, 86400)
        // Size classes and capacity: see deploy/OPERATIONS.md.
        .text("classes", &worker::classes, "small,large", size_classes())
        .integer("capacity_slots", &worker::capacity_slots, 0, 0, 1000000)
        .integer("lifetime_units", &worker::lifetime_units, 0, 0, int64_t{1} << 40)
        .integer("exit_after_idle_polls", &worker::exit_after_idle_polls, 0, 0, 1000000);

    using classes = config::classes_section;
    keys(t, "classes", &config::classes)
        .boolean("enabled", &classes::enabled, false)
        .text("large_queue_name", &classes::large_queue_name, "ingestd-ingest-large",
              required("a non-empty queue name"))
        .text("large_queue_url", &classes::large_queue_url, "")
        .text("large_dead_letter_name", &classes::large_dead_letter_name,
              "ingestd-ingest-large-dlq", required("a non-empty queue name"))
        .integer("large_min_bytes", &classes::large_min_bytes, int64_t{5} << 20, 1,
                 int64_t{1} << 34)
        .integer("large_min_pages", &classes::large_min_pages, 10, 1, 100000)
        // 0: its jobs take no slot (still counted by worker.max_in_flight, and as 1 lifetime unit).
        .integer("small_weight", &classes::small_weight, 1, 0, 1000)
        .integer("large_weight", &classes::large_weight, 5, 0, 1000)
        .integer("small_max_attempts", &classes::small_max_attempts, 2, 1, 100)
        .integer("large_max_attempts", &classes::large_max_attempts, 2, 1, 100)
        .integer("large_step_timeout_seconds", &classes::large_step_timeout_seconds, 1800, 1, 86400)
        .integer("large_ocr_timeout_seconds", &classes::large_ocr_timeout_seconds, 1800, 1, 86400);

    using stages = config::stages_section;
    keys(t, "stages", &config::stages)
        // "match" after "ingest": every completed ingestion gets a matching job.
        .text("enabled", &stages::enabled, "ingest,match,unpack", known_stages(true))
        // Empty: every enabled stage.
        .text("serve", &stages::serve, "", known_stages(false))
        .integer("ingest_max_in_flight", &stages::ingest_max_in_flight, 0, 0, 100000);

    using matching = config::matching_section;
    keys(t, "matching", &config::matching)
        .text("queue_name", &matching::queue_name, "ingestd-match",
              required("a non-empty queue name"))
        .text("queue_url", &matching::queue_url, "")
        .text("dead_letter_name", &matching::dead_letter_name, "ingestd-match-dlq",
              required("a non-empty queue name"))
        .integer("max_receive_count", &matching::max_receive_count, 3, 1, 1000)
        .integer("max_in_flight", &matching::max_in_flight, 0, 0, 100000)
        .choice("provider", &matching::provider, "local", {"local", "llm"})
        .text("llm_model", &matching::llm_model, "")
        .integer("timeout_seconds", &matching::timeout_seconds, 120, 1, 3600)
        .integer("candidate_limit", &matching::candidate_limit, 20, 1, 200)
        .integer_list("retry_backoff_seconds", &matching::retry_backoff_seconds, {300, 1800}, 0,
                      43200);

    using containers = config::containers_section;
    keys(t, "containers", &config::containers)
        .text("queue_name", &containers::queue_name, "ingestd-unpack",
              required("a non-empty queue name"))
        .text("queue_url", &containers::queue_url, "")
        .text("dead_letter_name", &containers::dead_letter_name, "ingestd-unpack-dlq",
              required("a non-empty queue name"))
        .integer("max_receive_count", &containers::max_receive_count, 3, 1, 1000)
        .integer("max_in_flight", &containers::max_in_flight, 0, 0, 100000)
        .integer("max_depth", &containers::max_depth, 3, 1, 20)
        .integer("max_total_bytes", &containers::max_total_bytes, int64_t{256} << 20, 1,
                 int64_t{1} << 34)
        .integer("max_members", &containers::max_members, 1000, 1, 100000)
        .number("max_ratio", &containers::max_ratio, 100, 0.01, 100000)
        .integer("max_member_bytes", &containers::max_member_bytes, 0, 0, int64_t{1} << 32)
        .derived([](const config& c) { return c.transcription.max_file_bytes; })
        .integer("timeout_seconds", &containers::timeout_seconds, 120, 1, 3600)
        .integer("memory_budget_bytes", &containers::memory_budget_bytes, int64_t{1} << 30,
                 int64_t{1} << 20, int64_t{1} << 40);

    using outbox = config::outbox_section;
    keys(t, "outbox", &config::outbox)
        .integer("poll_interval_ms", &outbox::poll_interval_ms, 1000, 10, 60000)
        .integer("retention_hours", &outbox::retention_hours, 168, 1, int64_t{24} * 365)
        .text("events_sqs_queue", &outbox::events_sqs_queue, "")
        .text("events_sqs_types", &outbox::events_sqs_types, "", event_type_list())
        .text("events_webhook_types", &outbox::events_webhook_types, "", event_type_list())
        .integer("events_retry_max_ms", &outbox::events_retry_max_ms, 10000, 100, 3600000)
        .integer("max_attempts", &outbox::max_attempts, 50, 1, 100000);

    using cluster = config::cluster_section;
    keys(t, "cluster", &config::cluster)
        .integer("node_retention_hours", &cluster::node_retention_hours, 24, 1, int64_t{24} * 365);

    // Retention: the node prunes, in batches every interval_seconds, the objects and rows of
    // documents older than these (0: kept for ever). Originals and derived objects leave storage
    // and their rows say when; the extracted data, the document's row and its events stay.
    using retention = config::retention_section;
    keys(t, "retention", &config::retention)
        .integer("originals_days", &retention::originals_days, 0, 0, 36500)
        .integer("derived_days", &retention::derived_days, 0, 0, 36500)
        .integer("audit_days", &retention::audit_days, 0, 0, 36500)
        // Shorter than what the outbox keeps (outbox.retention_hours), or it would have no effect.
        .integer(
            "events_days", &retention::events_days, 0, 0, 36500,
            [](const config& c, const value& v) { return within_outbox(c, std::get<int64_t>(v)); })
        // "TENANT_ID:KIND=DAYS[:KIND=DAYS...],...": a tenant's own days for some kinds.
        .text("tenant_days", &retention::tenant_days, "",
              [](const config& c, const value& v) -> std::optional<std::string> {
                auto days = tenant_retention_of(std::get<std::string>(v));
                if (!days)
                  return "TENANT_ID:KIND=DAYS entries (KIND originals, derived, audit or events) "
                         "separated by commas; "
                         + days.error().message;
                for (const auto& t : *days)
                  if (auto wrong = within_outbox(c, t.events_days))
                    return "events of " + t.tenant + ": " + *wrong;
                return std::nullopt;
              })
        .integer("interval_seconds", &retention::interval_seconds, 600, 1, 86400)
        .integer("batch_size", &retention::batch_size, 500, 1, 10000);

    // Mailboxes read for documents: each message becomes an e-mail document of its tenant, its
    // attachments child documents (the unpack stage must run). Buckets whose new objects are
    // announced on an SQS queue: each object becomes a document of its tenant.
    using acquisition = config::acquisition_section;
    keys(t, "acquisition", &config::acquisition)
        .text("mailboxes", &acquisition::mailboxes, "",
              [](const config& c, const value& v) -> std::optional<std::string> {
                auto boxes = mailboxes_of(std::get<std::string>(v));
                if (!boxes)
                  return "TENANT_ID:imaps://USER@HOST[:PORT]/FOLDER[?processed=FOLDER&"
                         "password_env=NAME] entries separated by commas; "
                         + boxes.error().message;
                if (!boxes->empty() && !stage_enabled(c, "unpack"))
                  return std::string{"no mailboxes while the unpack stage is not in "
                                     "stages.enabled (a message is an e-mail container)"};
                return std::nullopt;
              })
        .masked()
        .text("buckets", &acquisition::buckets, "",
              [](const config&, const value& v) -> std::optional<std::string> {
                auto buckets = buckets_of(std::get<std::string>(v));
                if (!buckets)
                  return "TENANT_ID:s3://BUCKET[/PREFIX]?queue=QUEUE entries separated by "
                         "commas; "
                         + buckets.error().message;
                return std::nullopt;
              })
        .integer("poll_interval_seconds", &acquisition::poll_interval_seconds, 60, 1, 86400)
        .integer("timeout_seconds", &acquisition::timeout_seconds, 30, 1, 600)
        .integer("batch_size", &acquisition::batch_size, 100, 1, 10000)
        .text("ca_file", &acquisition::ca_file, "");

    using transcription = config::transcription_section;
    keys(t, "transcription", &config::transcription)
        .choice("provider", &transcription::provider, "tesseract", {"tesseract", "document_ai"})
        .number("ocr_quality_threshold", &transcription::ocr_quality_threshold, 0.7, 0, 1)
        .text("languages", &transcription::languages, "eng+deu")
        // A page whose words are of one of these is read again with its language's data.
        .text("other_languages", &transcription::other_languages, "fra+nld+spa+ita+pol")
        .integer("max_file_bytes", &transcription::max_file_bytes, int64_t{20} << 20, 1,
                 int64_t{1} << 32)
        .integer("max_pages", &transcription::max_pages, 30, 1, 10000)
        .integer("timeout_seconds", &transcription::timeout_seconds, 300, 1, 86400)
        .text("document_ai_endpoint", &transcription::document_ai_endpoint, "",
              required("the processor's :process URL when transcription.provider is document_ai",
                       [](const config& c) { return c.transcription.provider == "document_ai"; }))
        // Each decoder helper's address space (RLIMIT_AS): a document that needs more fails
        // (decode.out_of_memory), never the node. Size the node's memory for one per CPU worker.
        .integer("decoder_memory_bytes", &transcription::decoder_memory_bytes, int64_t{3} << 30,
                 int64_t{256} << 20, int64_t{1} << 40);

    using extraction = config::extraction_section;
    keys(t, "extraction", &config::extraction)
        .choice("provider", &extraction::provider, "local", {"local", "llm"})
        .text("llm_base_url", &extraction::llm_base_url, "https://api.openai.com",
              url_of({"http://", "https://"},
                     "an http:// or https:// URL when extraction.provider is llm",
                     [](const config& c) { return c.extraction.provider == "llm"; }))
        .text("llm_model", &extraction::llm_model, "gpt-4o-mini")
        .integer("timeout_seconds", &extraction::timeout_seconds, 120, 1, 3600)
        .integer("max_attempts", &extraction::max_attempts, 3, 1, 10);

    // The prices `ingestd usage` applies to the recorded tokens and pages (0: not priced).
    using usage = config::usage_section;
    keys(t, "usage", &config::usage)
        .number("llm_input_price_per_million_tokens", &usage::llm_input_price_per_million_tokens, 0,
                0, 1e6)
        .number("llm_output_price_per_million_tokens", &usage::llm_output_price_per_million_tokens,
                0, 0, 1e6)
        .number("document_ai_price_per_thousand_pages",
                &usage::document_ai_price_per_thousand_pages, 0, 0, 1e6)
        .text("currency", &usage::currency, "USD")
        // Monthly budgets: once a tenant's cost this month (UTC, at the prices above) reached its
        // budget, its documents meet budget_action instead of a paid provider: "downgrade" reads
        // them with the local providers and says so on the ingestion, "hold" leaves them queued
        // until the budget allows (a new month, a larger budget). A BUDGET_EXCEEDED event tells
        // once per tenant and month. 0 and no tenant_budgets: no budgets.
        .number("monthly_budget", &usage::monthly_budget, 0, 0, 1e9)
        // "TENANT_ID:AMOUNT[:ACTION],...": a tenant's own budget (0: none) and action.
        .text("tenant_budgets", &usage::tenant_budgets, "",
              [](const config&, const value& v) -> std::optional<std::string> {
                auto budgets = tenant_budgets_of(std::get<std::string>(v));
                if (budgets)
                  return std::nullopt;
                return "TENANT_ID:AMOUNT[:downgrade|hold] entries separated by commas; "
                       + budgets.error().message;
              })
        .choice("budget_action", &usage::budget_action, "downgrade", {"downgrade", "hold"})
        .integer("budget_recheck_seconds", &usage::budget_recheck_seconds, 60, 1, 86400);

    using notify = config::notify_section;
    keys(t, "notify", &config::notify).text("link_template", &notify::link_template, "");

    // Provider limits: requests wait for them without a thread, and their wait does
    // not count against the job's step deadline (deploy/OPERATIONS.md, "Provider limits").
    using limits = config::limits_section;
    keys(t, "limits", &config::limits)
        .integer("llm_max_concurrent", &limits::llm_max_concurrent, 0, 0, 100000)
        .integer("llm_requests_per_minute", &limits::llm_requests_per_minute, 0, 0, 10000000)
        .integer("llm_tokens_per_minute", &limits::llm_tokens_per_minute, 0, 0, int64_t{1} << 40)
        .integer("document_ai_max_concurrent", &limits::document_ai_max_concurrent, 0, 0, 100000)
        .integer("document_ai_requests_per_minute", &limits::document_ai_requests_per_minute, 0, 0,
                 10000000)
        .integer("webhook_max_concurrent", &limits::webhook_max_concurrent, 0, 0, 100000)
        .integer("webhook_requests_per_minute", &limits::webhook_requests_per_minute, 0, 0,
                 10000000)
        // A request that waited this long for its provider's limits is given back (provider.busy).
        .integer("max_wait_seconds", &limits::max_wait_seconds, 600, 1, 86400);

    // The HTTP engine (every SQS, S3, LLM, Document AI and webhook request): open connections in
    // all and per host (requests beyond them wait in the engine), idle connections kept.
    using http = config::http_section;
    keys(t, "http", &config::http)
        .integer("max_total_connections", &http::max_total_connections, 0, 0, 1000000)
        .integer("max_connections_per_host", &http::max_connections_per_host, 0, 0, 1000000)
        // HTTP/2 streams share these; more would be a connection per request of a burst.
        .integer("https_connections_per_host", &http::https_connections_per_host, 16, 0, 100000)
        .integer("connection_cache_size", &http::connection_cache_size, 0, 0, 1000000);

    using admin = config::admin_section;
    keys(t, "admin", &config::admin)
        .text("bind", &admin::bind, "127.0.0.1")
        // 0: disabled.
        .integer("port", &admin::port, 9464, 0, 65535)
        // Names besides loopback names and IP addresses that clients (a proxy, a Service name) use;
        // any other Host is refused (DNS rebinding).
        .text("allowed_hosts", &admin::allowed_hosts, "", host_names())
        .integer("max_connections", &admin::max_connections, 32, 1, 100000)
        .integer("max_connections_per_address", &admin::max_connections_per_address, 8, 1, 100000)
        .integer("header_timeout_seconds", &admin::header_timeout_seconds, 10, 1, 3600)
        .integer("request_timeout_seconds", &admin::request_timeout_seconds, 30, 1, 86400);

    using intake = config::intake_section;
    keys(t, "intake", &config::intake)
        .text("bind", &intake::bind, "127.0.0.1")
        // 0: disabled.
        .integer("port", &intake::port, 0, 0, 65535)
        .text("default_tenant", &intake::default_tenant, "00000000-0000-7000-8000-000000000001",
              [](const config&, const value& v) -> std::optional<std::string> {
                auto& tenant = std::get<std::string>(v);
                if (tenant.empty() || uuid::parse(tenant))
                  return std::nullopt;
                return "a UUID";
              })
        .text("allowed_hosts", &intake::allowed_hosts, "", host_names())
        .integer("max_connections", &intake::max_connections, 64, 1, 100000)
        .integer("max_connections_per_address", &intake::max_connections_per_address, 16, 1, 100000)
        .integer("header_timeout_seconds", &intake::header_timeout_seconds, 10, 1, 3600)
        // An upload of transcription.max_file_bytes over a slow link.
        .integer("request_timeout_seconds", &intake::request_timeout_seconds, 300, 1, 86400)
        // The bodies of all uploads in progress together; more wait (503, Retry-After).
        .integer("max_buffered_bytes", &intake::max_buffered_bytes, int64_t{256} << 20, 1 << 20,
                 int64_t{1} << 40);

    using review = config::review_section;
    // Served by the admin endpoint (admin.port must not be 0); INGESTD_REVIEW_TOKEN for access.
    keys(t, "review", &config::review)
        .boolean("enabled", &review::enabled, false)
        // The desk is reached over HTTPS (a proxy terminates TLS): the cookie is sent over it only.
        .boolean("secure_cookie", &review::secure_cookie, false)
        .integer("session_lifetime_minutes", &review::session_lifetime_minutes, 720, 1, 525600)
        .integer("max_sessions", &review::max_sessions, 1000, 1, 1000000)
        .integer("sign_in_attempts_per_minute", &review::sign_in_attempts_per_minute, 5, 1, 1000)
        // Of the documents that pass the gate, this share goes to the desk for a check: what a
        // reviewer corrects among them is the error rate of straight-through processing.
        .number("sample_rate", &review::sample_rate, 0, 0, 1)
        // Calibrated straight-through processing: a document the gate passes goes through only
        // when reviewers kept at least this share of each of its fields' values at the
        // extractor's confidence (each document's first review, last 90 days, at least
        // calibration_min_reviews of them); else it goes to the desk. 0: the gate alone decides.
        .number("auto_approve", &review::auto_approve, 0, 0, 1)
        // "TENANT_ID:THRESHOLD,...": a tenant's own auto_approve (0: the gate alone decides).
        .text("tenant_auto_approve", &review::tenant_auto_approve, "",
              [](const config&, const value& v) -> std::optional<std::string> {
                auto listed = tenant_auto_approve_of(std::get<std::string>(v));
                if (listed)
                  return std::nullopt;
                return "TENANT_ID:THRESHOLD pairs separated by commas; " + listed.error().message;
              })
        .integer("calibration_min_reviews", &review::calibration_min_reviews, 20, 1, 1000000)
        // What reviewers' approved corrections taught about a supplier (its canonical name, its
        // VAT id, day and month written the other way round) is applied to the same supplier's
        // next documents before the gate; the desk lists what was learned and can delete it.
        // The corrections are recorded either way.
        .boolean("learn", &review::learn, false)
        // How long a node reuses what it read of a tenant's reviews and supplier facts.
        .integer("learning_recheck_seconds", &review::learning_recheck_seconds, 300, 1, 86400);

    using log = config::log_section;
    keys(t, "log", &config::log)
        .choice("format", &log::format, "json", {"json", "text"})
        .choice("level", &log::level, "info", {"trace", "debug", "info", "warn", "error"});
    return t;
  }();
  return all;
}

} // namespace ingestd::config_table
