// Who may use the HTTP intake, and for which tenants. The tenant is taken from the credential,
// never from a header alone:
//   - INGESTD_INTAKE_TOKEN: one token (the default tenant) or TENANT_ID:TOKEN pairs;
//   - the database's tenant tokens (`ingestd tenants add|rotate-token`), kept as digests;
//   - INGESTD_INTAKE_ADMIN_TOKEN: acts for any tenant, which each request names (X-Tenant-Id).
// Without any credential (none in the environment, none stored) the intake is open, which
// check_intake_exposure allows on a loopback bind only: X-Tenant-Id or the default tenant.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http_server/credentials.hpp"
#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// An authenticated caller of the intake.
struct intake_caller {
  /// Acts for whichever tenant a request names: the admin credential, or anyone at an open
  /// intake.
  bool any_tenant = false;
  /// The tenants it acts for, when not any_tenant.
  std::vector<uuid> tenants;
  /// The tenant of a request that names none; nullopt: a request must name one.
  std::optional<uuid> fallback;
};

/// The tenant a request acts for: `named` (X-Tenant-Id or the form's tenant_id; empty when
/// none) if the caller may act for it, else the caller's fallback. Errors (permanent):
/// "intake.missing_tenant" (400), "intake.invalid_tenant" (400: not a UUID),
/// "intake.forbidden_tenant" (403: the credential does not act for that tenant).
result<uuid> tenant_for(const intake_caller& caller, std::string_view named);

/// The intake's credentials. Thread-safe.
class intake_access {
public:
  /// The tenant of an active stored token by its digest (http_server::token_digest).
  using stored_lookup = std::function<result<std::optional<uuid>>(const std::string& digest)>;
  /// Whether any stored token is active.
  using stored_any = std::function<result<bool>()>;

  /// Null functions: no stored tokens.
  intake_access(http_server::tenant_tokens tokens, std::string admin_token,
                std::optional<uuid> default_tenant, stored_lookup lookup = {}, stored_any any = {});

  /// Whether a request must carry a credential: one is configured in the environment or stored
  /// (once true it stays true: a stored token is never taken back to an open intake). An error
  /// when the database cannot tell.
  result<bool> required();

  /// The caller of a request with this Authorization header value ("" when none): nullopt when
  /// it is not a valid credential (and one is required); an error when the database cannot tell.
  result<std::optional<intake_caller>> authenticate(std::string_view authorization);

  /// "admin", "tenant tokens", "stored tenant tokens" and the like, for the start-up log.
  std::string describe() const;

private:
  http_server::tenant_tokens tokens_;
  std::string admin_token_;
  std::optional<uuid> default_tenant_;
  stored_lookup lookup_;
  stored_any any_;
  std::atomic<bool> stored_seen_{false};
};

} // namespace ingestd
