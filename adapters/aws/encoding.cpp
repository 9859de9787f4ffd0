// Hashing and encoding helpers (see encoding.hpp): OpenSSL libcrypto for the digests, plain code
// for hex, base64, percent-encoding and URL splitting.
#include "adapters/aws/encoding.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <stdexcept>

namespace ingestd::aws {

namespace {

std::string digest(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // Only fails on allocation failure inside OpenSSL: an impossible condition here.
  if (EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) != 1)
    throw std::runtime_error("EVP_Digest failed");
  return std::string(reinterpret_cast<const char*>(out), len);
}

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
         || c == '_' || c == '.' || c == '~';
}

} // namespace

std::string sha256(std::string_view data) {
  return digest(EVP_sha256(), data);
}

std::string sha256_hex(std::string_view data) {
  return hex_encode(sha256(data));
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len)
      == nullptr)
    throw std::runtime_error("HMAC failed");
  return std::string(reinterpret_cast<const char*>(out), len);
}

std::string md5(std::string_view data) {
  return digest(EVP_md5(), data);
}

std::string md5_hex(std::string_view data) {
  return hex_encode(md5(data));
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string uri_encode(std::string_view s, bool keep_slash) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex_digit(c >> 4, true));
      out.push_back(hex_digit(c, true));
    }
  }
  return out;
}

std::string url_parts::host_header() const {
  bool default_port = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  if (default_port)
    return host;
  return host + ":" + std::to_string(port);
}

bool parse_url(std::string_view url, url_parts& out) {
  auto sep = url.find("://");
  if (sep == std::string_view::npos)
    return false;
  std::string scheme;
  for (char c : url.substr(0, sep))
    scheme.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  if (scheme != "http" && scheme != "https")
    return false;
  auto rest = url.substr(sep + 3);
  if (auto hash = rest.find('#'); hash != std::string_view::npos)
    rest = rest.substr(0, hash);
  auto authority_end = rest.find_first_of("/?");
  auto authority = rest.substr(0, authority_end);
  auto tail
      = authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (auto at = authority.rfind('@'); at != std::string_view::npos)
    authority = authority.substr(at + 1); // userinfo is never signed nor sent as Host
  if (authority.empty())
    return false;
  std::string_view host = authority;
  std::string_view port_text;
  if (authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return false;
    host = authority.substr(0, close + 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':')
        return false;
      port_text = authority.substr(close + 2);
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port_text = authority.substr(colon + 1);
  }
  if (host.empty())
    return false;
  int port = scheme == "https" ? 443 : 80;
  bool explicit_port = false;
  if (!port_text.empty()) {
    auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || ptr != port_text.data() + port_text.size() || port <= 0
        || port > 65535)
      return false;
    explicit_port = true;
  }
  out.scheme = std::move(scheme);
  out.host = std::string(host);
  for (auto& c : out.host)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  out.port = port;
  out.explicit_port = explicit_port;
  auto q = tail.find('?');
  out.path = std::string(tail.substr(0, q));
  if (out.path.empty())
    out.path = "/";
  out.query = q == std::string_view::npos ? std::string{} : std::string(tail.substr(q + 1));
  return true;
}

} // namespace ingestd::aws
