// ingestd's configuration: one JSON file (config/ingestd.json holds every key with its default)
// plus environment overrides, validated at start so that a bad value stops the program with a
// message naming the key, the value and what was expected.
//
// Environment rule: INGESTD_<SECTION>__<KEY>, upper case, e.g.
//   INGESTD_WORKER__MAX_IN_FLIGHT=5000   overrides  worker.max_in_flight
//   INGESTD_WORKER__RETRY_BACKOFF_SECONDS=60,600 (lists are comma-separated)
// Secrets never come from the file, only from the environment (see `secrets`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

/// The typed configuration. Every key's name, default, accepted values and the rules that make it
/// required are in one table (config.cpp); a `config` comes from load_config() or default_config(),
/// never from its own constructor.
struct config {
  struct database_section {
    std::string url;
    int pool_size{};
    /// Server-side deadlines of every statement and lock wait, and the TCP user timeout that
    /// bounds a silent network stall (0: none).
    int statement_timeout_seconds{};
    int lock_timeout_seconds{};
    int tcp_user_timeout_seconds{};
  } database;

  struct queue_section {
    std::string backend;
    std::string name;
    std::string url;
    std::string dead_letter_name;
    int max_receive_count{};
    int wait_time_seconds{};
    int max_messages{};
    /// 0 in the file: derived from worker.lease_seconds (see config.cpp).
    int visibility_timeout_seconds{};
    /// Priority levels a waiting message gains per minute (Postgres queue; 0: strict priority).
    double priority_ageing_per_minute{};
    /// Fair scheduling between tenants (Postgres queue): a tenant's messages rank as if sent no
    /// faster than one per this many seconds / its weight (0: in the order sent).
    double tenant_fair_spacing_seconds{};
    /// "TENANT_ID:WEIGHT,..." (see tenant_weights_of); a tenant not listed has weight 1.
    std::string tenant_weights;
    /// SQS priority classes: upper bounds ascending to 100 (empty: one queue), and their weights.
    std::vector<int64_t> priority_classes;
    std::vector<int64_t> priority_class_weights;
  } queue;

  struct aws_section {
    std::string region;
    std::string endpoint;
  } aws;

  struct storage_section {
    std::string backend;
    std::string root;
    std::string bucket;
    bool path_style{};
    int64_t max_object_bytes{};
  } storage;

  struct worker_section {
    std::string id;
    int max_in_flight{};
    int heartbeat_pool_size{};
    int preprocessing_pool_size_dec{};
    int shutdown_grace_seconds{};
    /// How long a claim lasts without renewal; the heartbeat keys derive from it.
    int lease_seconds{};
    int heartbeat_rate_seconds{};
    int heartbeat_extension_seconds{};
    /// The lease's older name, in minutes (0: not given); worker.lease_seconds wins over it.
    int stale_ingestion_threshold_minutes{};
    int max_retry_attempts{};
    std::vector<int64_t> retry_backoff_seconds;
    int step_timeout_seconds{};
    int sweeper_interval_seconds{};
    /// Size classes and capacity: the classes this node serves ("small,large"), the
    /// weighted slots its stages share (0: no budget), the units of work after which it drains
    /// and exits 0 (0: never) and the empty polls in a row after which it does (0: never).
    std::string classes;
    int capacity_slots{};
    int64_t lifetime_units{};
    int exit_after_idle_polls{};
  } worker;

  /// The pipeline's stages: which exist in the deployment and which this node runs.
  struct stages_section {
    /// Comma-separated, in pipeline order; "ingest" always. "match" after it turns matching on;
    /// "unpack" accepts containers at intake.
    std::string enabled;
    /// The enabled stages this node serves (`ingestd run --stages`); empty: all of them.
    std::string serve;
    /// The ingest stage's own in-flight limit (0: worker.max_in_flight).
    int ingest_max_in_flight{};
  } stages;

  /// Size classes of the ingest stage: intake routes by size and page count, the
  /// small class escalates to the large one, each class has its own queue and deadlines.
  struct classes_section {
    /// false: one ingest queue and class, as before.
    bool enabled{};
    /// The small class uses queue.name; the large class this queue.
    std::string large_queue_name;
    std::string large_queue_url;
    std::string large_dead_letter_name;
    /// A document of at least this many bytes, or pages, starts in the large class.
    int64_t large_min_bytes{};
    int large_min_pages{};
    /// Slots a job takes of worker.capacity_slots.
    int small_weight{};
    int large_weight{};
    /// Failed attempts in the small class before it moves to the large one (a timeout moves it
    /// at once), and in the large class before it fails for review.
    int small_max_attempts{};
    int large_max_attempts{};
    /// The large class's deadlines (the small class uses worker.step_timeout_seconds and
    /// transcription.timeout_seconds).
    int large_step_timeout_seconds{};
    int large_ocr_timeout_seconds{};
  } classes;

  /// The matching stage.
  struct matching_section {
    std::string queue_name;
    /// The SQS queue URL; looked up by the name when empty.
    std::string queue_url;
    std::string dead_letter_name;
    /// Deliveries before a message moves to the dead-letter queue (3 by default).
    int max_receive_count{};
    /// 0: worker.max_in_flight.
    int max_in_flight{};
    std::string provider;
    /// Empty: extraction.llm_model (the LLM is extraction.llm_base_url's).
    std::string llm_model;
    int timeout_seconds{};
    /// Candidates retrieved per document and shown to the matcher.
    int candidate_limit{};
    /// Visibility before the next delivery after a transient failure, by deliveries so far.
    std::vector<int64_t> retry_backoff_seconds;
  } matching;

  /// The unpack stage: containers (ZIP, TAR, .tar.gz, e-mail, mbox) taken apart into
  /// child documents, and the limits each container must keep.
  struct containers_section {
    std::string queue_name;
    /// The SQS queue URL; looked up by the name when empty.
    std::string queue_url;
    std::string dead_letter_name;
    int max_receive_count{};
    /// 0: worker.max_in_flight.
    int max_in_flight{};
    /// How many containers deep unpacking goes (a submitted container is the first).
    int max_depth{};
    /// The bytes of all members of one container together.
    int64_t max_total_bytes{};
    int max_members{};
    /// Unpacked bytes per byte of the container (a compression bomb), past 1 MiB unpacked.
    double max_ratio{};
    /// A larger member is skipped and named in the parent's error (0:
    /// transcription.max_file_bytes).
    int64_t max_member_bytes{};
    /// The CPU pool's deadline for one container.
    int timeout_seconds{};
    /// The node's memory for containers being unpacked, all together: each reserves its bytes
    /// and its members' bound (max_total_bytes, or max_ratio times its bytes when less) before it
    /// is unpacked, and waits for room in arrival order; one larger than the budget runs alone.
    int64_t memory_budget_bytes{};
  } containers;

  /// The outbox relay (next jobs on SQS; later, status events).
  struct outbox_section {
    int poll_interval_ms{};
    int retention_hours{};
    /// The status event stream's SQS sink: a queue name (or URL) on the configured SQS endpoint;
    /// empty: no SQS sink. The webhook sink comes from INGESTD_EVENTS_WEBHOOK_URL.
    std::string events_sqs_queue;
    /// The event types each sink takes, comma-separated; empty: every type. The SQS sink's
    /// messages also carry the type, tenant and document as message attributes, so that its
    /// subscribers can filter further.
    std::string events_sqs_types;
    std::string events_webhook_types;
    /// A sink that fails is retried after 0.5 s, doubling up to this.
    int events_retry_max_ms{};
    /// Failed sends of a row (a queue message, an event for a sink) before it is dead: kept with
    /// its last error for `ingestd events --dead` and `ingestd events redeliver`, not retried.
    int max_attempts{};
  } outbox;

  /// The node registry.
  struct cluster_section {
    /// Rows of stopped or lost nodes are deleted once not seen for this long.
    int node_retention_hours{};
  } cluster;

  /// How long documents' objects and audit rows are kept (0: for ever), pruned by the node.
  struct retention_section {
    /// Originals (and container members), by the document's age.
    int originals_days{};
    /// Transcriptions, preprocessed scans and the desk's page renders, by the ingestion's age.
    int derived_days{};
    /// The audit trail (ingestion_event), by the ingestion's age.
    int audit_days{};
    /// The status event stream's rows (what `ingestd events` reads, and the sinks' delivered
    /// copies), by when they were written; at most outbox.retention_hours, which prunes every
    /// delivered row of the outbox (0: that alone).
    int events_days{};
    /// "TENANT_ID:KIND=DAYS[:KIND=DAYS...],..." (tenant_retention_of).
    std::string tenant_days;
    int interval_seconds{};
    int batch_size{};
  } retention;

  struct transcription_section {
    std::string provider;
    double ocr_quality_threshold{};
    std::string languages;
    std::string other_languages;
    int64_t max_file_bytes{};
    int max_pages{};
    int timeout_seconds{};
    std::string document_ai_endpoint;
    int64_t decoder_memory_bytes{};
  } transcription;

  struct extraction_section {
    std::string provider;
    std::string llm_base_url;
    std::string llm_model;
    int timeout_seconds{};
    int max_attempts{};
  } extraction;

  /// Prices for `ingestd usage` and the budgets (0: not priced), and the tenants' monthly budgets.
  struct usage_section {
    double llm_input_price_per_million_tokens{};
    double llm_output_price_per_million_tokens{};
    double document_ai_price_per_thousand_pages{};
    std::string currency;
    /// Every tenant's monthly budget in `currency` (0: none), where tenant_budgets names none.
    double monthly_budget{};
    /// "TENANT_ID:AMOUNT[:ACTION],..." (tenant_budgets_of).
    std::string tenant_budgets;
    /// What a tenant's work meets once its month's cost reached its budget: "downgrade" (the
    /// local providers read it, and its ingestion says so) or "hold" (it stays queued).
    std::string budget_action;
    /// How old a tenant's cost may be when a job asks for it, and how long held work waits
    /// before it asks again.
    int budget_recheck_seconds{};
  } usage;

  struct notify_section {
    std::string link_template;
  } notify;

  /// Provider limits: per provider, requests at once and per minute (0: none), and
  /// for the LLM tokens per minute; a request waits for them at most max_wait_seconds.
  struct limits_section {
    int llm_max_concurrent{};
    int llm_requests_per_minute{};
    int64_t llm_tokens_per_minute{};
    int document_ai_max_concurrent{};
    int document_ai_requests_per_minute{};
    int webhook_max_concurrent{};
    int webhook_requests_per_minute{};
    int max_wait_seconds{};
  } limits;

  /// The HTTP engine's connections (0: curl's defaults, no bound).
  struct http_section {
    int max_total_connections{};
    int max_connections_per_host{};
    /// Per lane of the engine's https requests, when neither bound above is set.
    int https_connections_per_host{};
    int connection_cache_size{};
  } http;

  /// The admin endpoint (/healthz, /readyz, /metrics, POST /drain, the review desk) and its HTTP
  /// limits: names it answers to besides loopback names and IP addresses (comma-separated; "*":
  /// any), connections in all and per client address, and the deadlines of a request's headers
  /// and of the whole request.
  struct admin_section {
    std::string bind;
    int port{};
    std::string allowed_hosts;
    int max_connections{};
    int max_connections_per_address{};
    int header_timeout_seconds{};
    int request_timeout_seconds{};
  } admin;

  /// The HTTP intake and its HTTP limits (as admin's), and the memory for the bodies of the
  /// uploads in progress together.
  struct intake_section {
    std::string bind;
    int port{};
    std::string default_tenant;
    std::string allowed_hosts;
    int max_connections{};
    int max_connections_per_address{};
    int header_timeout_seconds{};
    int request_timeout_seconds{};
    int64_t max_buffered_bytes{};
  } intake;

  /// Mailboxes and buckets read for documents (intake/mailbox_intake.hpp,
  /// intake/bucket_intake.hpp): every poll interval, at most
  /// batch_size messages of each, every call to a server within timeout_seconds; the servers'
  /// certificates checked against ca_file (empty: the system's authorities).
  struct acquisition_section {
    /// "TENANT_ID:imaps://USER@HOST[:PORT]/FOLDER[?processed=FOLDER&password_env=NAME],..."
    /// (mailboxes_of).
    std::string mailboxes;
    /// "TENANT_ID:s3://BUCKET[/PREFIX]?queue=QUEUE,..." (buckets_of): buckets whose event
    /// notifications arrive on an SQS queue (a name on the configured endpoint, or a URL).
    std::string buckets;
    int poll_interval_seconds{};
    int timeout_seconds{};
    int batch_size{};
    std::string ca_file;
  } acquisition;

  /// The review desk under /review on the admin server: the session cookie's Secure
  /// attribute, how long a session lasts and how many may be open, and the failed sign-ins per
  /// address and per name within a minute before the next is refused (429). `sample_rate`: the
  /// share of documents that would go through without a person that are sent to the desk for a
  /// check instead (the measured error rate of what goes through, `ingestd status`).
  /// `auto_approve` (and a tenant's own in `tenant_auto_approve`): a document the gate passes goes
  /// through only when, for each of its fields, reviewers kept at least this share of that
  /// field's values at the extractor's confidence, over at least `calibration_min_reviews`
  /// reviews; else it goes to the desk (0: the gate alone decides). `learn`: what reviewers'
  /// corrections taught about a supplier (its name, VAT id, date order) is applied to its next
  /// documents. A node reads a tenant's reviews and supplier facts again after
  /// `learning_recheck_seconds`.
  struct review_section {
    bool enabled{};
    bool secure_cookie{};
    int session_lifetime_minutes{};
    int max_sessions{};
    int sign_in_attempts_per_minute{};
    double sample_rate{};
    double auto_approve{};
    std::string tenant_auto_approve;
    int calibration_min_reviews{};
    bool learn{};
    int learning_recheck_seconds{};
  } review;

  struct log_section {
    std::string format;
    std::string level;
  } log;

  /// Read from the environment only; never printed.
  struct secrets_section {
    std::string llm_api_key;           // INGESTD_LLM_API_KEY
    std::string document_ai_token;     // INGESTD_DOCUMENT_AI_TOKEN
    std::string notify_webhook_url;    // INGESTD_NOTIFY_WEBHOOK_URL
    std::string intake_token;          // INGESTD_INTAKE_TOKEN (TOKEN or TENANT:TOKEN pairs)
    std::string intake_admin_token;    // INGESTD_INTAKE_ADMIN_TOKEN (acts for any tenant)
    std::string admin_token;           // INGESTD_ADMIN_TOKEN (POST /drain)
    std::string review_token;          // INGESTD_REVIEW_TOKEN
    std::string events_webhook_url;    // INGESTD_EVENTS_WEBHOOK_URL
    std::string events_webhook_secret; // INGESTD_EVENTS_WEBHOOK_SECRET
  } secrets;

  /// The effective configuration as JSON, secrets masked (set/unset) and the password in the
  /// database URL replaced by "****".
  std::string to_json() const;
};

using environment = std::map<std::string, std::string>;

/// The process environment as a map.
environment process_environment();

/// Loads the file at `path` (or only the defaults when nullopt), applies the environment's
/// overrides, resolves older key names and derived keys (0: derived), and validates everything.
/// The error lists every problem, one per line.
result<config> load_config(const std::optional<std::string>& path, const environment& env);

/// The built-in defaults (no file, no environment), derived keys resolved.
config default_config();

/// The stages of a comma-separated list ("ingest,match"), without blanks; empty entries dropped.
std::vector<std::string> stage_list(const std::string& text);

/// True when the configuration's enabled stages include `stage`.
bool stage_enabled(const config& cfg, const std::string& stage);

/// The stages this node runs: stages.serve (or, empty, stages.enabled).
std::vector<std::string> served_stages(const config& cfg);

/// The built-in defaults as the JSON text of config/ingestd.json: a derived key shows 0 ("derived
/// from the keys it depends on"), so that changing those keys alone keeps the file consistent.
std::string default_config_json();

/// The names of a comma-separated list (intake.allowed_hosts), trimmed, empty ones dropped.
std::vector<std::string> name_list(const std::string& text);

/// A tenant's weight in fair scheduling.
struct tenant_weight {
  std::string tenant;
  double weight = 1;
};

/// The pairs of queue.tenant_weights ("TENANT_ID:WEIGHT,..."), or what is wrong with them: a tenant
/// is a UUID, a weight a number from 0.01 to 1000, each tenant once.
result<std::vector<tenant_weight>> tenant_weights_of(const std::string& text);

/// A tenant's own review.auto_approve threshold.
struct tenant_threshold {
  std::string tenant;
  double threshold = 0;
};

/// The pairs of review.tenant_auto_approve ("TENANT_ID:THRESHOLD,..."), or what is wrong with
/// them: a tenant is a UUID, a threshold a number from 0 to 1 (0: the gate alone decides), each
/// tenant once.
result<std::vector<tenant_threshold>> tenant_auto_approve_of(const std::string& text);

/// A tenant's monthly budget and what its work meets beyond it.
struct tenant_budget {
  std::string tenant;
  double amount = 0;
  /// "downgrade" or "hold"; empty: usage.budget_action.
  std::string action;
};

/// The entries of usage.tenant_budgets ("TENANT_ID:AMOUNT[:ACTION],..."), or what is wrong with
/// them: a tenant is a UUID, an amount a number from 0 to 1e9, an action "downgrade" or "hold",
/// each tenant once.
result<std::vector<tenant_budget>> tenant_budgets_of(const std::string& text);

/// A tenant's own retention, in days (-1: the configured default; 0: for ever).
struct tenant_retention {
  std::string tenant;
  int originals_days = -1;
  int derived_days = -1;
  int audit_days = -1;
  int events_days = -1;
};

/// The entries of retention.tenant_days ("TENANT_ID:KIND=DAYS[:KIND=DAYS...],...", KIND one of
/// originals, derived, audit, events; DAYS from 0 to 36500), or what is wrong with them.
result<std::vector<tenant_retention>> tenant_retention_of(const std::string& text);

/// A mailbox of acquisition.mailboxes.
struct mailbox_entry {
  std::string tenant;
  /// imaps://HOST[:PORT]/FOLDER or imap://... (STARTTLS), without the user or the query.
  std::string url;
  std::string user;
  /// Where messages go once taken in.
  std::string processed_folder = "Processed";
  /// The environment variable that holds the password.
  std::string password_env = "INGESTD_MAILBOX_PASSWORD";
};

/// The entries of acquisition.mailboxes
/// ("TENANT_ID:imaps://USER@HOST[:PORT]/FOLDER[?processed=FOLDER&password_env=NAME],..."), or what
/// is wrong with them: a tenant is a UUID, the URL imaps:// or imap:// with a user and a folder
/// and no password (passwords come from the environment), each (user, URL) once.
result<std::vector<mailbox_entry>> mailboxes_of(const std::string& text);

/// A bucket of acquisition.buckets.
struct bucket_entry {
  std::string tenant;
  std::string bucket;
  /// Only keys that start with it ("" : all).
  std::string prefix;
  /// The SQS queue of its event notifications: a name or a URL.
  std::string queue;
};

/// The entries of acquisition.buckets ("TENANT_ID:s3://BUCKET[/PREFIX]?queue=QUEUE,..."), or what
/// is wrong with them: a tenant is a UUID, a bucket an S3 bucket name, the queue given, each
/// (bucket, prefix) once.
result<std::vector<bucket_entry>> buckets_of(const std::string& text);

/// "postgresql://user:****@host/db" for "postgresql://user:secret@host/db".
std::string mask_url_password(const std::string& url);

} // namespace ingestd
