// HTTP intake: POST /v1/documents, GET /v1/documents/{id},
// GET /v1/ingestions/{id}, DELETE /v1/ingestions/{id}, served by http_server (libmicrohttpd: its
// own polling thread and four handler threads). Every request carries a bearer token that acts for
// its tenants (intake_access) unless the intake has no credentials at all, which only a loopback
// bind allows. The token is checked on the headers, before any byte of the body is read; a body
// over the size
// limit is refused (413) as soon as it passes it, chunked or not; a compressed body is refused
// (415); Host must be a loopback name, an IP address or one of intake.allowed_hosts (421), and a
// browser's Origin on POST or DELETE this endpoint's own (403).
//
// POST /v1/documents takes the file as the raw body (any Content-Type; the type is decided by the
// file's first bytes) or as multipart/form-data field "file". Tenant: the credential's; header
// X-Tenant-Id (or form field "tenant_id") chooses among a credential's tenants, and names the
// tenant for the admin token (any tenant) and at an open intake (else the default tenant); a
// tenant the credential does not act for is a 403. Source: header X-Uploaded-By or
// X-Doc-Source-Id (or form fields "uploaded_by" / "doc_source_id"), at most one; neither means
// the nil UUID as uploader. Answers (JSON):
//   202 {"status":"new"|"reprocessing", document_id, ingestion_id, enqueued}  work was created
//   200 {"status":"duplicate", document_id, ingestion_id, ingestion_status}    the tenant already
//       has this content, ready or in progress: nothing new is created (idempotent retries)
//   400 missing/invalid tenant or source, empty body; 401 bad or missing token; 403 a tenant
//   the token does not act for;
//   413 over the size limit; 415 not PDF/PNG/JPEG/TIFF (nor, with the unpack stage, a ZIP, TAR,
//   .tar.gz, e-mail or mbox), or a compressed body; 503 (Retry-After) database, storage or queue
//   unavailable (the detail goes to the log, not to the client).
// GET and DELETE act only within the caller's tenant: another tenant's document or ingestion is
// a 404 like an unknown one, so its existence does not leak.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http_server/server.hpp"
#include "intake/intake_access.hpp"
#include "intake/intake_service.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

struct intake_server_options {
  std::string bind = "127.0.0.1";
  /// 0: any free port (tests).
  int port = 0;
  /// The credentials; null: none, an open intake (allowed on a loopback bind only: see
  /// check_intake_exposure), whose requests name their tenant or get `default_tenant`.
  std::shared_ptr<intake_access> access;
  std::optional<uuid> default_tenant;
  /// Host names the intake answers to besides loopback names and IP addresses
  /// (intake.allowed_hosts; "*": any).
  std::vector<std::string> allowed_hosts;
  /// Connections, deadlines and the memory for bodies in progress (intake.max_connections, ...).
  http_server::endpoint_limits limits;
};

/// Whether `bind` reaches this host only: 127.0.0.0/8, ::1 (also IPv4-mapped) or "localhost".
/// Any other address, a wildcard (0.0.0.0, ::) or a host name is not.
bool is_loopback_bind(std::string_view bind);

/// An intake without credentials would take documents for any tenant from anyone who reaches
/// it: "intake.unauthenticated" (permanent, naming intake.bind, INGESTD_INTAKE_TOKEN and
/// `ingestd tenants add`) unless `bind` is loopback or `has_credentials`.
result<void> check_intake_exposure(std::string_view bind, bool has_credentials);

/// check_intake_exposure with the credentials of `access` (null: none), asking the database
/// whether it holds tenant tokens when no token is configured: true when requests need a
/// credential. A database that cannot answer refuses a non-loopback bind
/// ("intake.unauthenticated", with the cause); on a loopback bind each request asks again.
result<bool> check_intake_access(const std::string& bind, intake_access* access);

class intake_server {
public:
  intake_server(std::shared_ptr<intake_service> intake, intake_server_options opts);
  ~intake_server();
  intake_server(const intake_server&) = delete;
  intake_server& operator=(const intake_server&) = delete;

  /// Binds and starts serving; refuses what check_intake_access refuses.
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
