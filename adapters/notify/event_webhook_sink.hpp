// The status event stream's webhook sink: one signed JSON POST per event. The receiver checks
// X-Ingestd-Signature = "sha256=" + hex HMAC-SHA256(secret, "<X-Ingestd-Timestamp>.<body>") and
// de-duplicates by X-Ingestd-Event-Id (delivery is at least once).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "adapters/http/http_client.hpp"
#include "adapters/notify/event_sink.hpp"

namespace ingestd {

struct event_webhook_options {
  /// INGESTD_EVENTS_WEBHOOK_URL: https, or plain http to a loopback host. A secret: only its
  /// scheme and host are logged.
  std::string url;
  /// INGESTD_EVENTS_WEBHOOK_SECRET: the HMAC key.
  std::string secret;
  std::chrono::milliseconds timeout{10'000};
};

/// Checks the options as the daemon's start does: an error naming the variable, or nothing.
result<void> validate(const event_webhook_options& opts);

/// "sha256=<hex HMAC-SHA256 of "<timestamp>.<body>" keyed with `secret`>".
std::string event_signature(std::string_view secret, int64_t timestamp, std::string_view body);

class event_webhook_sink final : public event_sink {
public:
  /// `http` must outlive every deliver() in flight.
  event_webhook_sink(http_client& http, event_webhook_options opts);

  /// A 2xx answer delivers; any other status or a transport error is an error (the relay tries
  /// again after a back-off). The URL never appears in an error.
  void deliver(sink_event event, callback<void> done) override;

private:
  http_client& http_;
  event_webhook_options opts_;
  std::string loggable_;
};

} // namespace ingestd
