// event_webhook_sink: the signature, the URL check and the POST.
#include "adapters/notify/event_webhook_sink.hpp"

#include <algorithm>

#include "adapters/aws/encoding.hpp"
#include "adapters/notify/webhook_notifier.hpp"
#include "messages/hex.hpp"

namespace ingestd {

namespace {

/// The parsed host is exactly a loopback name: a host that only starts like one
/// ("127.attacker.example") is not.
bool loopback(const std::string& host) {
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]" || host == "::1";
}

} // namespace

result<void> validate(const event_webhook_options& opts) {
  if (opts.url.empty())
    return {};
  aws::url_parts parts;
  if (!aws::parse_url(opts.url, parts) || parts.host.empty())
    return error::make_permanent(
        "config.events_webhook",
        "INGESTD_EVENTS_WEBHOOK_URL is not a URL (expected https://host/path)");
  if (parts.scheme != "https" && !(parts.scheme == "http" && loopback(parts.host)))
    return error::make_permanent("config.events_webhook",
                                 "INGESTD_EVENTS_WEBHOOK_URL must use https (plain http only to a "
                                 "loopback host such as 127.0.0.1), not "
                                     + parts.scheme + "://" + parts.host);
  if (opts.secret.empty())
    return error::make_permanent("config.events_webhook",
                                 "INGESTD_EVENTS_WEBHOOK_SECRET must be set when "
                                 "INGESTD_EVENTS_WEBHOOK_URL is (the events are signed with it)");
  return {};
}

std::string event_signature(std::string_view secret, int64_t timestamp, std::string_view body) {
  std::string message = std::to_string(timestamp);
  message += '.';
  message.append(body);
  return "sha256=" + hex_encode(aws::hmac_sha256(secret, message));
}

event_webhook_sink::event_webhook_sink(http_client& http, event_webhook_options opts)
    : http_(http), opts_(std::move(opts)), loggable_(webhook_notifier::loggable(opts_.url)) {}

void event_webhook_sink::deliver(sink_event event, callback<void> done) {
  auto now = std::chrono::duration_cast<std::chrono::seconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  http_request req;
  req.method = "POST";
  req.url = opts_.url;
  req.headers = {{"Content-Type", "application/json"},
                 {"X-Ingestd-Timestamp", std::to_string(now)},
                 {"X-Ingestd-Signature", event_signature(opts_.secret, now, event.body)},
                 {"X-Ingestd-Event-Id", event.event_id}};
  req.body = std::move(event.body);
  req.connect_timeout = std::min(opts_.timeout, std::chrono::milliseconds{5'000});
  req.total_timeout = opts_.timeout;
  req.max_response_bytes = size_t{64} * 1024;
  http_.submit(
      std::move(req), [done = std::move(done), where = loggable_](result<http_response> r) {
        if (!r) {
          auto err = r.error();
          err.message = "the events webhook " + where + " was not reached (" + err.code + ")";
          return done(err);
        }
        if (r->status >= 200 && r->status < 300)
          return done(result<void>{});
        done(error::make_transient("events.http_" + std::to_string(r->status),
                                   "the events webhook " + where + " answered HTTP "
                                       + std::to_string(r->status)));
      });
}

} // namespace ingestd
