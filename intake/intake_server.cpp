// HTTP intake over cpp-httplib: request parsing, authentication and the mapping of intake's
// errors to status codes (see intake_server.hpp for the contract).
#include "intake/intake_server.hpp"

#include <httplib.h>
#include <openssl/crypto.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/support/log.hpp"

namespace ingestd {

namespace {

void send_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  w.Key("error");
  w.StartObject();
  w.Key("code");
  w.String(code.c_str());
  w.Key("message");
  w.String(message.c_str());
  w.EndObject();
  w.EndObject();
  send_json(res, status, buf.GetString());
}

int status_for(const error& e) {
  if (e.code == "intake.too_large")
    return 413;
  if (e.code == "intake.unsupported_type")
    return 415;
  if (e.code == "intake.empty" || e.code == "intake.invalid_source")
    return 400;
  return e.cls == error_class::transient ? 503 : 500;
}

/// A header, or else a multipart form field.
std::string value_of(const httplib::Request& req, const char* header, const char* field) {
  if (req.has_header(header))
    return req.get_header_value(header);
  if (req.is_multipart_form_data() && req.has_file(field))
    return req.get_file_value(field).content;
  return {};
}

bool authorised(const httplib::Request& req, const std::string& token) {
  if (token.empty())
    return true;
  auto h = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (h.size() != prefix.size() + token.size() || h.compare(0, prefix.size(), prefix) != 0)
    return false;
  return CRYPTO_memcmp(h.data() + prefix.size(), token.data(), token.size()) == 0;
}

} // namespace

intake_server::intake_server(std::shared_ptr<intake_service> intake, intake_server_options opts)
  : intake_(std::move(intake)), opts_(std::move(opts)), server_(std::make_unique<httplib::Server>()) {
  auto& svr = *server_;
  // Uploads are I/O bound and bounded by the database: four threads keep the daemon's count low.
  svr.new_task_queue = [] { return new httplib::ThreadPool(4); };
  // Bodies over the limit (plus room for multipart framing) get 413 before they are read.
  svr.set_payload_max_length(intake_->options().max_bytes + 64 * 1024);
  svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (authorised(req, opts_.bearer_token))
      return httplib::Server::HandlerResponse::Unhandled;
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, "intake.unauthorized", "a valid bearer token is required");
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.Post("/v1/documents", [this](const httplib::Request& req, httplib::Response& res) {
    intake_item item;
    item.channel = "http";
    auto tenant_text = value_of(req, "X-Tenant-Id", "tenant_id");
    if (tenant_text.empty()) {
      if (!opts_.default_tenant)
        return send_error(res, 400, "intake.missing_tenant", "no X-Tenant-Id header (or tenant_id field)");
      item.tenant_id = *opts_.default_tenant;
    } else if (auto t = uuid::parse(tenant_text)) {
      item.tenant_id = *t;
    } else {
      return send_error(res, 400, "intake.invalid_tenant", "X-Tenant-Id is not a UUID");
    }
    auto uploaded = value_of(req, "X-Uploaded-By", "uploaded_by");
    auto source = value_of(req, "X-Doc-Source-Id", "doc_source_id");
    if (!uploaded.empty() && !source.empty())
      return send_error(res, 400, "intake.invalid_source", "give X-Uploaded-By or X-Doc-Source-Id, not both");
    if (!source.empty()) {
      if (!(item.source.doc_source_id = uuid::parse(source)))
        return send_error(res, 400, "intake.invalid_source", "X-Doc-Source-Id is not a UUID");
    } else if (!uploaded.empty()) {
      if (!(item.source.uploaded_by = uuid::parse(uploaded)))
        return send_error(res, 400, "intake.invalid_source", "X-Uploaded-By is not a UUID");
    } else {
      item.source.uploaded_by = uuid{};
    }
    if (req.is_multipart_form_data()) {
      if (!req.has_file("file"))
        return send_error(res, 400, "intake.empty", "multipart request without a \"file\" field");
      auto f = req.get_file_value("file");
      item.bytes = std::move(f.content);
      item.name = f.filename;
    } else {
      item.bytes = req.body;
      item.name = req.get_header_value("X-File-Name");
    }
    auto r = intake_->submit(item);
    if (!r) {
      if (r.error().cls == error_class::transient)
        res.set_header("Retry-After", "5");
      return send_error(res, status_for(r.error()), r.error().code, r.error().message);
    }
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w{buf};
    auto doc = r->document_id.str(), ing = r->ingestion_id.str();
    auto status = std::string{to_string(r->status)};
    w.StartObject();
    w.Key("status"); w.String(status.c_str());
    w.Key("document_id"); w.String(doc.c_str());
    w.Key("ingestion_id"); w.String(ing.c_str());
    w.Key("ingestion_status"); w.String(r->ingestion_status.c_str());
    w.Key("mime_type"); w.String(r->mime_type.c_str());
    w.Key("enqueued"); w.Bool(r->enqueued);
    w.EndObject();
    bool duplicate = r->status == intake_status::duplicate;
    if (!duplicate)
      res.set_header("Location", "/v1/ingestions/" + ing);
    send_json(res, duplicate ? 200 : 202, buf.GetString());
  });
  auto getter = [this](const char* what, auto lookup) {
    return [this, what, lookup](const httplib::Request& req, httplib::Response& res) {
      auto id = uuid::parse(req.matches[1].str());
      if (!id)
        return send_error(res, 400, "intake.invalid_id", std::string{what} + " id is not a UUID");
      auto r = (intake_.get()->*lookup)(*id);
      if (!r) {
        res.set_header("Retry-After", "5");
        return send_error(res, 503, r.error().code, r.error().message);
      }
      if (!*r)
        return send_error(res, 404, "intake.not_found", std::string{"no such "} + what);
      send_json(res, 200, **r);
    };
  };
  svr.Get(R"(/v1/documents/([^/]+))", getter("document", &intake_service::document_json));
  svr.Get(R"(/v1/ingestions/([^/]+))", getter("ingestion", &intake_service::ingestion_json));
}

intake_server::~intake_server() {
  stop();
}

result<void> intake_server::start() {
  auto& svr = *server_;
  if (opts_.port == 0)
    bound_port_ = svr.bind_to_any_port(opts_.bind.c_str());
  else
    bound_port_ = svr.bind_to_port(opts_.bind.c_str(), opts_.port) ? opts_.port : -1;
  if (bound_port_ <= 0)
    return error::make_permanent("intake.bind", "cannot listen on " + opts_.bind + ":"
                                                  + std::to_string(opts_.port));
  thread_ = std::thread{[this] { server_->listen_after_bind(); }};
  log::info("intake endpoint listening", {{"bind", opts_.bind}, {"port", bound_port_},
                                          {"auth", opts_.bearer_token.empty() ? "none" : "bearer"}});
  return {};
}

void intake_server::stop() {
  if (server_)
    server_->stop();
  if (thread_.joinable())
    thread_.join();
}

} // namespace ingestd
