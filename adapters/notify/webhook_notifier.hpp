// Slack-compatible webhook notifications over the http_client port: one JSON POST per failed
// ingestion with its document, tenant, error, attempts and an admin link.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "adapters/http/http_client.hpp"
#include "adapters/notify/notifier.hpp"

namespace ingestd {

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

class webhook_notifier final : public notifier {
public:
  /// `http` must outlive every notify_failed() call in flight.
  webhook_notifier(http_client& http, webhook_options opts);

  /// Errors: "notify.http_<status>" (transient for 429/5xx, permanent for other statuses) or the
  /// transport's error ("http.connect", "http.timeout": transient), with the URL in its message
  /// replaced by loggable(url). Logged through log::, never thrown.
  void notify_failed(failure_notice notice, callback<void> done) override;

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
