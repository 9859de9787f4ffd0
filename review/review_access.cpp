// Review desk access: sessions with CSRF tokens.
#include "review/review_access.hpp"

#include <algorithm>

#include "adapters/http_server/credentials.hpp"

namespace ingestd {

std::string review_sessions::open(std::string reviewer, std::vector<uuid> tenants) {
  auto id = http_server::random_token();
  review_session s{std::move(reviewer), std::move(tenants), http_server::random_token(),
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

} // namespace ingestd
