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

struct config {
  struct database_section {
    std::string url;
    int pool_size = 2;
  } database;

  struct queue_section {
    std::string backend;  // "postgres" | "sqs"
    std::string name;
    std::string url;  // SQS queue URL; derived from the name when empty
    std::string dead_letter_name;
    int max_receive_count = 0;  // 0: no dead-letter redrive; failed ingestions are acked
    int wait_time_seconds = 20;
    int max_messages = 10;
    int visibility_timeout_seconds = 60;
  } queue;

  struct aws_section {
    std::string region;
    std::string endpoint;  // e.g. a local emulator; empty for AWS itself
  } aws;

  struct storage_section {
    std::string backend;  // "filesystem" | "s3"
    std::string root;     // filesystem: the directory holding the objects
    std::string bucket;   // s3
    bool path_style = true;
    int64_t max_object_bytes = 0;
  } storage;

  struct worker_section {
    std::string id;  // empty: hostname-pid
    int max_in_flight = 1000;
    int heartbeat_pool_size = 2;
    int preprocessing_pool_size_dec = 1;
    int shutdown_grace_seconds = 600;
    int heartbeat_rate_seconds = 60;
    int heartbeat_extension_seconds = 300;
    int stale_ingestion_threshold_minutes = 5;
    int max_retry_attempts = 3;
    std::vector<int64_t> retry_backoff_seconds;
    int step_timeout_seconds = 300;
    int sweeper_interval_seconds = 60;
  } worker;

  struct transcription_section {
    std::string provider;  // "tesseract" | "document_ai"
    double ocr_quality_threshold = 0.7;
    std::string languages;
    int64_t max_file_bytes = 0;
    int max_pages = 0;
    int timeout_seconds = 300;
    std::string document_ai_endpoint;
  } transcription;

  struct extraction_section {
    std::string provider;  // "local" | "llm"
    std::string llm_base_url;
    std::string llm_model;
    int timeout_seconds = 120;
    int max_attempts = 3;
  } extraction;

  struct notify_section {
    std::string link_template;
  } notify;

  struct admin_section {
    std::string bind;
    int port = 0;  // 0: disabled
  } admin;

  struct intake_section {
    std::string bind;
    int port = 0;  // 0: disabled
    std::string default_tenant;
  } intake;

  struct log_section {
    std::string format;  // "json" | "text"
    std::string level;   // "trace" | "debug" | "info" | "warn" | "error"
  } log;

  /// Read from the environment only; never printed.
  struct secrets_section {
    std::string llm_api_key;          // INGESTD_LLM_API_KEY
    std::string document_ai_token;    // INGESTD_DOCUMENT_AI_TOKEN
    std::string notify_webhook_url;   // INGESTD_NOTIFY_WEBHOOK_URL
    std::string intake_token;         // INGESTD_INTAKE_TOKEN
  } secrets;

  /// The effective configuration as JSON, secrets masked (set/unset) and the password in the
  /// database URL replaced by "****".
  std::string to_json() const;
};

using environment = std::map<std::string, std::string>;

/// The process environment as a map.
environment process_environment();

/// Loads the file at `path` (or only the defaults when nullopt), applies the environment's
/// overrides and validates everything. The error lists every problem, one per line.
result<config> load_config(const std::optional<std::string>& path, const environment& env);

/// The built-in defaults as the JSON text of config/ingestd.json.
std::string default_config_json();

/// "postgresql://user:****@host/db" for "postgresql://user:secret@host/db".
std::string mask_url_password(const std::string& url);

} // namespace ingestd
