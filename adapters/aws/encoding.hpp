// Hashing and encoding helpers for AWS and other HTTP clients: SHA-256, HMAC-SHA256, MD5 (OpenSSL
// libcrypto), hex, base64, RFC 3986 URI encoding, and a small URL splitter.
#pragma once

#include <string>
#include <string_view>

#include "messages/hex.hpp"

namespace ingestd::aws {

/// Raw 32-byte SHA-256 digest of `data`.
std::string sha256(std::string_view data);
/// Lower-case hex SHA-256 of `data` (64 characters), e.g. SigV4's payload hash.
std::string sha256_hex(std::string_view data);
/// Raw 32-byte HMAC-SHA256 of `data` under `key`.
std::string hmac_sha256(std::string_view key, std::string_view data);
/// Raw 16-byte MD5 of `data` (SQS's MD5OfBody, S3's Content-MD5 need it).
std::string md5(std::string_view data);
/// Lower-case hex MD5 of `data`.
std::string md5_hex(std::string_view data);

/// Lower-case hex of arbitrary bytes (the one codec in messages/hex.hpp).
using ingestd::hex_encode;
/// Standard base64 with padding.
std::string base64_encode(std::string_view bytes);

/// RFC 3986 percent-encoding as AWS wants it: unreserved characters (A-Z a-z 0-9 - _ . ~) as
/// they are, everything else as %XY with upper-case hex; '/' is kept when `keep_slash`
/// (for paths) and encoded otherwise (for query keys and values).
std::string uri_encode(std::string_view s, bool keep_slash = false);

/// The parts of an absolute http(s) URL that signing and request building need.
struct url_parts {
  std::string scheme; ///< "http" or "https", lower case
  std::string host;   ///< without the port; brackets kept for IPv6 literals
  int port = 0;       ///< explicit or the scheme's default
  bool explicit_port = false;
  std::string path;  ///< as written (still percent-encoded); "/" when empty
  std::string query; ///< after '?', without the '#fragment'; may be empty

  /// The Host header value curl sends: host, plus ":port" when it is not the scheme's default.
  std::string host_header() const;
};

/// Splits an absolute http:// or https:// URL; false when it is not one.
bool parse_url(std::string_view url, url_parts& out);

} // namespace ingestd::aws
