// HTTP intake: POST /v1/documents, GET /v1/documents/{id},
// GET /v1/ingestions/{id}, served by http_server (libmicrohttpd: its own polling thread and four
// handler threads), bearer token when configured (required unless the bind is loopback). The
// token is checked on the headers, before any byte of the body is read; a body over the size
// limit is refused (413) as soon as it passes it, chunked or not; a compressed body is refused
// (415); Host must be a loopback name, an IP address or one of intake.allowed_hosts (421), and a
// browser's Origin on POST or DELETE this endpoint's own (403).
//
// POST /v1/documents takes the file as the raw body (any Content-Type; the type is decided by the
// file's first bytes) or as multipart/form-data field "file". Tenant: header X-Tenant-Id (or form
// field "tenant_id"), else the configured default tenant. Source: header X-Uploaded-By or
// X-Doc-Source-Id (or form fields "uploaded_by" / "doc_source_id"), at most one; neither means
// the nil UUID as uploader. Answers (JSON):
//   202 {"status":"new"|"reprocessing", document_id, ingestion_id, enqueued}  work was created
//   200 {"status":"duplicate", document_id, ingestion_id, ingestion_status}    the tenant already
//       has this content, ready or in progress: nothing new is created (idempotent retries)
//   400 missing/invalid tenant or source, empty body; 401 bad or missing token;
//   413 over the size limit; 415 not PDF/PNG/JPEG/TIFF (nor, with the unpack stage, a ZIP, TAR,
//   .tar.gz, e-mail or mbox), or a compressed body; 503 (Retry-After) database, storage or queue
//   unavailable (the detail goes to the log, not to the client).
// GET answers only within the caller's tenant (X-Tenant-Id, else the default tenant): another
// tenant's document or ingestion is a 404 like an unknown one, so its existence does not leak.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http_server/server.hpp"
#include "intake/intake_service.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

struct intake_server_options {
  std::string bind = "127.0.0.1";
  /// 0: any free port (tests).
  int port = 0;
  /// Used when a request names no tenant; nullopt: such a request is a 400.
  std::optional<uuid> default_tenant;
  /// Empty: no authentication, allowed on a loopback bind only (see check_intake_exposure).
  std::string bearer_token;
  /// Host names the intake answers to besides loopback names and IP addresses
  /// (intake.allowed_hosts; "*": any).
  std::vector<std::string> allowed_hosts;
  /// Connections, deadlines and the memory for bodies in progress (intake.max_connections, ...).
  http_server::endpoint_limits limits;
};

/// Whether `bind` reaches this host only: 127.0.0.0/8, ::1 (also IPv4-mapped) or "localhost".
/// Any other address, a wildcard (0.0.0.0, ::) or a host name is not.
bool is_loopback_bind(std::string_view bind);

/// An intake without a bearer token would take documents for any tenant from anyone who reaches
/// it: "intake.unauthenticated" (permanent, naming intake.bind and INGESTD_INTAKE_TOKEN) unless
/// `bind` is loopback or `bearer_token` is set.
result<void> check_intake_exposure(std::string_view bind, std::string_view bearer_token);

class intake_server {
public:
  intake_server(std::shared_ptr<intake_service> intake, intake_server_options opts);
  ~intake_server();
  intake_server(const intake_server&) = delete;
  intake_server& operator=(const intake_server&) = delete;

  /// Binds and starts serving. Refuses (check_intake_exposure) a non-loopback bind without a
  /// bearer token.
  result<void> start();
  int port() const { return bound_port_; }
  /// Stops accepting, finishes the requests in progress, joins (idempotent).
  void stop();

private:
  std::shared_ptr<intake_service> intake_;
  intake_server_options opts_;
  int bound_port_ = 0;
  std::unique_ptr<http_server::server> server_;
};

} // namespace ingestd
