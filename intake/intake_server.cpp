// HTTP intake over http_server: request parsing, authentication and the mapping of intake's
// errors to status codes (see intake_server.hpp for the contract).
#include "intake/intake_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <utility>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/http_server/checks.hpp"
#include "adapters/support/log.hpp"
#include "intake/manifest.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace {

using http_server::request;
using http_server::response;

void send_json(response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void send_error(response& res, int status, std::string_view code, std::string_view message) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("code");
  w.String(code.data(), static_cast<rapidjson::SizeType>(code.size()));
  w.Key("message");
  w.String(message.data(), static_cast<rapidjson::SizeType>(message.size()));
  w.EndObject();
  w.EndObject();
  send_json(res, status, buf.GetString());
}

int status_for(const error& e) {
  if (e.code == errc::intake_too_large)
    return 413;
  if (e.code == errc::intake_unsupported_type || e.code == errc::intake_containers_disabled)
    return 415;
  if (e.code == errc::intake_empty || e.code == errc::intake_invalid_source
      || e.code == errc::intake_invalid_priority || e.code == errc::intake_invalid_batch)
    return 400;
  return e.cls == error_class::transient ? 503 : 500;
}

/// Answers a failure of the service: its code and message for a client's mistake (4xx); for an
/// unavailable dependency (503, Retry-After) or an internal error (500), the code and a generic
/// message, the detail (database host, port, statement) going to the log only.
void send_failure(response& res, int status, const error& e, std::string_view path) {
  if (status < 500)
    return send_error(res, status, e.code, e.message);
  log::warn("intake: request failed",
            {{"path", path}, {"status", status}, {"error", e.describe()}});
  if (status == 503) {
    res.set_header("Retry-After", "5");
    return send_error(res, 503, e.code, "the service is unavailable; try again shortly");
  }
  send_error(res, status, e.code, "internal error");
}

/// A header, or else a multipart form field.
std::string value_of(const request& req, const char* header, const char* field) {
  if (req.has_header(header))
    return req.get_header_value(header);
  if (req.is_multipart_form_data() && req.has_file(field))
    return req.get_file_value(field).content;
  return {};
}

/// The tenant the request acts for (tenant_for over the caller its gate found and X-Tenant-Id or
/// the form field tenant_id). Answers 400 or 403 and returns nullopt when there is none.
std::optional<uuid> caller_tenant(const request& req, response& res) {
  const auto* caller = std::any_cast<intake_caller>(&req.caller);
  if (caller == nullptr) {
    send_error(res, 500, "intake.internal", "internal error");
    return std::nullopt;
  }
  auto tenant = tenant_for(*caller, value_of(req, "X-Tenant-Id", "tenant_id"));
  if (!tenant) {
    send_error(res, tenant.error().code == "intake.forbidden_tenant" ? 403 : 400,
               tenant.error().code, tenant.error().message);
    return std::nullopt;
  }
  return *tenant;
}

/// The id in the path (the route's first group) and the caller's tenant, for a route on one of
/// the tenant's documents or ingestions (`what`). Answers 400 or 403 and returns nullopt when
/// either is missing.
std::optional<std::pair<uuid, uuid>> id_and_tenant(const request& req, response& res,
                                                   const char* what) {
  auto id = uuid::parse(req.matches[1].str());
  if (!id) {
    send_error(res, 400, "intake.invalid_id", std::string{what} + " id is not a UUID");
    return std::nullopt;
  }
  auto tenant = caller_tenant(req, res);
  if (!tenant)
    return std::nullopt;
  return std::pair{*id, *tenant};
}

http_server::server_options server_options_of(const intake_server_options& o) {
  http_server::server_options out;
  out.name = "intake";
  out.bind = o.bind;
  out.port = o.port;
  // Uploads are I/O bound and bounded by the database: four handler threads.
  out.worker_threads = 4;
  out.limits = o.limits;
  out.allowed_hosts = o.allowed_hosts;
  return out;
}

} // namespace

bool is_loopback_bind(std::string_view bind) {
  if (bind == "localhost")
    return true;
  std::string text{bind};
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  return false;
}

result<void> check_intake_exposure(std::string_view bind, bool has_credentials) {
  if (has_credentials || is_loopback_bind(bind))
    return {};
  std::string msg = "intake.bind is ";
  msg.append(bind.empty() ? std::string_view{"empty"} : bind);
  msg.append(", not a loopback address, and the intake has no credentials: set "
             "INGESTD_INTAKE_TOKEN, give tenants tokens with `ingestd tenants add`, or bind the "
             "intake to 127.0.0.1");
  return error::make_permanent("intake.unauthenticated", std::move(msg));
}

result<bool> check_intake_access(const std::string& bind, intake_access* access) {
  // On a loopback bind a database that cannot answer yet is asked again by each request.
  bool has_credentials = false;
  if (access != nullptr) {
    auto required = access->required();
    if (required)
      has_credentials = *required;
    else if (!is_loopback_bind(bind))
      return error{required.error().cls, "intake.unauthenticated",
                   "intake.bind is " + bind
                       + ", not a loopback address, no INGESTD_INTAKE_TOKEN is set, and the "
                         "database's tenant tokens could not be read: "
                       + required.error().describe()};
  }
  if (auto exposed = check_intake_exposure(bind, has_credentials); !exposed)
    return exposed.error();
  return has_credentials;
}

intake_server::intake_server(std::shared_ptr<intake_service> intake, intake_server_options opts)
    : intake_(std::move(intake)), opts_(std::move(opts)),
      server_(std::make_unique<http_server::server>(server_options_of(opts_))) {
  auto& svr = *server_;
  // The server's own refusals (404, 408, 413, 415, 421, ...) in the intake's error format.
  svr.set_area("", [](response& res, int status, std::string_view code, std::string_view message) {
    send_error(res, status, code, message);
  });
  // The token is checked on the headers, before any byte of a body is read; the caller it opens
  // goes with the request to its handler.
  svr.set_gate([this](request& req, response& res) {
    if (!opts_.access) {
      req.caller = intake_caller{true, {}, opts_.default_tenant};
      return true;
    }
    auto caller = opts_.access->authenticate(req.get_header_value("Authorization"));
    if (!caller) {
      send_failure(res, 503, caller.error(), req.path);
      return false;
    }
    if (!*caller) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, "intake.unauthorized", "a valid bearer token is required");
      return false;
    }
    req.caller = std::move(**caller);
    return true;
  });
  // Bodies over the limit (plus room for multipart framing) get 413 as soon as they pass it.
  http_server::route_options upload;
  upload.max_body = intake_->options().max_bytes + size_t{64} * 1024;
  svr.post(
      "/v1/documents",
      [this](const request& req, response& res) {
        intake_item item;
        item.channel = "http";
        auto tenant = caller_tenant(req, res);
        if (!tenant)
          return;
        item.tenant_id = *tenant;
        auto uploaded = value_of(req, "X-Uploaded-By", "uploaded_by");
        auto source = value_of(req, "X-Doc-Source-Id", "doc_source_id");
        if (!uploaded.empty() && !source.empty())
          return send_error(res, 400, "intake.invalid_source",
                            "give X-Uploaded-By or X-Doc-Source-Id, not both");
        if (!source.empty()) {
          if (!(item.source.doc_source_id = uuid::parse(source)))
            return send_error(res, 400, "intake.invalid_source", "X-Doc-Source-Id is not a UUID");
        } else if (!uploaded.empty()) {
          if (!(item.source.uploaded_by = uuid::parse(uploaded)))
            return send_error(res, 400, "intake.invalid_source", "X-Uploaded-By is not a UUID");
        } else {
          item.source.uploaded_by = uuid{};
        }
        // Priority: X-Priority, the form field or ?priority= (0..100, lower first; default 50).
        auto priority = value_of(req, "X-Priority", "priority");
        if (priority.empty() && req.has_param("priority"))
          priority = req.get_param_value("priority");
        if (!priority.empty()) {
          auto p = parse_priority(priority);
          if (!p)
            return send_error(res, 400, "intake.invalid_priority",
                              "priority must be a whole number 0..100 (lower first)");
          item.priority = *p;
        }
        // The submitter's own fields: X-Metadata or the form field metadata, a JSON object.
        if (auto metadata = value_of(req, "X-Metadata", "metadata"); !metadata.empty()) {
          auto fields = parse_metadata_json(metadata);
          if (!fields)
            return send_error(res, 400, fields.error().code, fields.error().message);
          item.metadata = std::move(*fields);
        }
        // A batch: X-Batch or the form field batch, the tenant's batch name (created at its
        // first document, open again until POST /v1/batches/{id}/seal).
        if (auto name = value_of(req, "X-Batch", "batch"); !name.empty()) {
          auto batch = intake_->open_batch(*tenant, name);
          if (!batch)
            return send_failure(res, status_for(batch.error()), batch.error(), req.path);
          item.batch_id = batch->id;
        }
        if (req.is_multipart_form_data()) {
          if (!req.has_file("file"))
            return send_error(res, 400, "intake.empty",
                              "multipart request without a \"file\" field");
          auto f = req.get_file_value("file");
          item.bytes = std::move(f.content);
          item.name = f.filename;
        } else {
          item.bytes = req.body;
          item.name = req.get_header_value("X-File-Name");
        }
        auto r = intake_->submit(item);
        if (!r)
          return send_failure(res, status_for(r.error()), r.error(), req.path);
        rapidjson::StringBuffer buf;
        rapidjson::Writer<rapidjson::StringBuffer> w{buf};
        auto doc = r->document_id.str(), ing = r->ingestion_id.str();
        auto status = std::string{to_string(r->status)};
        w.StartObject();
        w.Key("status");
        w.String(status.c_str());
        w.Key("document_id");
        w.String(doc.c_str());
        w.Key("ingestion_id");
        w.String(ing.c_str());
        w.Key("ingestion_status");
        w.String(r->ingestion_status.c_str());
        w.Key("mime_type");
        w.String(r->mime_type.c_str());
        w.Key("enqueued");
        w.Bool(r->enqueued);
        if (item.batch_id) {
          auto batch = item.batch_id->str();
          w.Key("batch_id");
          w.String(batch.c_str());
        }
        w.EndObject();
        bool duplicate = r->status == intake_status::duplicate;
        if (!duplicate)
          res.set_header("Location", "/v1/ingestions/" + ing);
        send_json(res, duplicate ? 200 : 202, buf.GetString());
      },
      upload);
  auto getter = [this](const char* what, auto lookup) {
    return [this, what, lookup](const request& req, response& res) {
      // Scoped to the caller's tenant: another tenant's id is "no such" (404), as an unknown one.
      auto target = id_and_tenant(req, res, what);
      if (!target)
        return;
      auto [id, tenant] = *target;
      auto r = (intake_.get()->*lookup)(tenant, id);
      if (!r)
        return send_failure(res, 503, r.error(), req.path);
      if (!*r)
        return send_error(res, 404, "intake.not_found", std::string{"no such "} + what);
      send_json(res, 200, **r);
    };
  };
  svr.get(R"(/v1/documents/([^/]+))", getter("document", &intake_service::document_json));
  svr.get(R"(/v1/ingestions/([^/]+))", getter("ingestion", &intake_service::ingestion_json));
  // A batch of the caller's: its state and counts (as in its BATCH_FINISHED event); sealing it
  // says no more documents are coming (it finishes once nothing of it is in progress).
  auto batch_route = [this](bool seal) {
    return [this, seal](const request& req, response& res) {
      auto target = id_and_tenant(req, res, "batch");
      if (!target)
        return;
      auto [id, tenant] = *target;
      auto r = seal ? intake_->seal_batch(tenant, id) : intake_->batch(tenant, id);
      if (!r)
        return send_failure(res, 503, r.error(), req.path);
      if (!*r)
        return send_error(res, 404, "intake.not_found", "no such batch");
      send_json(res, 200, (*r)->json);
    };
  };
  svr.get(R"(/v1/batches/([^/]+))", batch_route(false));
  svr.post(R"(/v1/batches/([^/]+)/seal)", batch_route(true));
  // Cancellation: 200 cancelled (it was queued, or cancelled before), 202 cancelling
  // (running: it stops at its next step), 409 when it is finished, 404 when unknown; a finished
  // container whose unfinished children were cancelled: 202 with their counts.
  svr.del(R"(/v1/ingestions/([^/]+))", [this](const request& req, response& res) {
    auto target = id_and_tenant(req, res, "ingestion");
    if (!target)
      return;
    auto [id, tenant] = *target;
    auto r = intake_->cancel(tenant, id, "http");
    if (!r)
      return send_failure(res, 503, r.error(), req.path);
    switch (r->outcome) {
    case cancel_outcome::not_found:
      return send_error(res, 404, "intake.not_found", "no such ingestion");
    case cancel_outcome::finished:
      if (r->children() > 0) // a finished container: its unfinished children were cancelled
        return send_json(res, 202,
                         R"({"ingestion_id":")" + id.str() + R"(","status":")" + r->status
                             + R"(","children_cancelled":)" + std::to_string(r->children_cancelled)
                             + R"(,"children_cancelling":)" + std::to_string(r->children_cancelling)
                             + "}");
      return send_error(res, 409, "intake.already_finished",
                        "the ingestion is " + r->status
                            + ": only a queued or running ingestion can be cancelled");
    case cancel_outcome::cancelled:
    case cancel_outcome::already_cancelled:
      return send_json(res, 200, R"({"ingestion_id":")" + id.str() + R"(","status":"cancelled"})");
    case cancel_outcome::cancelling:
      return send_json(res, 202, R"({"ingestion_id":")" + id.str() + R"(","status":"cancelling"})");
    }
  });
  // Retry: the ingestion's failed stage (or its document's failed matching) runs again from
  // its start; 202 with what was sent, 404 when the id is unknown, another tenant's or has
  // nothing failed, 409 when its stage has no queue on this node.
  svr.post(R"(/v1/ingestions/([^/]+)/retry)", [this](const request& req, response& res) {
    auto target = id_and_tenant(req, res, "ingestion");
    if (!target)
      return;
    auto [id, tenant] = *target;
    auto r = intake_->retry(tenant, id, "http");
    if (!r)
      return send_failure(res, 503, r.error(), req.path);
    if (r->empty())
      return send_error(res, 404, "intake.nothing_failed",
                        "no failed stage: the ingestion is unknown, or nothing of it failed");
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};
    auto ingestion = id.str();
    w.StartObject();
    w.Key("ingestion_id");
    w.String(ingestion.c_str());
    w.Key("retried");
    w.StartArray();
    bool any_sent = false;
    for (const auto& item : *r) {
      any_sent = any_sent || item.sent;
      auto work = item.id.str(), document = item.document_id.str();
      w.StartObject();
      w.Key("work_item");
      w.String(work.c_str());
      w.Key("stage");
      w.String(item.stage.c_str());
      w.Key("document_id");
      w.String(document.c_str());
      w.Key("sent");
      w.Bool(item.sent);
      w.Key("failed_with");
      w.String(item.last_error.c_str());
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    if (!any_sent)
      return send_error(res, 409, "intake.stage_disabled",
                        "stage " + r->front().stage
                            + " is not enabled on this node (stages.enabled): it stays failed");
    send_json(res, 202, buf.GetString());
  });
}

intake_server::~intake_server() {
  stop();
}

result<void> intake_server::start() {
  auto checked = check_intake_access(opts_.bind, opts_.access.get());
  if (!checked)
    return checked.error();
  bool has_credentials = *checked;
  if (auto up = server_->start(); !up)
    return up.error();
  bound_port_ = server_->port();
  auto& limits = opts_.limits;
  log::info(
      "intake endpoint listening",
      {{"bind", opts_.bind},
       {"port", bound_port_},
       {"auth", has_credentials ? "bearer (" + opts_.access->describe() + ")" : "none"},
       {"max_connections", static_cast<int64_t>(limits.max_connections)},
       {"max_connections_per_address", static_cast<int64_t>(limits.max_connections_per_address)},
       {"header_timeout_seconds", static_cast<int64_t>(limits.header_timeout.count())},
       {"request_timeout_seconds", static_cast<int64_t>(limits.request_timeout.count())}});
  return {};
}

void intake_server::stop() {
  if (server_)
    server_->stop();
}

} // namespace ingestd
