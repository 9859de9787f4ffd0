// Review desk access: token parsing, constant-time comparison, sessions with CSRF tokens.
#include "review/review_access.hpp"

#include <algorithm>
#include <array>

#include <openssl/rand.h>

#include "adapters/http_server/checks.hpp"
#include "messages/hex.hpp"

namespace ingestd {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty()
         && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

error bad_token(std::string message) {
  return error::make_permanent("review.bad_token", "INGESTD_REVIEW_TOKEN: " + std::move(message));
}

} // namespace

result<review_tokens> review_tokens::parse(std::string_view text,
                                           std::optional<uuid> default_tenant) {
  review_tokens out;
  text = trim(text);
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
    auto entry = trim(text.substr(0, comma));
    ++index;
    if (entry.empty())
      return bad_token("entry " + std::to_string(index) + " is empty");
    auto colon = entry.find(':');
    std::optional<uuid> tenant;
    std::string_view token = entry;
    if (colon != std::string_view::npos) {
      tenant = uuid::parse(trim(entry.substr(0, colon)));
      if (tenant)
        token = trim(entry.substr(colon + 1));
      else if (colon == 36)
        return bad_token("entry " + std::to_string(index)
                         + ": the part before ':' is not a tenant UUID");
    }
    if (!tenant) {
      if (!default_tenant)
        return bad_token("entry " + std::to_string(index)
                         + " names no tenant and intake.default_tenant is empty");
      tenant = default_tenant;
    }
    if (token.empty())
      return bad_token("entry " + std::to_string(index) + " has an empty token");
    add(std::string{token}, *tenant);
    if (comma == std::string_view::npos)
      break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<uuid> review_tokens::tenants_of(std::string_view token) const {
  std::vector<uuid> found;
  // Every entry is compared, so the time does not tell which one matched.
  for (auto& [t, tenants] : by_token_)
    if (same_secret(t, token))
      found = tenants;
  return found;
}

size_t review_tokens::shortest() const {
  size_t out = 0;
  for (auto& [t, tenants] : by_token_)
    if (out == 0 || t.size() < out)
      out = t.size();
  return out;
}

std::string review_sessions::open(std::string reviewer, std::vector<uuid> tenants) {
  auto id = random_token();
  review_session s{std::move(reviewer), std::move(tenants), random_token(),
                   std::chrono::steady_clock::now() + lifetime_};
  std::lock_guard guard{mtx_};
  auto now = std::chrono::steady_clock::now();
  std::erase_if(sessions_, [now](auto& kv) { return kv.second.expires <= now; });
  while (sessions_.size() >= max_sessions_) {
    auto first = std::min_element(sessions_.begin(), sessions_.end(), [](auto& a, auto& b) {
      return a.second.expires < b.second.expires;
    });
    sessions_.erase(first);
  }
  sessions_[id] = std::move(s);
  return id;
}

size_t review_sessions::count() {
  std::lock_guard guard{mtx_};
  auto now = std::chrono::steady_clock::now();
  std::erase_if(sessions_, [now](auto& kv) { return kv.second.expires <= now; });
  return sessions_.size();
}

std::optional<review_session> review_sessions::find(const std::string& id) {
  std::lock_guard guard{mtx_};
  auto it = sessions_.find(id);
  if (it == sessions_.end())
    return std::nullopt;
  if (it->second.expires <= std::chrono::steady_clock::now()) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void review_sessions::close(const std::string& id) {
  std::lock_guard guard{mtx_};
  sessions_.erase(id);
}

std::string random_token() {
  std::array<unsigned char, 32> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    // Without randomness no session can be safe: impossible on a working system.
    std::abort();
  return hex_encode(std::string_view{reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

bool same_secret(std::string_view a, std::string_view b) {
  return http_server::secrets_equal(a, b);
}

} // namespace ingestd
