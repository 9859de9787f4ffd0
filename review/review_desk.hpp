// The review desk over HTTP (issue 18), served by the admin server under /review: the queue and
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
// or bad token, 403 CSRF or tenant, 404 unknown (or another tenant's) document, 409 changed since the version given or being processed,
// 415 not JSON, 422 refused by the extraction schema, 503 database or storage unavailable.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "messages/result.hpp"
#include "messages/uuid.hpp"
#include "review/review_access.hpp"

namespace httplib {
class Server;
}

namespace ingestd {

class review_service;

struct review_desk_options {
  /// INGESTD_REVIEW_TOKEN, parsed.
  review_tokens tokens;
  /// The tenant of an open desk (no token configured).
  std::optional<uuid> default_tenant;
};

/// An open desk (no token) would let anyone who reaches the admin port act on documents:
/// "review.unauthenticated" (naming admin.bind and INGESTD_REVIEW_TOKEN) unless `bind` is
/// loopback or a token is set.
result<void> check_review_exposure(std::string_view bind, const review_tokens& tokens);

class review_desk : public std::enable_shared_from_this<review_desk> {
public:
  review_desk(std::shared_ptr<review_service> service, review_desk_options opts);

  /// Registers the /review routes; the handlers keep the desk alive.
  void mount(httplib::Server& server);

private:
  struct caller;
  class handlers;

  std::shared_ptr<review_service> service_;
  review_desk_options opts_;
  review_sessions sessions_;
};

} // namespace ingestd
