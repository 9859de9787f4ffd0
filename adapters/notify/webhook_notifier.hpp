// The failure notifier: an event sink that posts one Slack-compatible message per failed
// ingestion or matching (the INGESTION_FAILED and MATCHING_FAILED events of the status event
// stream) with its document, tenant, error, attempts and an admin link, over the http_client
// port. The relay delivers its events at least once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http/http_client.hpp"
#include "adapters/notify/event_sink.hpp"

namespace ingestd {

/// What an operator needs to act on a failed ingestion (or a document's failed matching).
struct failure_notice {
  /// Empty for a matching failure.
  std::string ingestion_id;
  std::string document_id;
  std::string tenant_id;
  /// The last error.
  std::string error;
  /// "transient" (attempts exhausted), "permanent" or "poison".
  std::string error_class;
  int32_t attempts = 0;
  /// The stage that failed: "ingest" or "match".
  std::string stage = "ingest";
};

/// The event types the notifier takes.
inline const std::vector<std::string>& failure_event_types() {
  static const std::vector<std::string> types{"INGESTION_FAILED", "MATCHING_FAILED"};
  return types;
}

/// The notice of a failure event (the stream's JSON); nullopt for any other event.
std::optional<failure_notice> notice_of_event(std::string_view event_json);

struct webhook_options {
  /// The webhook URL (e.g. https://hooks.slack.com/services/...). Treated as a secret: only its
  /// scheme and host are ever logged. Empty disables notifications (notify_failed answers ok).
  std::string url;
  /// The admin link; {document_id}, {ingestion_id} and {tenant_id} are replaced.
  std::string link_template = "https://admin.example/documents/{document_id}";
  std::chrono::milliseconds timeout{10'000};
  /// This node's id, for the log lines about a notice (they name the node, stage, ingestion,
  /// document and tenant, as the job's own lines do).
  std::string worker_id;
};

class webhook_notifier final : public event_sink {
public:
  /// `http` must outlive every call in flight.
  webhook_notifier(http_client& http, webhook_options opts);

  /// Posts the notice of a failure event; any other event is delivered without a post.
  void deliver(sink_event event, callback<void> done) override;

  /// Errors: "notify.http_<status>" (transient for 429/5xx, permanent for other statuses) or the
  /// transport's error ("http.connect", "http.timeout": transient), with the URL in its message
  /// replaced by loggable(url). Logged through log::, never thrown.
  void notify_failed(failure_notice notice, callback<void> done);

  /// The request body for `notice` (exposed for tests).
  std::string payload(const failure_notice& notice) const;

  /// The admin link for `notice`.
  std::string link(const failure_notice& notice) const;

  /// "https://hooks.slack.com" of a webhook URL: its scheme and host, without user, port, path,
  /// query or fragment (the secret parts).
  static std::string loggable(std::string_view url);

private:
  /// `text` with the webhook URL, and its part after the host, replaced by redacted forms.
  std::string scrub(std::string text) const;

  http_client& http_;
  webhook_options opts_;
};

} // namespace ingestd
