// Tenant tokens: parsing, constant-time look-up, random tokens and their digests.
#include "adapters/http_server/credentials.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>

#include <openssl/rand.h>
#include <openssl/sha.h>

#include "adapters/http_server/checks.hpp"
#include "messages/hex.hpp"
#include "messages/text.hpp"

namespace ingestd::http_server {

namespace {

/// Blanks around an entry or a token (a line end included).
std::string_view trim_line(std::string_view s) {
  return trim_blanks(s, " \t\r\n");
}

} // namespace

result<tenant_tokens> tenant_tokens::parse(std::string_view text,
                                           std::optional<uuid> default_tenant,
                                           std::string_view variable) {
  auto bad_token = [variable](const std::string& message) {
    return error::make_permanent("config.bad_token", std::string{variable} + ": " + message);
  };
  tenant_tokens out;
  text = trim_line(text);
  if (text.empty())
    return out;
  auto add = [&out](std::string token, uuid tenant) {
    for (auto& [t, tenants] : out.by_token_)
      if (t == token) {
        if (std::find(tenants.begin(), tenants.end(), tenant) == tenants.end())
          tenants.push_back(tenant);
        return;
      }
    out.by_token_.emplace_back(std::move(token), std::vector<uuid>{tenant});
  };
  size_t index = 0;
  while (true) {
    auto comma = text.find(',');
    auto entry = trim_line(text.substr(0, comma));
    ++index;
    auto where = "entry " + std::to_string(index);
    if (entry.empty())
      return bad_token(where + " is empty");
    auto colon = entry.find(':');
    std::optional<uuid> tenant;
    std::string_view token = entry;
    if (colon != std::string_view::npos) {
      tenant = uuid::parse(trim_line(entry.substr(0, colon)));
      if (tenant)
        token = trim_line(entry.substr(colon + 1));
      else if (colon == 36)
        return bad_token(where + ": the part before ':' is not a tenant UUID");
    }
    if (!tenant) {
      if (!default_tenant)
        return bad_token(where + " names no tenant and intake.default_tenant is empty");
      tenant = default_tenant;
    }
    if (token.empty())
      return bad_token(where + " has an empty token");
    add(std::string{token}, *tenant);
    if (comma == std::string_view::npos)
      break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<uuid> tenant_tokens::tenants_of(std::string_view token) const {
  std::vector<uuid> found;
  // Every entry is compared, so the time does not tell which one matched.
  for (auto& [t, tenants] : by_token_)
    if (secrets_equal(token, t))
      found = tenants;
  return found;
}

size_t tenant_tokens::shortest() const {
  size_t out = 0;
  for (auto& [t, tenants] : by_token_)
    if (out == 0 || t.size() < out)
      out = t.size();
  return out;
}

std::string random_token() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    // Without randomness no token or session can be safe: impossible on a working system.
    std::abort();
  return hex_encode(std::string_view{reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

std::string token_digest(std::string_view token) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> d{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data());
  return hex_encode(std::string_view{reinterpret_cast<const char*>(d.data()), d.size()});
}

std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view scheme = "Bearer ";
  if (authorization.size() <= scheme.size() || !authorization.starts_with(scheme))
    return {};
  return trim_line(authorization.substr(scheme.size()));
}

} // namespace ingestd::http_server
