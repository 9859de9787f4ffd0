// The review desk over HTTP, served by the admin server under /review: the queue and
// document pages (server-rendered HTML with a little inline JavaScript), the login form that
// opens a cookie session, and the JSON API that the pages and scripts use:
//   GET  /review/api/queue?reason=gate|failed&tenant=UUID&limit=N
//   GET  /review/api/documents/{id}
//   GET  /review/api/documents/{id}/pages/{n}.png[?variant=preprocessed]
//   POST /review/api/documents/{id}/check      {"fields": {...}}        validate, no save
//   POST /review/api/documents/{id}/approve    {"version": N, "fields": {...}}
//   POST /review/api/documents/{id}/reject     {"version": N, "reason": "..."}
//   POST /review/api/documents/{id}/reprocess  {"version": N, "transcription_provider": "...",
//                                               "extraction_provider": "..."} (both optional)
// Access: "Authorization: Bearer TOKEN" (no CSRF token needed; X-Reviewer names the reviewer),
// or the cookie of the login form, with which every POST carries the session's CSRF token
// (header X-CSRF-Token or form field csrf). API POSTs take application/json only. Without any
// configured token the desk is open to the default tenant (allowed on a loopback bind only).
// Answers: 200, 400 bad request (also an unknown provider, or one this node cannot run), 401 no
// or bad token, 403 CSRF or tenant, 404 unknown (or another tenant's) document, 409 changed since
// the version given or being processed, 415 not JSON, 422 refused by the extraction schema, 429 too
// many failed sign-ins (or bad tokens) from the address or for the name within a minute
// (Retry-After), 503 database or storage unavailable (the detail goes to the log, not to the
// client).
//
// Served by http_server: a POST's caller is authenticated on its headers, before its body is read
// (401, 403, 429), and its body is at most 1 MiB. Every answer under /review carries a
// Content-Security-Policy (the pages' own scripts and style only), X-Frame-Options DENY,
// X-Content-Type-Options nosniff and Referrer-Policy same-origin. Sessions last
// review.session_lifetime_minutes, at most review.max_sessions at once; the cookie is Secure with
// review.secure_cookie. Failed sign-ins are logged with the address and the name given.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/http_server/checks.hpp"
#include "adapters/http_server/credentials.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"
#include "review/review_access.hpp"

namespace ingestd {

namespace http_server {
class server;
}

class review_service;

struct review_desk_options {
  /// INGESTD_REVIEW_TOKEN, parsed.
  http_server::tenant_tokens tokens;
  /// The tenant of an open desk (no token configured).
  std::optional<uuid> default_tenant;
  /// The session cookie gets the Secure attribute (review.secure_cookie: the desk is reached over
  /// HTTPS, through a proxy that terminates TLS).
  bool secure_cookie = false;
  /// How long a session lasts, and how many may be open at once (review.session_lifetime_minutes,
  /// review.max_sessions).
  std::chrono::minutes session_lifetime{std::chrono::hours{12}};
  size_t max_sessions = 1000;
  /// Failed sign-ins (or bad bearer tokens) per address, and per name, within a minute; the next
  /// one is answered 429 (review.sign_in_attempts_per_minute).
  int sign_in_attempts_per_minute = 5;
};

/// An open desk (no token) would let anyone who reaches the admin port act on documents:
/// "review.unauthenticated" (naming admin.bind and INGESTD_REVIEW_TOKEN) unless `bind` is
/// loopback or a token is set.
result<void> check_review_exposure(std::string_view bind, const http_server::tenant_tokens& tokens);

class review_desk : public std::enable_shared_from_this<review_desk> {
public:
  review_desk(std::shared_ptr<review_service> service, review_desk_options opts);

  /// Registers the /review routes; the handlers keep the desk alive.
  void mount(http_server::server& server);

  /// The sessions open now.
  size_t sessions() { return sessions_.count(); }

private:
  struct caller;
  class handlers;

  std::shared_ptr<review_service> service_;
  review_desk_options opts_;
  review_sessions sessions_;
  http_server::attempt_window attempts_;
};

} // namespace ingestd
