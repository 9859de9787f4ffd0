// Amazon S3 (or an S3-compatible service) over the process's HTTP engine: the object_store port
// for one bucket, plus the bucket-level calls that tests and setup need.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "adapters/aws/aws_credentials.hpp"
#include "adapters/http/http_client.hpp"
#include "adapters/storage/object_store.hpp"

namespace ingestd {

namespace detail {
struct s3_shared;
} // namespace detail

struct s3_options {
  /// Keys (and a default region), e.g. from aws::credentials_from_env().
  aws::aws_credentials credentials;
  /// Overrides credentials.region when not empty.
  std::string region;
  /// Base URL override, e.g. "http://127.0.0.1:54566" for fauxqs; empty means
  /// https://s3.{region}.amazonaws.com.
  std::string endpoint;
  std::string bucket;
  /// true: {endpoint}/{bucket}/{key}; false: {scheme}://{bucket}.{endpoint host}/{key}
  /// (AWS's default; needs DNS for the bucket's host name).
  bool path_style = false;
  /// true: x-amz-content-sha256 carries the body's SHA-256 (and Content-MD5 its MD5), so S3
  /// rejects a body damaged in transit; false: "UNSIGNED-PAYLOAD" (only sensible over TLS).
  bool sign_payload = true;
  std::chrono::milliseconds connect_timeout{5'000};
  /// Total timeout of a GET or PUT (bodies can be large).
  std::chrono::milliseconds transfer_timeout{120'000};
  /// Total timeout of HEAD, DELETE, bucket and list calls.
  std::chrono::milliseconds call_timeout{20'000};
};

/// The object_store port over S3. Errors: a missing object is permanent "storage.not_found";
/// an object over the caller's limit is permanent "storage.too_large" (known from
/// Content-Length, or the engine's response limit, before the body is kept); S3 error codes
/// become "s3.<Code>" (SlowDown, InternalError, 5xx transient; AccessDenied,
/// SignatureDoesNotMatch, RequestTimeTooSkewed, NoSuchBucket permanent). Invalid keys are
/// refused before any request ("storage.bad_key"). Thread-safe; calls in flight keep what they
/// need alive, so the store may be destroyed before their callbacks run.
class s3_store final : public object_store {
public:
  /// `http` must stay alive until every callback has run; it is shared for that reason.
  s3_store(std::shared_ptr<http_client> http, s3_options options);

  void get(std::string key, size_t max_bytes, callback<std::string> done) override;
  void put(std::string key, std::string bytes, std::string content_type,
           callback<void> done) override;
  void exists(std::string key, callback<bool> done) override;
  void remove(std::string key, callback<void> done) override;
  /// All pages of ListObjectsV2.
  void list(std::string prefix, callback<std::vector<std::string>> done) override;
  std::string name() const override { return "s3"; }

  /// Creates the bucket (with a LocationConstraint outside us-east-1); a bucket that already
  /// exists and is ours counts as created.
  void create_bucket(callback<void> done);
  /// Deletes the bucket, which must be empty.
  void delete_bucket(callback<void> done);

  const s3_options& options() const;

private:
  std::shared_ptr<const detail::s3_shared> shared_;
};

} // namespace ingestd
