// The Amazon S3 REST protocol without any I/O: URLs for path-style and virtual-host addressing,
// XML error parsing and transient/permanent classification, ListObjectsV2 answers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http/http_client.hpp"
#include "messages/result.hpp"

namespace ingestd::s3 {

/// How object URLs are formed.
struct addressing {
  /// Base URL without trailing '/', e.g. "https://s3.eu-west-1.amazonaws.com" or
  /// "http://127.0.0.1:54566".
  std::string endpoint;
  std::string bucket;
  /// true: {endpoint}/{bucket}/{key}; false (virtual host): {scheme}://{bucket}.{host}/{key}.
  bool path_style = false;
};

/// The bucket's URL (ending in '/' for virtual host, without it for path style), or a
/// permanent "s3.config" error when the endpoint is not an absolute http(s) URL.
result<std::string> bucket_url(const addressing& a);

/// The object's URL; the key is validated (storage_keys::validate_key) and URI-encoded per
/// segment ('/' kept), so that the URL's path is exactly SigV4's canonical URI for S3.
result<std::string> object_url(const addressing& a, std::string_view key);

/// True for a valid S3 bucket name: 3-63 characters of lower-case letters, digits, '-' and
/// '.', starting and ending with a letter or digit, not an IP address.
bool valid_bucket_name(std::string_view name);

/// Text of the first <tag>...</tag> in `xml`, with the five XML entities and numeric character
/// references decoded; empty when absent.
std::string xml_text(std::string_view xml, std::string_view tag);

/// The error of a non-2xx answer. `<Error><Code>` and `<Message>` when the body has them (HEAD
/// answers never do: then the status decides). A missing object (NoSuchKey, or 404 on an object
/// request) is the permanent "storage.not_found"; other codes become "s3.<Code>" or
/// "s3.http_<status>". `object_request` says whether a 404 names the object or something else.
error parse_error(const http_response& response, bool object_request, std::string_view what);

/// Classification of an S3 error code: SlowDown, InternalError, ServiceUnavailable,
/// RequestTimeout, 429 and 5xx are transient; AccessDenied, SignatureDoesNotMatch,
/// RequestTimeTooSkewed, NoSuchBucket and other 4xx are permanent.
error classify(const std::string& code, std::string message, long status);

/// One page of ListObjectsV2.
struct list_page {
  std::vector<std::string> keys;
  /// Non-empty when more pages follow.
  std::string next_token;
};
result<list_page> parse_list(std::string_view body);

} // namespace ingestd::s3
