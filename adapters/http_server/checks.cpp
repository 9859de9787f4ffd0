// Host, Origin, body framing and coding, secrets and attempts (see checks.hpp).
#include "adapters/http_server/checks.hpp"

#include "messages/text.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cctype>

#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace ingestd::http_server {

namespace {

std::string lowered(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    out.push_back(ascii_lower(c));
  return out;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_';
}

bool loopback_name(std::string_view host) {
  return host == "localhost" || (host.size() > 10 && host.ends_with(".localhost"));
}

bool named(std::string_view host, const std::vector<std::string>& names) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n != "*" && lowered(n) == host; });
}

/// The values of a comma-separated header, each trimmed and lower-cased, empty ones dropped.
std::vector<std::string> tokens_of(const header_map& headers, std::string_view name) {
  std::vector<std::string> out;
  auto [from, to] = headers.equal_range(std::string{name});
  for (auto it = from; it != to; ++it) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      auto token = trim_blanks(rest.substr(0, comma));
      // A coding's parameters (";q=...") do not change what it is.
      token = trim_blanks(token.substr(0, token.find(';')));
      if (!token.empty())
        out.push_back(lowered(token));
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  return out;
}

bool compression_coding(std::string_view c) {
  return c == "gzip" || c == "x-gzip" || c == "deflate" || c == "br" || c == "compress"
         || c == "x-compress" || c == "zstd";
}

std::string default_port(std::string_view scheme) {
  return scheme == "https" ? "443" : "80";
}

} // namespace

std::optional<authority> parse_authority(std::string_view text) {
  text = trim_blanks(text);
  if (text.empty())
    return std::nullopt;
  authority out;
  std::string_view host;
  std::string_view rest;
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos)
      return std::nullopt;
    host = text.substr(1, close - 1);
    in6_addr v6{};
    if (inet_pton(AF_INET6, std::string{host}.c_str(), &v6) != 1)
      return std::nullopt;
    rest = text.substr(close + 1);
  } else {
    auto colon = text.find(':');
    host = text.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : text.substr(colon);
    if (host.empty() || !std::all_of(host.begin(), host.end(), host_char))
      return std::nullopt;
  }
  if (!rest.empty()) {
    if (rest.front() != ':' || !all_digits(rest.substr(1)) || rest.size() > 6)
      return std::nullopt;
    out.port = std::string{rest.substr(1)};
  }
  out.host = lowered(host);
  if (!out.host.empty() && out.host.back() == '.')
    out.host.pop_back();
  if (out.host.empty())
    return std::nullopt;
  return out;
}

bool is_ip_literal(std::string_view host) {
  std::string text{host};
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, text.c_str(), &v4) == 1 || inet_pton(AF_INET6, text.c_str(), &v6) == 1;
}

bool host_allowed(std::string_view host_header, const std::vector<std::string>& names) {
  if (std::find(names.begin(), names.end(), "*") != names.end())
    return true;
  if (trim_blanks(host_header).empty())
    return true;
  auto a = parse_authority(host_header);
  if (!a)
    return false;
  return is_ip_literal(a->host) || loopback_name(a->host) || named(a->host, names);
}

bool origin_allowed(std::string_view origin, std::string_view host_header,
                    const std::vector<std::string>& names) {
  origin = trim_blanks(origin);
  auto sep = origin.find("://");
  if (sep == std::string_view::npos)
    return false;
  auto scheme = lowered(origin.substr(0, sep));
  if (scheme != "http" && scheme != "https")
    return false;
  auto from = parse_authority(origin.substr(sep + 3));
  if (!from)
    return false;
  if (named(from->host, names))
    return true;
  auto to = parse_authority(host_header);
  if (!to)
    return false;
  auto from_port = from->port.empty() ? default_port(scheme) : from->port;
  auto to_port = to->port.empty() ? default_port(scheme) : to->port;
  return from->host == to->host && from_port == to_port;
}

bool state_changing(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

std::optional<refusal> check_head(std::string_view method, const header_map& headers,
                                  const head_rules& rules, body_framing* framing) {
  auto first = [&](const char* name) -> std::string {
    auto it = headers.find(name);
    return it == headers.end() ? std::string{} : it->second;
  };
  if (headers.count("Host") > 1 || !host_allowed(first("Host"), rules.allowed_hosts))
    return refusal{421, "http.host_not_allowed", "this endpoint does not answer to that host name"};
  body_framing f;
  auto transfer = tokens_of(headers, "Transfer-Encoding");
  if (!transfer.empty()) {
    for (auto& t : transfer)
      if (t != "chunked")
        return compression_coding(t) ? refusal{415, "http.unsupported_encoding",
                                               "compressed request bodies are not accepted"}
                                     : refusal{501, "http.unsupported_encoding",
                                               "only the chunked transfer coding is accepted"};
    if (transfer.size() != 1 || headers.count("Content-Length") != 0)
      return refusal{400, "http.bad_request", "the body's framing is ambiguous"};
    f.chunked = true;
  }
  if (auto [from, to] = headers.equal_range("Content-Length"); from != to) {
    std::optional<uint64_t> length;
    for (auto it = from; it != to; ++it) {
      auto text = trim_blanks(it->second);
      if (!all_digits(text) || text.size() > 19)
        return refusal{400, "http.bad_request", "Content-Length is not a number"};
      auto value = std::stoull(std::string{text});
      if (length && *length != value)
        return refusal{400, "http.bad_request", "the body's framing is ambiguous"};
      length = value;
    }
    f.content_length = length;
  }
  for (auto& coding : tokens_of(headers, "Content-Encoding"))
    if (coding != "identity")
      return refusal{415, "http.unsupported_encoding",
                     "compressed request bodies are not accepted"};
  if (state_changing(method) && headers.count("Origin") != 0
      && !origin_allowed(first("Origin"), first("Host"), rules.allowed_hosts))
    return refusal{403, "http.origin_not_allowed", "cross-site requests are not accepted"};
  if (f.content_length && *f.content_length > rules.max_body)
    return refusal{413, "http.too_large",
                   "the body is larger than this path takes (" + std::to_string(rules.max_body)
                       + " bytes)"};
  if (framing != nullptr)
    *framing = f;
  return std::nullopt;
}

bool secrets_equal(std::string_view given, std::string_view expected) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> a{}, b{};
  SHA256(reinterpret_cast<const unsigned char*>(given.data()), given.size(), a.data());
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b.data());
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::string> weak_token(std::string_view variable, std::string_view token) {
  if (token.empty() || token.size() >= min_token_length)
    return std::nullopt;
  return std::string{variable} + " is " + std::to_string(token.size())
         + " characters long; a token must have at least " + std::to_string(min_token_length)
         + " (for example: openssl rand -hex 32)";
}

attempt_window::attempt_window(size_t limit, std::chrono::seconds window, size_t max_keys)
    : limit_(std::max<size_t>(limit, 1)), window_(window),
      max_keys_(std::max<size_t>(max_keys, 1)) {}

std::optional<std::chrono::seconds> attempt_window::blocked_for(const std::string& key,
                                                                clock::time_point now) {
  std::lock_guard guard{mtx_};
  auto it = attempts_.find(key);
  if (it == attempts_.end())
    return std::nullopt;
  auto& times = it->second;
  while (!times.empty() && times.front() + window_ <= now)
    times.pop_front();
  if (times.size() < limit_)
    return std::nullopt;
  auto left = std::chrono::ceil<std::chrono::seconds>(times.front() + window_ - now);
  return std::max(left, std::chrono::seconds{1});
}

void attempt_window::record(const std::string& key, clock::time_point now) {
  std::lock_guard guard{mtx_};
  if (attempts_.size() >= max_keys_ && attempts_.find(key) == attempts_.end())
    prune(now);
  auto& times = attempts_[key];
  times.push_back(now);
  while (times.size() > limit_)
    times.pop_front();
}

void attempt_window::clear(const std::string& key) {
  std::lock_guard guard{mtx_};
  attempts_.erase(key);
}

size_t attempt_window::keys() const {
  std::lock_guard guard{mtx_};
  return attempts_.size();
}

void attempt_window::prune(clock::time_point now) {
  std::erase_if(attempts_,
                [&](auto& kv) { return kv.second.empty() || kv.second.back() + window_ <= now; });
  while (attempts_.size() >= max_keys_) {
    auto oldest = attempts_.begin();
    for (auto it = attempts_.begin(); it != attempts_.end(); ++it)
      if (it->second.back() < oldest->second.back())
        oldest = it;
    attempts_.erase(oldest);
  }
}

} // namespace ingestd::http_server
