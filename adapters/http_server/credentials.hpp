// Credentials that open tenants, shared by the endpoints that act for tenants (the HTTP intake and
// the review desk): tokens from the environment (one token, or TENANT_ID:TOKEN pairs), new random
// tokens, and the digest under which the database keeps a token instead of the token itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/result.hpp"
#include "messages/uuid.hpp"

namespace ingestd::http_server {

/// The tenants each token opens. A setting is either one token (the default tenant) or
/// comma-separated TENANT_ID:TOKEN pairs; one token may appear in several pairs and then opens all
/// their tenants. An entry without a tenant UUID before a ':' is a token for the default tenant.
class tenant_tokens {
public:
  /// `variable` names the setting in errors (permanent, "config.bad_token"): an empty entry, an
  /// empty token, a pair's tenant that is not a UUID when the entry looks like a pair, a token for
  /// the default tenant when there is none.
  static result<tenant_tokens> parse(std::string_view text, std::optional<uuid> default_tenant,
                                     std::string_view variable);

  /// No token configured.
  bool empty() const { return by_token_.empty(); }
  /// The tenants of `token` (compared in constant time); empty when it is not one.
  std::vector<uuid> tenants_of(std::string_view token) const;
  /// The length of the shortest token (0 when none is configured).
  size_t shortest() const;

private:
  std::vector<std::pair<std::string, std::vector<uuid>>> by_token_;
};

/// 32 random bytes in hex, from the operating system's generator.
std::string random_token();

/// What the database keeps of a token: its SHA-256, in hex. Tokens are random (random_token), so
/// a plain digest cannot be reversed by guessing.
std::string token_digest(std::string_view token);

/// The token of an "Authorization: Bearer TOKEN" header value; empty when it is not one.
std::string_view bearer_token(std::string_view authorization);

} // namespace ingestd::http_server
