// The webhook body follows Slack's incoming-webhook format ("text" plus legacy attachment fields,
// which Slack renders as a table) and adds an "ingestd" object with the raw values for machines.
#include "adapters/notify/webhook_notifier.hpp"

#include <exception>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <spdlog/spdlog.h>

namespace ingestd {

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

/// "https://hooks.slack.com" of a webhook URL: the path is the secret part.
std::string loggable(std::string_view url) {
  auto scheme = url.find("://");
  auto start = scheme == std::string_view::npos ? 0 : scheme + 3;
  auto slash = url.find('/', start);
  return std::string{url.substr(0, slash)};
}

} // namespace

webhook_notifier::webhook_notifier(http_client& http, webhook_options opts)
  : http_(http), opts_(std::move(opts)) {}

std::string webhook_notifier::link(const failure_notice& n) const {
  std::string out = opts_.link_template;
  replace_all(out, "{document_id}", n.document_id);
  replace_all(out, "{ingestion_id}", n.ingestion_id);
  replace_all(out, "{tenant_id}", n.tenant_id);
  return out;
}

std::string webhook_notifier::payload(const failure_notice& n) const {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto str = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  auto url = link(n);
  std::string text = "Ingestion failed after " + std::to_string(n.attempts) + " attempt"
                     + (n.attempts == 1 ? "" : "s") + ": document " + n.document_id + " (tenant "
                     + n.tenant_id + "): " + n.error;
  if (!url.empty())
    text += " <" + url + "|open in admin>";
  w.StartObject();
  w.Key("text");
  str(text);
  w.Key("attachments");
  w.StartArray();
  w.StartObject();
  w.Key("color");
  str("danger");
  w.Key("fallback");
  str(text);
  w.Key("fields");
  w.StartArray();
  auto field = [&](std::string_view title, std::string_view value, bool short_field) {
    w.StartObject();
    w.Key("title");
    str(title);
    w.Key("value");
    str(value);
    w.Key("short");
    w.Bool(short_field);
    w.EndObject();
  };
  field("Document", n.document_id, true);
  field("Tenant", n.tenant_id, true);
  field("Ingestion", n.ingestion_id, true);
  field("Attempts", std::to_string(n.attempts), true);
  field("Error class", n.error_class, true);
  field("Error", n.error, false);
  if (!url.empty())
    field("Link", url, false);
  w.EndArray();
  w.EndObject();
  w.EndArray();
  w.Key("ingestd");
  w.StartObject();
  w.Key("event");
  str("ingestion_failed");
  w.Key("document_id");
  str(n.document_id);
  w.Key("tenant_id");
  str(n.tenant_id);
  w.Key("ingestion_id");
  str(n.ingestion_id);
  w.Key("error");
  str(n.error);
  w.Key("error_class");
  str(n.error_class);
  w.Key("attempts");
  w.Int(n.attempts);
  w.Key("link");
  str(url);
  w.EndObject();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

void webhook_notifier::notify_failed(failure_notice notice, callback<void> done) {
  if (opts_.url.empty()) {
    done(result<void>{});
    return;
  }
  http_request req;
  req.method = "POST";
  req.url = opts_.url;
  req.headers = {{"Content-Type", "application/json"}};
  req.body = payload(notice);
  req.connect_timeout = std::min(opts_.timeout, std::chrono::milliseconds{5'000});
  req.total_timeout = opts_.timeout;
  req.max_response_bytes = 64 * 1024;
  auto where = loggable(opts_.url);
  auto document_id = notice.document_id;
  try {
    http_.submit(std::move(req), [done = std::move(done), where, document_id](result<http_response> r) {
      if (!r) {
        spdlog::warn("webhook notification for document {} to {} failed: {}", document_id, where,
                     r.error().describe());
        done(r.error());
        return;
      }
      long status = r->status;
      if (status >= 200 && status < 300) {
        spdlog::info("webhook notification for document {} delivered to {}", document_id, where);
        done(result<void>{});
        return;
      }
      auto msg = "webhook answered HTTP " + std::to_string(status);
      auto code = "notify.http_" + std::to_string(status);
      auto err = status == 429 || status >= 500 ? error::make_transient(code, msg)
                                                : error::make_permanent(code, msg);
      spdlog::warn("webhook notification for document {} to {} failed: {}", document_id, where,
                   err.describe());
      done(std::move(err));
    });
  } catch (const std::exception& e) {
    // The port does not throw; this guards the "never affects the ingestion" promise anyway.
    spdlog::warn("webhook notification for document {} not submitted: {}", document_id, e.what());
  }
}

} // namespace ingestd
