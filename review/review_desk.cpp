// The review desk's routes: who is calling (bearer token, cookie session or open desk), CSRF on
// cookie-session POSTs, sign-in throttling, the JSON API over review_service and the HTML pages,
// and the security headers of every answer under /review.
#include "review/review_desk.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/http_server/checks.hpp"
#include "adapters/http_server/server.hpp"
#include "adapters/support/log.hpp"
#include "intake/intake_server.hpp"
#include "messages/error_codes.hpp"
#include "review/review_pages.hpp"
#include "review/review_request.hpp"
#include "review/review_service.hpp"

namespace ingestd {

namespace {

using http_server::request;
using http_server::response;

constexpr const char* cookie_name = "ingestd_review";
constexpr const char* html = "text/html; charset=utf-8";
constexpr const char* uuid_re
    = "([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})";

std::string json_string(std::string_view s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return {buf.GetString(), buf.GetSize()};
}

void send_json(response& res, int status, const std::string& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body, "application/json");
}

void send_error(response& res, int status, std::string_view code, std::string_view message) {
  send_json(res, status,
            "{\"error\":" + json_string(code) + ",\"message\":" + json_string(message) + "}");
}

int status_of(const error& e) {
  if (e.transient())
    return 503;
  if (e.code == errc::review_not_found || e.code == errc::review_page_out_of_range
      || e.code == errc::storage_not_found)
    return 404;
  if (e.code == errc::review_conflict)
    return 409;
  if (e.code == errc::review_invalid || e.code == errc::review_unknown_provider
      || e.code == errc::review_provider_unavailable)
    return 400;
  if (e.code == errc::review_schema_invalid || e.code == errc::review_unreadable
      || e.code == errc::review_unsupported_type)
    return 422;
  return 500;
}

/// A failure of the service: its code and message for a client's mistake (4xx); for an
/// unavailable dependency (503, Retry-After) or an internal error, the code and a generic message,
/// the detail (database host, port, statement) going to the log only.
void send_failure(response& res, const error& e) {
  auto status = status_of(e);
  if (status < 500)
    return send_error(res, status, e.code, e.message);
  log::warn("review: request failed", {{"status", status}, {"error", e.describe()}});
  if (status == 503) {
    res.set_header("Retry-After", "5");
    return send_error(res, 503, e.code, "the service is unavailable; try again shortly");
  }
  send_error(res, status, e.code, "internal error");
}

/// The headers of every answer under /review.
void security_headers(const request&, response& res) {
  res.set_header("Content-Security-Policy", content_security_policy());
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("X-Content-Type-Options", "nosniff");
  // same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with the
  // desk's own form posts, which the Origin check must refuse.
  res.set_header("Referrer-Policy", "same-origin");
}

std::string lowered(std::string_view s) {
  std::string out;
  for (char c : s)
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

/// The value of cookie `name` in the request's Cookie header.
std::string cookie_of(const request& req, std::string_view name) {
  auto header = req.get_header_value("Cookie");
  std::string_view rest{header};
  while (!rest.empty()) {
    auto semi = rest.find(';');
    auto part = rest.substr(0, semi);
    while (!part.empty() && part.front() == ' ')
      part.remove_prefix(1);
    auto eq = part.find('=');
    if (eq != std::string_view::npos && part.substr(0, eq) == name)
      return std::string{part.substr(eq + 1)};
    if (semi == std::string_view::npos)
      break;
    rest.remove_prefix(semi + 1);
  }
  return {};
}

/// A reviewer's name as given: printable, at most 80 characters.
std::string clean_name(std::string_view s, std::string_view fallback) {
  std::string out;
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f && out.size() < 80)
      out.push_back(c);
  auto first = out.find_first_not_of(' ');
  if (first == std::string::npos)
    return std::string{fallback};
  out.erase(0, first);
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

std::string done_json(const review_done& d) {
  std::string out = "{\"status\":"
                    + json_string(d.action == "approve"  ? "approved"
                                  : d.action == "reject" ? "rejected"
                                                         : "reprocessing")
                    + ",\"version\":" + std::to_string(d.version)
                    + ",\"warnings\":" + findings_json(d.warnings) + ",\"changes\":" + d.changes;
  auto provider = [](const std::string& name) {
    return name.empty() ? std::string{"null"} : json_string(name);
  };
  if (d.ingestion_id)
    out += ",\"ingestion_id\":" + json_string(d.ingestion_id->str())
           + ",\"enqueued\":" + (d.enqueued ? "true" : "false")
           + ",\"transcription_provider\":" + provider(d.providers.transcription)
           + ",\"extraction_provider\":" + provider(d.providers.extraction);
  return out + "}";
}

std::string queue_json(const review_queue& q) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  auto str = [&w](const char* key, const std::string& v) {
    w.Key(key);
    w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
  };
  w.StartObject();
  w.Key("counts");
  w.StartObject();
  for (auto reason : review_reasons) {
    int64_t n = 0;
    for (auto& [k, v] : q.counts)
      if (k == reason)
        n = v;
    w.Key(reason.data(), static_cast<rapidjson::SizeType>(reason.size()));
    w.Int64(n);
  }
  w.Key("processing");
  w.Int64(q.processing);
  w.EndObject();
  w.Key("documents");
  w.StartArray();
  for (auto& it : q.items) {
    w.StartObject();
    str("document_id", it.document_id.str());
    str("tenant_id", it.tenant_id.str());
    str("file_name", it.file_name);
    str("reason", it.reason);
    str("detail", it.detail);
    str("supplier", it.supplier);
    str("total", it.total);
    str("currency", it.currency);
    w.Key("age_seconds");
    w.Int64(it.age_seconds);
    w.Key("version");
    w.Int64(it.version);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return {buf.GetString(), buf.GetSize()};
}

} // namespace

result<void> check_review_exposure(std::string_view bind,
                                   const http_server::tenant_tokens& tokens) {
  if (!tokens.empty() || is_loopback_bind(bind))
    return {};
  std::string msg = "review.enabled is true and admin.bind is ";
  msg.append(bind.empty() ? std::string_view{"empty"} : bind);
  msg.append(", not a loopback address, but no review token is set: set INGESTD_REVIEW_TOKEN, "
             "or bind the admin endpoint to 127.0.0.1");
  return error::make_permanent("review.unauthenticated", std::move(msg));
}

/// Who is calling: a reviewer with their tenants, and whether by cookie (then POSTs need `csrf`).
struct review_desk::caller {
  reviewer who;
  bool via_cookie = false;
  std::string csrf;
};

/// The route handlers; `desk` keeps the desk alive while the server holds them.
class review_desk::handlers {
public:
  explicit handlers(std::shared_ptr<review_desk> desk) : desk_(std::move(desk)) {}

  /// The caller, or nullopt after answering (401 for the API, a redirect to the login page for
  /// pages). POSTs by cookie must carry the session's CSRF token (403 otherwise); `before_body`:
  /// the body is not in yet, so a token that may come as its form field is not judged. A bad
  /// bearer token counts as a failed sign-in of the address (429 past the limit).
  std::optional<caller> authenticate(const request& req, response& res, bool api,
                                     bool before_body = false) const {
    auto& opts = desk_->opts_;
    auto header = req.get_header_value("Authorization");
    if (!header.empty()) {
      auto address = "addr:" + req.remote_addr;
      if (auto wait = desk_->attempts_.blocked_for(address, std::chrono::steady_clock::now())) {
        res.set_header("Retry-After", std::to_string(wait->count()));
        send_error(res, 429, "review.throttled",
                   "too many failed attempts from this address; try again later");
        return std::nullopt;
      }
      constexpr std::string_view prefix = "Bearer ";
      std::vector<uuid> tenants;
      if (header.starts_with(prefix))
        tenants = opts.tokens.empty() && opts.default_tenant
                      ? std::vector<uuid>{*opts.default_tenant}
                      : opts.tokens.tenants_of(std::string_view{header}.substr(prefix.size()));
      if (tenants.empty()) {
        desk_->attempts_.record(address, std::chrono::steady_clock::now());
        log::warn("review: bad bearer token",
                  {{"remote_addr", req.remote_addr}, {"path", req.path}});
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, 401, "review.unauthorized",
                   "the bearer token is not valid for the review desk");
        return std::nullopt;
      }
      return caller{
          reviewer{clean_name(req.get_header_value("X-Reviewer"), "api"), std::move(tenants)},
          false,
          {}};
    }
    if (auto sid = cookie_of(req, cookie_name); !sid.empty())
      if (auto s = desk_->sessions_.find(sid)) {
        if (req.method == "POST" && (!before_body || req.has_header("X-CSRF-Token"))) {
          auto sent = req.has_header("X-CSRF-Token") ? req.get_header_value("X-CSRF-Token")
                                                     : req.get_param_value("csrf");
          if (!http_server::secrets_equal(sent, s->csrf)) {
            send_error(res, 403, "review.csrf",
                       "the request does not carry this session's CSRF token; reload the page");
            return std::nullopt;
          }
        }
        return caller{reviewer{s->reviewer, s->tenants}, true, s->csrf};
      }
    if (api && opts.tokens.empty() && opts.default_tenant)
      return caller{
          reviewer{clean_name(req.get_header_value("X-Reviewer"), "api"), {*opts.default_tenant}},
          false,
          {}};
    if (api) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, "review.unauthorized",
                 "sign in at /review/login or send Authorization: Bearer <INGESTD_REVIEW_TOKEN>");
    } else {
      res.status = 303;
      res.set_header("Location", "/review/login");
    }
    return std::nullopt;
  }

  /// The gate of a POST: its caller is known before its body is read.
  bool authenticate_before_body(const request& req, response& res, bool api) const {
    return authenticate(req, res, api, true).has_value();
  }

  /// The sign-in form's gate: an address past the limit is refused before the form is read.
  bool sign_in_allowed(const request& req, response& res) const {
    auto wait
        = desk_->attempts_.blocked_for("addr:" + req.remote_addr, std::chrono::steady_clock::now());
    if (!wait)
      return true;
    throttled(req, res, "", *wait);
    return false;
  }

  void throttled(const request& req, response& res, const std::string& name,
                 std::chrono::seconds wait) const {
    log::warn("review: sign-in throttled", {{"remote_addr", req.remote_addr}, {"reviewer", name}});
    res.status = 429;
    res.set_header("Retry-After", std::to_string(wait.count()));
    res.set_header("Cache-Control", "no-store");
    res.set_content(
        login_page("Too many failed sign-ins. Try again in " + std::to_string(wait.count()) + " s.",
                   open()),
        html);
  }

  /// What an API POST's JSON body asks for (application/json only: a cross-site form cannot
  /// send it); nullopt after answering 415 or 400.
  static std::optional<review_request> json_body(const request& req, response& res,
                                                 std::string_view action) {
    if (req.get_header_value("Content-Type").find("application/json") != 0) {
      send_error(res, 415, "review.not_json", "send the request as application/json");
      return std::nullopt;
    }
    auto body = parse_review_request(action, req.body);
    if (!body) {
      send_error(res, 400, body.error().code, body.error().message);
      return std::nullopt;
    }
    return std::move(*body);
  }

  /// The caller's tenants narrowed to ?tenant= (403 for a tenant not theirs).
  static bool narrow_tenants(const request& req, response& res, caller& c) {
    auto text = req.get_param_value("tenant");
    if (text.empty())
      return true;
    auto t = uuid::parse(text);
    if (!t || std::find(c.who.tenants.begin(), c.who.tenants.end(), *t) == c.who.tenants.end()) {
      send_error(res, 403, "review.tenant", "this token does not open tenant " + text);
      return false;
    }
    c.who.tenants = {*t};
    return true;
  }

  static std::optional<review_queue_filter> filter_of(const request& req, response& res,
                                                      const caller& c) {
    review_queue_filter f;
    f.tenants = c.who.tenants;
    f.reason = req.get_param_value("reason");
    if (!f.reason.empty()
        && std::find(std::begin(review_reasons), std::end(review_reasons), f.reason)
               == std::end(review_reasons)) {
      send_error(res, 400, "review.invalid", "reason must be gate, failed, sample or calibration");
      return std::nullopt;
    }
    if (auto limit = req.get_param_value("limit"); !limit.empty()) {
      try {
        f.limit = std::clamp(std::stoi(limit), 1, 1000);
      } catch (const std::exception&) {
        send_error(res, 400, "review.invalid", "limit must be a number");
        return std::nullopt;
      }
    }
    return f;
  }

  void api_queue(const request& req, response& res) const {
    auto c = authenticate(req, res, true);
    if (!c || !narrow_tenants(req, res, *c))
      return;
    auto f = filter_of(req, res, *c);
    if (!f)
      return;
    auto q = desk_->service_->queue(*f);
    if (!q)
      return send_failure(res, q.error());
    send_json(res, 200, queue_json(*q));
  }

  void api_document(const request& req, response& res) const {
    auto c = authenticate(req, res, true);
    if (!c)
      return;
    auto& svc = *desk_->service_;
    auto doc = svc.document(c->who.tenants, *uuid::parse(req.matches[1].str()));
    if (!doc)
      return send_failure(res, doc.error());
    if (!*doc)
      return send_error(res, 404, "review.not_found", "no such document");
    auto reading = svc.reading(**doc);
    if (!reading)
      return send_failure(res, reading.error());
    send_json(res, 200, svc.document_json(**doc, *reading));
  }

  void api_page(const request& req, response& res) const {
    auto c = authenticate(req, res, true);
    if (!c)
      return;
    int index = 0;
    try {
      index = std::stoi(req.matches[2].str());
    } catch (const std::exception&) {
      return send_error(res, 400, "review.invalid", "the page is not a number");
    }
    auto img = desk_->service_->page(c->who.tenants, *uuid::parse(req.matches[1].str()), index,
                                     req.get_param_value("variant"));
    if (!img)
      return send_failure(res, img.error());
    res.set_header("Cache-Control", "private, max-age=300");
    res.set_content(img->bytes, img->content_type.c_str());
  }

  void api_action(const request& req, response& res, const std::string& action) const {
    auto c = authenticate(req, res, true);
    if (!c)
      return;
    auto body = json_body(req, res, action);
    if (!body)
      return;
    auto& svc = *desk_->service_;
    auto id = *uuid::parse(req.matches[1].str());
    if (action == "check") {
      auto doc = svc.document(c->who.tenants, id);
      if (!doc)
        return send_failure(res, doc.error());
      if (!*doc)
        return send_error(res, 404, "review.not_found", "no such document");
      auto checked = svc.check(**doc, body->fields);
      if (!checked)
        return send_failure(res, checked.error());
      return send_json(
          res, 200,
          std::string{"{\"valid\":"} + (checked->schema_error.empty() ? "true" : "false")
              + ",\"schema_error\":" + json_string(checked->schema_error) + ",\"warnings\":"
              + findings_json(checked->warnings) + ",\"changes\":" + checked->changes + "}");
    }
    auto version = *body->version;
    result<review_done> done = error::make_permanent(errc::review_invalid, "unknown action");
    if (action == "approve")
      done = svc.approve(c->who, id, version, body->fields);
    else if (action == "reject")
      done = svc.reject(c->who, id, version, std::move(body->reason));
    else if (action == "reprocess")
      done = svc.reprocess(c->who, id, version, body->providers);
    if (!done)
      return send_failure(res, done.error());
    send_json(res, 200, done_json(*done));
  }

  void api_learned(const request& req, response& res) const {
    auto c = authenticate(req, res, true);
    if (!c || !narrow_tenants(req, res, *c))
      return;
    auto facts = desk_->service_->learned(c->who.tenants);
    if (!facts)
      return send_failure(res, facts.error());
    send_json(res, 200, review_service::learned_json(*facts));
  }

  void api_forget(const request& req, response& res) const {
    auto c = authenticate(req, res, true);
    if (!c)
      return;
    auto tenant = uuid::parse(req.get_param_value("tenant"));
    auto supplier = req.get_param_value("supplier");
    auto field = req.get_param_value("field");
    if (!tenant || supplier.empty() || field.empty())
      return send_error(res, 400, "review.invalid",
                        "name the fact: ?tenant=UUID&supplier=...&field=...");
    auto done = desk_->service_->forget(c->who, *tenant, supplier, field);
    if (!done)
      return send_failure(res, done.error());
    send_json(res, 200, R"({"forgotten":true})");
  }

  void page_learned(const request& req, response& res) const {
    auto c = authenticate(req, res, false);
    if (!c)
      return;
    auto facts = desk_->service_->learned(c->who.tenants);
    if (!facts)
      return send_failure(res, facts.error());
    res.set_header("Cache-Control", "no-store");
    res.set_content(knowledge_page(page_context{c->who.name, c->csrf, c->who.tenants}, *facts),
                    html);
  }

  void page_queue(const request& req, response& res) const {
    auto c = authenticate(req, res, false);
    if (!c)
      return;
    auto all_tenants = c->who.tenants;
    if (!narrow_tenants(req, res, *c))
      return;
    auto f = filter_of(req, res, *c);
    if (!f)
      return;
    auto q = desk_->service_->queue(*f);
    if (!q)
      return send_failure(res, q.error());
    res.set_header("Cache-Control", "no-store");
    res.set_content(queue_page(page_context{c->who.name, c->csrf, all_tenants}, *q, *f,
                               req.get_param_value("tenant")),
                    html);
  }

  void page_document(const request& req, response& res) const {
    auto c = authenticate(req, res, false);
    if (!c)
      return;
    auto& svc = *desk_->service_;
    auto doc = svc.document(c->who.tenants, *uuid::parse(req.matches[1].str()));
    if (!doc)
      return send_failure(res, doc.error());
    if (!*doc) {
      res.status = 404;
      return res.set_content("<!doctype html><p>No such document. <a href=\"/review\">Queue</a>",
                             html);
    }
    document_view view;
    view.doc = &**doc;
    view.providers = svc.providers();
    view.findings = svc.findings((*doc)->structured_data);
    if (auto reading = svc.reading(**doc))
      view.reading = std::move(*reading);
    review_queue_filter f;
    f.tenants = c->who.tenants;
    f.limit = 2;
    if (auto q = svc.queue(f))
      for (auto& it : q->items)
        if (it.document_id != (*doc)->id) {
          view.next_id = it.document_id.str();
          break;
        }
    res.set_header("Cache-Control", "no-store");
    res.set_content(document_page(page_context{c->who.name, c->csrf, c->who.tenants}, view), html);
  }

  void login(const request& req, response& res) const {
    auto& opts = desk_->opts_;
    bool open = opts.tokens.empty();
    auto name = clean_name(req.get_param_value("name"), "");
    auto now = std::chrono::steady_clock::now();
    auto by_address = "addr:" + req.remote_addr;
    auto by_name = "name:" + lowered(name);
    if (!open) {
      auto wait = desk_->attempts_.blocked_for(by_address, now);
      if (auto for_name = desk_->attempts_.blocked_for(by_name, now); for_name && !name.empty())
        wait = wait ? std::max(*wait, *for_name) : *for_name;
      if (wait)
        return throttled(req, res, name, *wait);
    }
    std::vector<uuid> tenants;
    if (open && opts.default_tenant)
      tenants = {*opts.default_tenant};
    else if (!open)
      tenants = opts.tokens.tenants_of(req.get_param_value("token"));
    if (tenants.empty() && !open) {
      desk_->attempts_.record(by_address, now);
      if (!name.empty())
        desk_->attempts_.record(by_name, now);
      log::warn("review: sign-in failed", {{"remote_addr", req.remote_addr}, {"reviewer", name}});
    }
    if (tenants.empty() || name.empty()) {
      res.status = tenants.empty() ? 401 : 400;
      res.set_header("Cache-Control", "no-store");
      return res.set_content(
          login_page(tenants.empty() ? "That token is not valid." : "Enter your name.", open),
          html);
    }
    auto sid = desk_->sessions_.open(name, std::move(tenants));
    log::info("review: signed in", {{"reviewer", name}, {"remote_addr", req.remote_addr}});
    res.set_header("Set-Cookie", std::string{cookie_name} + "=" + sid + "; Path=/review; HttpOnly; "
                                     + "SameSite=Strict" + (opts.secure_cookie ? "; Secure" : ""));
    res.status = 303;
    res.set_header("Location", "/review");
  }

  void logout(const request& req, response& res) const {
    if (!authenticate(req, res, false))
      return;
    desk_->sessions_.close(cookie_of(req, cookie_name));
    res.set_header("Set-Cookie", std::string{cookie_name}
                                     + "=; Path=/review; HttpOnly; SameSite=Strict; Max-Age=0"
                                     + (desk_->opts_.secure_cookie ? "; Secure" : ""));
    res.status = 303;
    res.set_header("Location", "/review/login");
  }

  bool open() const { return desk_->opts_.tokens.empty(); }

private:
  std::shared_ptr<review_desk> desk_;
};

review_desk::review_desk(std::shared_ptr<review_service> service, review_desk_options opts)
    : service_(std::move(service)), opts_(std::move(opts)),
      sessions_(opts_.session_lifetime, opts_.max_sessions),
      attempts_(static_cast<size_t>(std::max(opts_.sign_in_attempts_per_minute, 1)),
                std::chrono::seconds{60}) {}

void review_desk::mount(http_server::server& svr) {
  auto h = std::make_shared<handlers>(shared_from_this());
  // Refusals of the server under /review in the desk's error format; every answer under /review
  // carries the security headers.
  svr.set_area(
      "/review",
      [](response& res, int status, std::string_view code, std::string_view message) {
        send_error(res, status, code, message);
      },
      security_headers);
  // The desk's POSTs are small JSON bodies or the sign-in form, their caller known before the
  // body is read.
  http_server::route_options api_post;
  api_post.max_body = size_t{1} << 20;
  api_post.before_body = [h](const request& req, response& res) {
    return h->authenticate_before_body(req, res, true);
  };
  http_server::route_options sign_in;
  sign_in.max_body = size_t{16} * 1024;
  sign_in.before_body
      = [h](const request& req, response& res) { return h->sign_in_allowed(req, res); };
  http_server::route_options sign_out;
  sign_out.max_body = size_t{16} * 1024;
  sign_out.before_body = [h](const request& req, response& res) {
    return h->authenticate_before_body(req, res, false);
  };
  using req_t = const request&;
  using res_t = response&;
  std::string doc = std::string{"/review/api/documents/"} + uuid_re;
  svr.get("/review/api/queue", [h](req_t req, res_t res) { h->api_queue(req, res); });
  svr.get(doc, [h](req_t req, res_t res) { h->api_document(req, res); });
  svr.get(doc + R"(/pages/([0-9]{1,5})\.png)",
          [h](req_t req, res_t res) { h->api_page(req, res); });
  for (std::string action : {"check", "approve", "reject", "reprocess"}) {
    auto path = doc;
    path.append("/").append(action);
    svr.post(
        path, [h, action](req_t req, res_t res) { h->api_action(req, res, action); }, api_post);
  }
  svr.get("/review/api/knowledge", [h](req_t req, res_t res) { h->api_learned(req, res); });
  svr.post(
      "/review/api/knowledge/forget", [h](req_t req, res_t res) { h->api_forget(req, res); },
      api_post);
  svr.get("/review/knowledge", [h](req_t req, res_t res) { h->page_learned(req, res); });
  svr.get("/review", [h](req_t req, res_t res) { h->page_queue(req, res); });
  svr.get("/review/", [h](req_t req, res_t res) { h->page_queue(req, res); });
  svr.get(std::string{"/review/documents/"} + uuid_re,
          [h](req_t req, res_t res) { h->page_document(req, res); });
  svr.get("/review/login", [h](req_t, res_t res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(login_page("", h->open()), html);
  });
  svr.post(
      "/review/login", [h](req_t req, res_t res) { h->login(req, res); }, sign_in);
  svr.post(
      "/review/logout", [h](req_t req, res_t res) { h->logout(req, res); }, sign_out);
}

} // namespace ingestd
