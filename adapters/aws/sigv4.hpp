// AWS Signature Version 4: signs an http_request in place (Authorization header) or builds a
// presigned URL, and exposes the canonical request and string to sign for tests and debugging.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/aws/aws_credentials.hpp"
#include "adapters/http/http_client.hpp"
#include "messages/result.hpp"

namespace ingestd::aws {

/// What `x-amz-content-sha256` / the payload hash of the canonical request holds.
enum class payload_signing {
  /// Hex SHA-256 of request.body (the default; what SQS and most services use).
  hash_body,
  /// The literal "UNSIGNED-PAYLOAD" (S3 over TLS, presigned URLs).
  unsigned_payload,
};

struct sigv4_options {
  /// The signing name of the service: "s3", "sqs", "iam", ...
  std::string service;
  /// Overrides credentials.region when not empty.
  std::string region;
  /// Signing time; the current time when unset. Tests pin it.
  std::optional<std::chrono::system_clock::time_point> time;
  payload_signing payload = payload_signing::hash_body;
  /// Adds and signs `x-amz-content-sha256` (S3 requires it).
  bool add_content_sha256_header = false;
  /// S3 semantics: the path is encoded once and never normalised. Other services (false) get
  /// the path normalised (dot segments removed) and encoded twice, as AWS specifies.
  bool s3_path = false;
};

/// Convenience presets.
sigv4_options s3_signing(std::string region = {});
sigv4_options service_signing(std::string service, std::string region = {});

/// The intermediate and final strings of one signature.
struct sigv4_signature {
  std::string amz_date;         ///< "20150830T123600Z"
  std::string credential_scope; ///< "20150830/us-east-1/service/aws4_request"
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers; ///< "host;x-amz-date"
  std::string signature;      ///< 64 lower-case hex characters
  std::string authorization;  ///< the Authorization header value
};

/// Signs `request` in place. Sets `X-Amz-Date` (from options.time or now), `X-Amz-Security-Token`
/// when the credentials carry a session token, `x-amz-content-sha256` when asked, and
/// `Authorization`, replacing earlier values of these (so a retry can simply sign again).
/// Every header already on the request is signed (except user-agent, expect, content-length,
/// x-amzn-trace-id, which may change on the way), plus `host` (taken from a Host header if the
/// request has one, else from the URL as curl will send it). Header names are signed in lower
/// case; values trimmed with inner runs of spaces collapsed.
/// Errors (permanent "aws.sigv4"): an URL that is not absolute http(s), no service, no region.
result<sigv4_signature> sign_request(http_request& request, const aws_credentials& credentials,
                                     const sigv4_options& options);

/// Computes the signature without modifying anything: `request` must already hold every header to
/// sign (including X-Amz-Date, which then gives the time). Used by sign_request and the test suite.
result<sigv4_signature> compute_signature(const http_request& request,
                                          const aws_credentials& credentials,
                                          const sigv4_options& options);

/// A presigned URL (query-string authentication) for `method` on `url`, valid for
/// `expires_seconds` (1..604800). Signs only `host`; the payload is UNSIGNED-PAYLOAD.
result<std::string> presign_url(std::string_view method, std::string_view url,
                                const aws_credentials& credentials, const sigv4_options& options,
                                int64_t expires_seconds);

/// The SigV4 signing key: HMAC chain over date ("20150830"), region, service, "aws4_request".
std::string derive_signing_key(std::string_view secret_access_key, std::string_view date,
                               std::string_view region, std::string_view service);

} // namespace ingestd::aws
