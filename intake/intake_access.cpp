// The HTTP intake's credentials: environment tokens, stored token digests, the admin token.
#include "intake/intake_access.hpp"

#include <algorithm>

#include "adapters/http_server/checks.hpp"

namespace ingestd {

result<uuid> tenant_for(const intake_caller& caller, std::string_view named) {
  if (named.empty()) {
    if (caller.fallback)
      return *caller.fallback;
    if (caller.tenants.size() > 1)
      return error::make_permanent("intake.missing_tenant",
                                   "the credential acts for several tenants: name one in "
                                   "X-Tenant-Id (or the tenant_id field)");
    return error::make_permanent("intake.missing_tenant",
                                 "no X-Tenant-Id header (or tenant_id field)");
  }
  auto tenant = uuid::parse(named);
  if (!tenant)
    return error::make_permanent("intake.invalid_tenant", "X-Tenant-Id is not a UUID");
  if (!caller.any_tenant
      && std::find(caller.tenants.begin(), caller.tenants.end(), *tenant) == caller.tenants.end())
    return error::make_permanent("intake.forbidden_tenant",
                                 "the credential does not act for this tenant");
  return *tenant;
}

intake_access::intake_access(http_server::tenant_tokens tokens, std::string admin_token,
                             std::optional<uuid> default_tenant, stored_lookup lookup,
                             stored_any any)
    : tokens_(std::move(tokens)), admin_token_(std::move(admin_token)),
      default_tenant_(default_tenant), lookup_(std::move(lookup)), any_(std::move(any)) {}

result<bool> intake_access::required() {
  if (!tokens_.empty() || !admin_token_.empty() || stored_seen_.load())
    return true;
  if (!any_)
    return false;
  auto any = any_();
  if (!any)
    return any.error();
  if (*any)
    stored_seen_.store(true);
  return *any;
}

result<std::optional<intake_caller>> intake_access::authenticate(std::string_view authorization) {
  auto token = http_server::bearer_token(authorization);
  std::vector<uuid> tenants;
  if (!token.empty()) {
    // Both are compared whatever the other found, so the time does not tell which matched.
    bool admin = !admin_token_.empty() && http_server::secrets_equal(token, admin_token_);
    tenants = tokens_.tenants_of(token);
    if (admin)
      return std::optional<intake_caller>{intake_caller{true, {}, std::nullopt}};
    if (tenants.empty() && lookup_) {
      auto stored = lookup_(http_server::token_digest(token));
      if (!stored)
        return stored.error();
      if (*stored) {
        stored_seen_.store(true);
        tenants.push_back(**stored);
      }
    }
  }
  if (tenants.empty()) {
    auto needed = required();
    if (!needed)
      return needed.error();
    if (*needed)
      return std::optional<intake_caller>{};
    // An open intake (loopback only): the request names its tenant, else the default one.
    return std::optional<intake_caller>{intake_caller{true, {}, default_tenant_}};
  }
  std::optional<uuid> fallback;
  if (tenants.size() == 1)
    fallback = tenants.front();
  return std::optional<intake_caller>{intake_caller{false, std::move(tenants), fallback}};
}

std::string intake_access::describe() const {
  std::string out;
  auto add = [&out](const char* what) {
    if (!out.empty())
      out += ", ";
    out += what;
  };
  if (!tokens_.empty())
    add("tenant tokens");
  if (lookup_)
    add("stored tenant tokens");
  if (!admin_token_.empty())
    add("admin token");
  return out;
}

} // namespace ingestd
