// The configuration loader: one table of every key (its field, default, accepted values and the
// rules that make it required) drives the defaults, the JSON file, the environment overrides,
// validation that names the key, and printing.
#include "config/config.hpp"
#include "messages/priority.hpp"

#include "messages/uuid.hpp"
#include "messages/json_depth.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

extern char** environ;

namespace ingestd {

namespace {

enum class kind { integer, number, boolean, string, choice, integer_list };

/// A key's value as parsed and printed; integers of any width are int64_t here.
using value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

/// A rule over the loaded configuration for one key's value: what was expected when it fails.
using rule = std::function<std::optional<std::string>(const config&, const value&)>;

/// One configuration key: the only place its name, field, default and rules are written.
struct key_spec {
  std::string section;
  std::string key;
  kind type;
  value fallback;
  double min = 0;
  double max = 0;
  std::vector<std::string> choices;
  rule check;
  /// A URL whose password is replaced by "****" wherever the value is shown.
  bool masked = false;
  /// An integer key whose 0 means "derived": its value from the other keys.
  std::function<int64_t(const config&)> derive;
  /// An older name of the key `alias_for` (full name), never printed: when it is given and the
  /// newer key is not, `adopt` sets the newer key from it.
  std::string alias_for;
  std::function<void(config&)> adopt;
  std::function<value(const config&)> get;
  std::function<void(config&, const value&)> set;
};

/// Appends the keys of one section of `config` to a table, each bound to its field.
template <class Section>
class section_keys {
public:
  section_keys(std::vector<key_spec>& table, std::string name, Section config::*section)
    : table_(table), name_(std::move(name)), section_(section) {}

  template <class T>
  section_keys& integer(const char* key, T Section::*field, int64_t fallback, int64_t min,
                        int64_t max, rule check = {}) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    return add(key, field, kind::integer, fallback, double(min), double(max), {}, std::move(check));
  }

  section_keys& number(const char* key, double Section::*field, double fallback, double min,
                       double max) {
    return add(key, field, kind::number, fallback, min, max, {}, {});
  }

  section_keys& boolean(const char* key, bool Section::*field, bool fallback) {
    return add(key, field, kind::boolean, fallback, 0, 0, {}, {});
  }

  section_keys& text(const char* key, std::string Section::*field, std::string fallback,
                     rule check = {}) {
    return add(key, field, kind::string, std::move(fallback), 0, 0, {}, std::move(check));
  }

  section_keys& choice(const char* key, std::string Section::*field, std::string fallback,
                       std::vector<std::string> choices) {
    return add(key, field, kind::choice, std::move(fallback), 0, 0, std::move(choices), {});
  }

  /// A non-empty list, each item in [min, max].
  section_keys& integer_list(const char* key, std::vector<int64_t> Section::*field,
                             std::vector<int64_t> fallback, int64_t min, int64_t max,
                             rule check = {}) {
    return add(key, field, kind::integer_list, std::move(fallback), double(min), double(max), {},
               std::move(check));
  }

  /// The last key holds a URL whose password must never be shown.
  section_keys& masked() {
    table_.back().masked = true;
    return *this;
  }

  /// The last (integer) key's 0 means "derived by `derive` from the other keys".
  section_keys& derived(std::function<int64_t(const config&)> derive) {
    table_.back().derive = std::move(derive);
    return *this;
  }

  /// The last key is an older name of `newer` (full name), kept working but never printed.
  section_keys& alias_of(std::string newer, std::function<void(config&)> adopt) {
    table_.back().alias_for = std::move(newer);
    table_.back().adopt = std::move(adopt);
    return *this;
  }

private:
  template <class T>
  section_keys& add(const char* key, T Section::*field, kind type, value fallback, double min,
                    double max, std::vector<std::string> choices, rule check) {
    // Every integer field is an int64_t in a `value`.
    using stored =
      std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int64_t, T>;
    key_spec spec{name_, key, type, std::move(fallback), min, max, std::move(choices),
                  std::move(check)};
    spec.get = [section = section_, field](const config& c) -> value {
      return stored((c.*section).*field);
    };
    spec.set = [section = section_, field](config& c, const value& v) {
      (c.*section).*field = static_cast<T>(std::get<stored>(v));
    };
    table_.push_back(std::move(spec));
    return *this;
  }

  std::vector<key_spec>& table_;
  std::string name_;
  Section config::*section_;
};

template <class Section>
section_keys<Section> keys(std::vector<key_spec>& table, std::string name,
                           Section config::*section) {
  return {table, std::move(name), section};
}

/// The string must be non-empty, when `applies` holds (always when it is null).
rule required(std::string expected, bool (*applies)(const config&) = nullptr) {
  return [expected = std::move(expected),
          applies](const config& c, const value& v) -> std::optional<std::string> {
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
constexpr int64_t visibility_padding_seconds = 15;
/// SQS keeps a message invisible for at most 12 hours.
constexpr int64_t max_visibility_seconds = 43200;

/// The message visibility that agrees with the lease: the lease plus the padding.
int64_t visibility_for_lease(const config& c) {
  return std::min<int64_t>(c.worker.lease_seconds + visibility_padding_seconds, max_visibility_seconds);
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

const std::vector<std::string> all_stages = {"ingest", "match", "unpack"};

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
        return expected.append(", each enabled in stages.enabled (").append(stage).append(" is not)");
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

/// The whole table, section by section in the order `ingestd config` prints them.
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
      .integer("max_messages", &queue::max_messages, 10, 1, 10)
      // Visibility at receive; 0: worker.lease_seconds plus a padding.
      .integer("visibility_timeout_seconds", &queue::visibility_timeout_seconds, 0, 0,
               max_visibility_seconds, covers_lease())
      .derived(visibility_for_lease);
    // Scheduling (issue 13): a message's effective priority improves by this many levels per
    // minute it waits (set on the Postgres queue by `ingestd queues create`; 0: strict priority).
    keys(t, "queue", &config::queue)
      .number("priority_ageing_per_minute", &queue::priority_ageing_per_minute, 1, 0, 100)
      // SQS has no priorities: one queue per class ("<name>-p<bound>"), each class taking the
      // priorities up to its bound; receives start with each class as often as its weight. Empty:
      // one queue. The Postgres queue ignores them (it orders by priority itself).
      .integer_list("priority_classes", &queue::priority_classes, {}, 0, 100)
      .integer_list("priority_class_weights", &queue::priority_class_weights, {}, 1, 1000,
                    [](const config& c, const value&) -> std::optional<std::string> {
                      if (c.queue.backend != "sqs")
                        return std::nullopt;  // the Postgres queue orders by priority itself
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
      .integer("lease_seconds", &worker::lease_seconds, 30, 2, max_visibility_seconds)
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
      .integer_list("retry_backoff_seconds", &worker::retry_backoff_seconds, {300, 1800}, 0, 43200)
      .integer("step_timeout_seconds", &worker::step_timeout_seconds, 300, 1, 86400)
      .integer("sweeper_interval_seconds", &worker::sweeper_interval_seconds, 60, 1, 86400)
      // Size classes and capacity (seed 004): see deploy/OPERATIONS.md.
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
      .text("large_dead_letter_name", &classes::large_dead_letter_name, "ingestd-ingest-large-dlq",
            required("a non-empty queue name"))
      .integer("large_min_bytes", &classes::large_min_bytes, int64_t{5} << 20, 1, int64_t{1} << 34)
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
      .text("enabled", &stages::enabled, "ingest,match", known_stages(true))
      // Empty: every enabled stage.
      .text("serve", &stages::serve, "", known_stages(false))
      .integer("ingest_max_in_flight", &stages::ingest_max_in_flight, 0, 0, 100000);

    using matching = config::matching_section;
    keys(t, "matching", &config::matching)
      .text("queue_name", &matching::queue_name, "ingestd-match", required("a non-empty queue name"))
      .text("queue_url", &matching::queue_url, "")
      .text("dead_letter_name", &matching::dead_letter_name, "ingestd-match-dlq",
            required("a non-empty queue name"))
      .integer("max_receive_count", &matching::max_receive_count, 3, 1, 1000)
      .integer("max_in_flight", &matching::max_in_flight, 0, 0, 100000)
      .choice("provider", &matching::provider, "local", {"local", "llm"})
      .text("llm_model", &matching::llm_model, "")
      .integer("timeout_seconds", &matching::timeout_seconds, 120, 1, 3600)
      .integer("candidate_limit", &matching::candidate_limit, 20, 1, 200)
      .integer_list("retry_backoff_seconds", &matching::retry_backoff_seconds, {300, 1800}, 0, 43200);

    using containers = config::containers_section;
    keys(t, "containers", &config::containers)
      .text("queue_name", &containers::queue_name, "ingestd-unpack", required("a non-empty queue name"))
      .text("queue_url", &containers::queue_url, "")
      .text("dead_letter_name", &containers::dead_letter_name, "ingestd-unpack-dlq",
            required("a non-empty queue name"))
      .integer("max_receive_count", &containers::max_receive_count, 3, 1, 1000)
      .integer("max_in_flight", &containers::max_in_flight, 0, 0, 100000)
      .integer("max_depth", &containers::max_depth, 3, 1, 20)
      .integer("max_total_bytes", &containers::max_total_bytes, int64_t{256} << 20, 1, int64_t{1} << 34)
      .integer("max_members", &containers::max_members, 1000, 1, 100000)
      .number("max_ratio", &containers::max_ratio, 100, 0.01, 100000)
      .integer("max_member_bytes", &containers::max_member_bytes, 0, 0, int64_t{1} << 32)
      .derived([](const config& c) { return c.transcription.max_file_bytes; })
      .integer("timeout_seconds", &containers::timeout_seconds, 120, 1, 3600);

    using outbox = config::outbox_section;
    keys(t, "outbox", &config::outbox)
      .integer("poll_interval_ms", &outbox::poll_interval_ms, 1000, 10, 60000)
      .integer("retention_hours", &outbox::retention_hours, 168, 1, int64_t{24} * 365)
      .text("events_sqs_queue", &outbox::events_sqs_queue, "")
      .integer("events_retry_max_ms", &outbox::events_retry_max_ms, 10000, 100, 3600000);

    using cluster = config::cluster_section;
    keys(t, "cluster", &config::cluster)
      .integer("node_retention_hours", &cluster::node_retention_hours, 24, 1, int64_t{24} * 365);

    using transcription = config::transcription_section;
    keys(t, "transcription", &config::transcription)
      .choice("provider", &transcription::provider, "tesseract", {"tesseract", "document_ai"})
      .number("ocr_quality_threshold", &transcription::ocr_quality_threshold, 0.7, 0, 1)
      .text("languages", &transcription::languages, "eng+deu")
      .integer("max_file_bytes", &transcription::max_file_bytes, int64_t{20} << 20, 1,
               int64_t{1} << 32)
      .integer("max_pages", &transcription::max_pages, 30, 1, 10000)
      .integer("timeout_seconds", &transcription::timeout_seconds, 300, 1, 86400)
      .text("document_ai_endpoint", &transcription::document_ai_endpoint, "",
            required("the processor's :process URL when transcription.provider is document_ai",
                     [](const config& c) { return c.transcription.provider == "document_ai"; }));

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

    using notify = config::notify_section;
    keys(t, "notify", &config::notify).text("link_template", &notify::link_template, "");

    // Provider limits (issue 13): requests wait for them without a thread, and their wait does
    // not count against the job's step deadline (deploy/OPERATIONS.md, "Provider limits").
    using limits = config::limits_section;
    keys(t, "limits", &config::limits)
      .integer("llm_max_concurrent", &limits::llm_max_concurrent, 0, 0, 100000)
      .integer("llm_requests_per_minute", &limits::llm_requests_per_minute, 0, 0, 10000000)
      .integer("llm_tokens_per_minute", &limits::llm_tokens_per_minute, 0, 0, int64_t{1} << 40)
      .integer("document_ai_max_concurrent", &limits::document_ai_max_concurrent, 0, 0, 100000)
      .integer("document_ai_requests_per_minute", &limits::document_ai_requests_per_minute, 0, 0, 10000000)
      .integer("webhook_max_concurrent", &limits::webhook_max_concurrent, 0, 0, 100000)
      .integer("webhook_requests_per_minute", &limits::webhook_requests_per_minute, 0, 0, 10000000)
      // A request that waited this long for its provider's limits is given back (provider.busy).
      .integer("max_wait_seconds", &limits::max_wait_seconds, 600, 1, 86400);

    // The HTTP engine (every SQS, S3, LLM, Document AI and webhook request): open connections in
    // all and per host (requests beyond them wait in the engine), idle connections kept.
    using http = config::http_section;
    keys(t, "http", &config::http)
      .integer("max_total_connections", &http::max_total_connections, 0, 0, 1000000)
      .integer("max_connections_per_host", &http::max_connections_per_host, 0, 0, 1000000)
      .integer("connection_cache_size", &http::connection_cache_size, 0, 0, 1000000);

    using admin = config::admin_section;
    keys(t, "admin", &config::admin)
      .text("bind", &admin::bind, "127.0.0.1")
      // 0: disabled.
      .integer("port", &admin::port, 9464, 0, 65535);

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
            });

    using review = config::review_section;
    // Served by the admin endpoint (admin.port must not be 0); INGESTD_REVIEW_TOKEN for access.
    keys(t, "review", &config::review).boolean("enabled", &review::enabled, false);

    using log = config::log_section;
    keys(t, "log", &config::log)
      .choice("format", &log::format, "json", {"json", "text"})
      .choice("level", &log::level, "info", {"trace", "debug", "info", "warn", "error"});
    return t;
  }();
  return all;
}

/// Secrets: environment variable and the config key a user might wrongly put in the file.
struct secret_spec {
  const char* env;
  const char* mistaken_key;
  std::string config::secrets_section::*member;
};

const secret_spec secret_specs[] = {
  {"INGESTD_LLM_API_KEY", "llm_api_key", &config::secrets_section::llm_api_key},
  {"INGESTD_DOCUMENT_AI_TOKEN", "document_ai_token", &config::secrets_section::document_ai_token},
  {"INGESTD_NOTIFY_WEBHOOK_URL", "webhook_url", &config::secrets_section::notify_webhook_url},
  {"INGESTD_INTAKE_TOKEN", "token", &config::secrets_section::intake_token},
  {"INGESTD_ADMIN_TOKEN", "admin_token", &config::secrets_section::admin_token},
  {"INGESTD_REVIEW_TOKEN", "review_token", &config::secrets_section::review_token},
  {"INGESTD_EVENTS_WEBHOOK_URL", "events_webhook_url", &config::secrets_section::events_webhook_url},
  {"INGESTD_EVENTS_WEBHOOK_SECRET", "events_webhook_secret",
   &config::secrets_section::events_webhook_secret},
};

std::string upper(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string env_name(const key_spec& spec) {
  return "INGESTD_" + upper(spec.section) + "__" + upper(spec.key);
}

std::string full_name(const key_spec& spec) { return spec.section + "." + spec.key; }

/// A list key whose default is empty may be given empty (e.g. queue.priority_classes: none).
bool may_be_empty(const key_spec& spec) {
  auto* list = std::get_if<std::vector<int64_t>>(&spec.fallback);
  return list != nullptr && list->empty();
}

std::string expected_text(const key_spec& spec) {
  auto range = [&](const char* what) {
    std::ostringstream out;
    out << what << " from " << static_cast<int64_t>(spec.min) << " to "
        << static_cast<int64_t>(spec.max);
    return out.str();
  };
  switch (spec.type) {
    case kind::integer:
      return range("an integer");
    case kind::integer_list:
      return range(may_be_empty(spec) ? "a list of integers, each" : "a non-empty list of integers, each");
    case kind::number: {
      std::ostringstream out;
      out << "a number from " << spec.min << " to " << spec.max;
      return out.str();
    }
    case kind::boolean:
      return "true or false";
    case kind::string:
      return "a string";
    case kind::choice: {
      std::string out = "one of";
      for (size_t i = 0; i < spec.choices.size(); ++i)
        out += (i == 0 ? " " : ", ") + spec.choices[i];
      return out;
    }
  }
  return "";
}

void put_value(rapidjson::Writer<rapidjson::StringBuffer>& w, const value& v) {
  std::visit(
    [&](auto& x) {
      using t = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<t, int64_t>)
        w.Int64(x);
      else if constexpr (std::is_same_v<t, double>)
        w.Double(x);
      else if constexpr (std::is_same_v<t, bool>)
        w.Bool(x);
      else if constexpr (std::is_same_v<t, std::string>)
        w.String(x.c_str(), static_cast<rapidjson::SizeType>(x.size()));
      else {
        w.StartArray();
        for (auto i : x)
          w.Int64(i);
        w.EndArray();
      }
    },
    v);
}

/// The key's value as it may be shown: a URL's password masked.
value shown_value(const key_spec& spec, const config& c) {
  auto v = spec.get(c);
  if (spec.masked)
    v = mask_url_password(std::get<std::string>(v));
  return v;
}

/// A value in a problem: strings quoted as given, everything else as JSON.
std::string shown_text(const value& v) {
  if (auto s = std::get_if<std::string>(&v))
    return "\"" + *s + "\"";
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer{buf};
  put_value(writer, v);
  return buf.GetString();
}

std::string json_text(const rapidjson::Value& v) {
  // The writer recurses: a value nested without end is named, not printed.
  if (json_deeper_than(v, 16))
    return std::string{v.IsArray() ? "an array" : "an object"} + " nested deeper than 16 levels";
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer{buf};
  v.Accept(writer);
  return buf.GetString();
}

bool in_range(const key_spec& spec, double x) { return x >= spec.min && x <= spec.max; }

bool is_choice(const key_spec& spec, const std::string& s) {
  for (auto& c : spec.choices)
    if (c == s)
      return true;
  return false;
}

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty())
    return std::nullopt;
  errno = 0;
  char* end = nullptr;
  auto x = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size())
    return std::nullopt;
  return x;
}

/// The value of a key in the config file, when it is of the key's type and in its range.
std::optional<value> from_json(const key_spec& spec, const rapidjson::Value& v) {
  switch (spec.type) {
    case kind::integer:
      if (v.IsInt64() && in_range(spec, static_cast<double>(v.GetInt64())))
        return v.GetInt64();
      return std::nullopt;
    case kind::number:
      if (v.IsNumber() && std::isfinite(v.GetDouble()) && in_range(spec, v.GetDouble()))
        return v.GetDouble();
      return std::nullopt;
    case kind::boolean:
      if (v.IsBool())
        return v.GetBool();
      return std::nullopt;
    case kind::string:
      if (v.IsString())
        return std::string{v.GetString(), v.GetStringLength()};
      return std::nullopt;
    case kind::choice:
      if (v.IsString() && is_choice(spec, v.GetString()))
        return std::string{v.GetString()};
      return std::nullopt;
    case kind::integer_list: {
      if (!v.IsArray() || (v.Empty() && !may_be_empty(spec)))
        return std::nullopt;
      std::vector<int64_t> list;
      for (auto& item : v.GetArray()) {
        if (!item.IsInt64() || !in_range(spec, static_cast<double>(item.GetInt64())))
          return std::nullopt;
        list.push_back(item.GetInt64());
      }
      return list;
    }
  }
  return std::nullopt;
}

/// The value of a key in an environment variable (lists comma-separated), when valid.
std::optional<value> from_env(const key_spec& spec, const std::string& text) {
  switch (spec.type) {
    case kind::integer: {
      auto x = parse_int(text);
      if (x && in_range(spec, static_cast<double>(*x)))
        return *x;
      return std::nullopt;
    }
    case kind::number: {
      errno = 0;
      char* end = nullptr;
      auto x = std::strtod(text.c_str(), &end);
      if (!text.empty() && errno == 0 && end == text.c_str() + text.size() && std::isfinite(x)
          && in_range(spec, x))
        return x;
      return std::nullopt;
    }
    case kind::boolean:
      if (text == "true" || text == "1")
        return true;
      if (text == "false" || text == "0")
        return false;
      return std::nullopt;
    case kind::string:
      return text;
    case kind::choice:
      if (is_choice(spec, text))
        return text;
      return std::nullopt;
    case kind::integer_list: {
      std::vector<int64_t> list;
      std::stringstream in{text};
      std::string item;
      while (std::getline(in, item, ',')) {
        auto x = parse_int(item);
        if (!x || !in_range(spec, static_cast<double>(*x)))
          return std::nullopt;
        list.push_back(*x);
      }
      if (list.empty() && !may_be_empty(spec))
        return std::nullopt;
      return list;
    }
  }
  return std::nullopt;
}

const key_spec* find_key(const std::string& section, const std::string& key) {
  for (auto& spec : schema())
    if (spec.section == section && spec.key == key)
      return &spec;
  return nullptr;
}

/// The table's defaults as written: derived keys still 0, aliases unset.
config written_defaults() {
  config c;
  for (auto& spec : schema())
    spec.set(c, spec.fallback);
  return c;
}

/// Applies the aliases given without their newer key, then gives every derived key left at 0
/// its value. `given` holds the full names of the keys the file or the environment set.
void resolve(config& c, const std::set<std::string>& given) {
  for (auto& spec : schema())
    if (!spec.alias_for.empty() && given.contains(full_name(spec)) && !given.contains(spec.alias_for))
      spec.adopt(c);
  for (auto& spec : schema())
    if (spec.derive && std::get<int64_t>(spec.get(c)) == 0)
      spec.set(c, spec.derive(c));
}

/// The defaults, then the file, then the environment, collecting every problem.
class loader {
public:
  config values = written_defaults();
  std::vector<std::string> problems;
  /// Full names of the keys the file or the environment set.
  std::set<std::string> given;

  void load_file(const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    if (!in) {
      problems.push_back("cannot read config file " + path);
      return;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    auto text = buf.str();
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
    if (doc.HasParseError()) {
      problems.push_back("config file " + path + " is not valid JSON at offset "
                         + std::to_string(doc.GetErrorOffset()) + ": "
                         + rapidjson::GetParseError_En(doc.GetParseError()));
      return;
    }
    if (!doc.IsObject()) {
      problems.push_back("config file " + path + ": expected a JSON object of sections");
      return;
    }
    for (auto& section : doc.GetObject()) {
      std::string section_name = section.name.GetString();
      if (!section.value.IsObject()) {
        if (section_name.rfind('$', 0) == 0 || section_name.rfind('_', 0) == 0)
          continue;  // "$comment"-style annotations
        problems.push_back(section_name + " (config file): expected an object of keys");
        continue;
      }
      for (auto& entry : section.value.GetObject()) {
        std::string key = entry.name.GetString();
        if (key.rfind('_', 0) == 0)
          continue;  // "_comment"-style annotations
        if (auto spec = find_key(section_name, key)) {
          if (auto v = from_json(*spec, entry.value)) {
            spec->set(values, *v);
            given.insert(full_name(*spec));
          } else
            problem(*spec, json_text(entry.value), "config file");
          continue;
        }
        std::string why = "unknown key";
        for (auto& secret : secret_specs)
          if (key == secret.mistaken_key)
            why = std::string{"a secret: set it in the environment as "} + secret.env
                  + ", never in the file";
        problems.push_back(section_name);
        problems.back().append(".").append(key).append(" (config file): ").append(why);
      }
    }
  }

  void load_env(const environment& env) {
    for (auto& [name, text] : env) {
      if (name.rfind("INGESTD_", 0) != 0 || name.find("__") == std::string::npos)
        continue;
      bool known = false;
      for (auto& spec : schema()) {
        if (env_name(spec) == name) {
          if (auto v = from_env(spec, text)) {
            spec.set(values, *v);
            given.insert(full_name(spec));
          } else
            problem(spec, "\"" + text + "\"", "environment " + name);
          known = true;
          break;
        }
      }
      if (!known)
        problems.push_back(name + " (environment): unknown configuration key");
    }
    for (auto& secret : secret_specs)
      if (auto i = env.find(secret.env); i != env.end())
        values.secrets.*secret.member = i->second;
  }

  /// The rules that need more than a type and a range ("must be given", across keys).
  void check_rules() {
    for (auto& spec : schema()) {
      if (!spec.check)
        continue;
      if (auto expected = spec.check(values, spec.get(values)))
        problems.push_back(full_name(spec) + " = " + shown_text(shown_value(spec, values))
                           + ": expected " + *expected);
    }
  }

private:
  void problem(const key_spec& spec, const std::string& shown, const std::string& origin) {
    problems.push_back(full_name(spec) + " = " + shown + " (" + origin + "): expected "
                       + expected_text(spec));
  }
};

/// The configuration as pretty JSON, section by section; with the secrets' set/unset state when
/// `secrets` is given.
std::string render(const config& c, const config::secrets_section* secrets) {
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w{buf};
  w.SetIndent(' ', 2);
  w.StartObject();
  std::string section;
  for (auto& spec : schema()) {
    if (!spec.alias_for.empty())
      continue;  // an older name: accepted, never advertised
    if (spec.section != section) {
      if (!section.empty())
        w.EndObject();
      section = spec.section;
      w.Key(section.c_str());
      w.StartObject();
    }
    w.Key(spec.key.c_str());
    // Through the base writer: each value compact on its key's line, as config/ingestd.json has it.
    put_value(w, shown_value(spec, c));
  }
  w.EndObject();
  if (secrets != nullptr) {
    w.Key("secrets (environment only)");
    w.StartObject();
    for (auto& secret : secret_specs) {
      w.Key(secret.env);
      w.String((secrets->*secret.member).empty() ? "(unset)" : "(set)");
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string{buf.GetString()} + "\n";
}

} // namespace

environment process_environment() {
  environment env;
  for (auto p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string entry{*p};
    auto eq = entry.find('=');
    if (eq != std::string::npos)
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

config default_config() {
  auto c = written_defaults();
  resolve(c, {});
  return c;
}

result<config> load_config(const std::optional<std::string>& path, const environment& env) {
  loader l;
  if (path)
    l.load_file(*path);
  l.load_env(env);
  if (l.problems.empty()) {
    resolve(l.values, l.given);
    l.check_rules();
    if (l.problems.empty())
      return std::move(l.values);
  }
  std::string text;
  for (auto& p : l.problems)
    text += (text.empty() ? "" : "\n") + p;
  return error::make_permanent("config.invalid", text);
}

std::string mask_url_password(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos)
    return url;
  auto at = url.find('@', scheme + 3);
  if (at == std::string::npos)
    return url;
  auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at)
    return url;
  return url.substr(0, colon + 1) + "****" + url.substr(at);
}

std::string default_config_json() { return render(written_defaults(), nullptr); }

std::string config::to_json() const { return render(*this, &secrets); }

std::vector<std::string> stage_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  auto flush = [&] {
    if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end())
      out.push_back(item);
    item.clear();
  };
  for (char ch : text) {
    if (ch == ',')
      flush();
    else if (!std::isspace(static_cast<unsigned char>(ch)))
      item.push_back(ch);
  }
  flush();
  return out;
}

bool stage_enabled(const config& cfg, const std::string& stage) {
  auto list = stage_list(cfg.stages.enabled);
  return std::find(list.begin(), list.end(), stage) != list.end();
}

std::vector<std::string> served_stages(const config& cfg) {
  auto serve = stage_list(cfg.stages.serve);
  return serve.empty() ? stage_list(cfg.stages.enabled) : serve;
}

} // namespace ingestd
