// The webhook body follows Slack's incoming-webhook format ("text" plus legacy attachment fields,
// which Slack renders as a table) and adds an "ingestd" object with the raw values for machines.
#include "adapters/notify/webhook_notifier.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

/// The replacement of everything after the host in logged text.
constexpr std::string_view redacted = "/<redacted>";

/// Where the authority (user@host:port) of `url` begins.
size_t authority_start(std::string_view url) {
  auto scheme = url.find("://");
  return scheme == std::string_view::npos ? 0 : scheme + 3;
}

/// Where the path, query or fragment of `url` begins (its size when none).
size_t path_start(std::string_view url) {
  return std::min(url.size(), url.find_first_of("/?#", authority_start(url)));
}

std::string member_text(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject())
    return {};
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd())
    return {};
  if (it->value.IsString())
    return {it->value.GetString(), it->value.GetStringLength()};
  if (it->value.IsInt64())
    return std::to_string(it->value.GetInt64());
  return {};
}

} // namespace

std::optional<failure_notice> notice_of_event(std::string_view event_json) {
  rapidjson::Document doc;
  doc.Parse(event_json.data(), event_json.size());
  if (doc.HasParseError() || !doc.IsObject())
    return std::nullopt;
  auto type = member_text(doc, "type");
  if (type != "INGESTION_FAILED" && type != "MATCHING_FAILED")
    return std::nullopt;
  failure_notice n;
  n.stage = type == "MATCHING_FAILED" ? "match" : "ingest";
  n.ingestion_id = member_text(doc, "ingestion_id");
  n.document_id = member_text(doc, "document_id");
  n.tenant_id = member_text(doc, "tenant_id");
  if (auto p = doc.FindMember("payload"); p != doc.MemberEnd() && p->value.IsObject()) {
    n.error = member_text(p->value, "error");
    n.error_class = member_text(p->value, "error_class");
    auto attempts = p->value.FindMember("attempts");
    if (attempts != p->value.MemberEnd() && attempts->value.IsInt())
      n.attempts = attempts->value.GetInt();
  }
  return n;
}

void webhook_notifier::deliver(sink_event event, callback<void> done) {
  auto notice = notice_of_event(event.body);
  if (!notice)
    return done(result<void>{});
  notify_failed(std::move(*notice), std::move(done));
}

std::string webhook_notifier::loggable(std::string_view url) {
  auto start = authority_start(url);
  auto authority = url.substr(start, path_start(url) - start);
  // user:password@ is as secret as the path.
  if (auto at = authority.rfind('@'); at != std::string_view::npos)
    authority.remove_prefix(at + 1);
  bool bracketed = !authority.empty() && authority.front() == '['; // an IPv6 literal
  auto host_end = bracketed ? authority.find(']') + 1 : authority.rfind(':');
  std::string out{url.substr(0, start)};
  out.append(authority.substr(0, host_end));
  return out;
}

std::string webhook_notifier::scrub(std::string text) const {
  replace_all(text, opts_.url, loggable(opts_.url));
  // Whatever follows the host (path, query, fragment) is the secret: replace it wherever a
  // transport or a server quoted it on its own.
  auto secret = std::string_view{opts_.url}.substr(path_start(opts_.url));
  if (secret.size() > 1)
    replace_all(text, secret, redacted);
  return text;
}

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
  auto str
      = [&](std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); };
  auto url = link(n);
  auto what = n.stage == "match" ? std::string{"Matching"} : std::string{"Ingestion"};
  std::string text = what + " failed after " + std::to_string(n.attempts) + " attempt"
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
  if (!n.ingestion_id.empty())
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
  str(n.stage == "match" ? "matching_failed" : "ingestion_failed");
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
  req.max_response_bytes = size_t{64} * 1024;
  auto where = loggable(opts_.url);
  // The job's fields (actors/job.cpp), for every line about this notice.
  auto about = std::make_shared<std::vector<log::field>>();
  about->emplace_back("worker_id", opts_.worker_id);
  about->emplace_back("stage", notice.stage);
  about->emplace_back("step", "notify");
  if (!notice.ingestion_id.empty())
    about->emplace_back("ingestion_id", notice.ingestion_id);
  about->emplace_back("document_id", notice.document_id);
  about->emplace_back("tenant_id", notice.tenant_id);
  auto failed = [this, where, about](const error& e) {
    auto err = e;
    err.message = scrub(err.message);
    log::write_with(log::level::warn, "webhook notification failed", *about,
                    {{"webhook", where}, {"error", err.describe()}});
    return err;
  };
  try {
    http_.submit(std::move(req),
                 [done = std::move(done), where, about, failed](result<http_response> r) {
                   if (!r) {
                     done(failed(r.error()));
                     return;
                   }
                   long status = r->status;
                   if (status >= 200 && status < 300) {
                     log::write_with(log::level::info, "webhook notification delivered", *about,
                                     {{"webhook", where}});
                     done(result<void>{});
                     return;
                   }
                   auto msg = "webhook answered HTTP " + std::to_string(status);
                   auto code = "notify.http_" + std::to_string(status);
                   done(failed(status == 429 || status >= 500 ? error::make_transient(code, msg)
                                                              : error::make_permanent(code, msg)));
                 });
  } catch (const std::exception& e) {
    // The port does not throw; this guards the "never affects the ingestion" promise anyway.
    log::write_with(log::level::warn, "webhook notification not submitted", *about,
                    {{"webhook", where}, {"error", scrub(e.what())}});
  }
}

} // namespace ingestd
