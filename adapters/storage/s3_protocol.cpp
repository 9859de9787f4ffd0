// The Amazon S3 REST protocol without I/O: URLs, XML errors and their classification, and the
// ListObjectsV2 answer. S3's XML is flat enough for a small scanner; no XML library needed.
#include "adapters/storage/s3_protocol.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "adapters/aws/encoding.hpp"
#include "adapters/storage/object_store.hpp"
#include "messages/error_codes.hpp"

namespace ingestd::s3 {

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string xml_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '&') {
      out.push_back(s[i++]);
      continue;
    }
    auto semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) {
      out.push_back(s[i++]);
      continue;
    }
    auto entity = s.substr(i + 1, semi - i - 1);
    if (entity == "amp")
      out.push_back('&');
    else if (entity == "lt")
      out.push_back('<');
    else if (entity == "gt")
      out.push_back('>');
    else if (entity == "quot")
      out.push_back('"');
    else if (entity == "apos")
      out.push_back('\'');
    else if (entity.size() > 1 && entity[0] == '#') {
      bool hex = entity[1] == 'x' || entity[1] == 'X';
      auto digits = entity.substr(hex ? 2 : 1);
      uint32_t cp = 0;
      auto [ptr, ec]
          = std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
      // Not a character XML allows (NUL, a surrogate, beyond U+10FFFF): kept as written, so that
      // the decoded text stays well-formed UTF-8.
      if (ec != std::errc{} || ptr != digits.data() + digits.size() || digits.empty() || cp == 0
          || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
        out.append(s.substr(i, semi - i + 1));
      } else {
        append_utf8(out, cp);
      }
    } else {
      out.append(s.substr(i, semi - i + 1));
    }
    i = semi + 1;
  }
  return out;
}

/// Every <tag>...</tag> text in order (tags without attributes, as S3 writes these).
std::vector<std::string> xml_all(std::string_view xml, std::string_view tag) {
  std::vector<std::string> out;
  std::string open = "<" + std::string{tag} + ">";
  std::string close = "</" + std::string{tag} + ">";
  size_t pos = 0;
  while (true) {
    auto start = xml.find(open, pos);
    if (start == std::string_view::npos)
      break;
    start += open.size();
    auto end = xml.find(close, start);
    if (end == std::string_view::npos)
      break;
    out.push_back(xml_decode(xml.substr(start, end - start)));
    pos = end + close.size();
  }
  return out;
}

bool one_of(std::string_view code, std::initializer_list<std::string_view> codes) {
  return std::any_of(codes.begin(), codes.end(), [&](auto c) { return code == c; });
}

result<aws::url_parts> endpoint_parts(const addressing& a) {
  aws::url_parts parts;
  if (!aws::parse_url(a.endpoint, parts))
    return error::make_permanent("s3.config", "S3 endpoint is not an absolute http(s) URL: '"
                                                  + a.endpoint + "'");
  if (a.bucket.empty())
    return error::make_permanent("s3.config", "no S3 bucket configured");
  return parts;
}

} // namespace

bool valid_bucket_name(std::string_view name) {
  if (name.size() < 3 || name.size() > 63)
    return false;
  auto alnum = [](char c) {
    return std::islower(static_cast<unsigned char>(c))
           || std::isdigit(static_cast<unsigned char>(c));
  };
  if (!alnum(name.front()) || !alnum(name.back()))
    return false;
  if (!std::all_of(name.begin(), name.end(),
                   [&](char c) { return alnum(c) || c == '-' || c == '.'; }))
    return false;
  if (name.find("..") != std::string_view::npos)
    return false;
  // Not formatted like an IPv4 address.
  return !std::all_of(name.begin(), name.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

result<std::string> bucket_url(const addressing& a) {
  auto parts = endpoint_parts(a);
  if (!parts)
    return parts.error();
  if (a.path_style) {
    auto base = a.endpoint;
    while (!base.empty() && base.back() == '/')
      base.pop_back();
    // The endpoint may carry a path prefix (a gateway); keep it.
    return base + "/" + aws::uri_encode(a.bucket);
  }
  std::string url = parts->scheme + "://" + a.bucket + "." + parts->host;
  if (parts->explicit_port)
    url += ":" + std::to_string(parts->port);
  auto path = parts->path;
  if (path.empty() || path.back() != '/')
    path.push_back('/');
  return url + path;
}

result<std::string> object_url(const addressing& a, std::string_view key) {
  if (auto ok = storage_keys::validate_key(std::string{key}); !ok)
    return ok.error();
  auto base = bucket_url(a);
  if (!base)
    return base.error();
  if (a.path_style)
    return *base + "/" + aws::uri_encode(key, true);
  return *base + aws::uri_encode(key, true);
}

std::string xml_text(std::string_view xml, std::string_view tag) {
  std::string open = "<" + std::string{tag} + ">";
  std::string close = "</" + std::string{tag} + ">";
  auto start = xml.find(open);
  if (start == std::string_view::npos)
    return {};
  start += open.size();
  auto end = xml.find(close, start);
  if (end == std::string_view::npos)
    return {};
  return xml_decode(xml.substr(start, end - start));
}

error parse_error(const http_response& response, bool object_request, std::string_view what) {
  std::string code;
  std::string message;
  if (response.body.find("<Error") != std::string::npos) {
    code = xml_text(response.body, "Code");
    message = xml_text(response.body, "Message");
  }
  if (message.empty())
    message = "HTTP " + std::to_string(response.status);
  if (!what.empty())
    message += " (" + std::string{what} + ")";
  if (code == "NoSuchKey" || (code.empty() && object_request && response.status == 404))
    return error::make_permanent(errc::storage_not_found, std::move(message));
  auto err = classify(code.empty() ? "http_" + std::to_string(response.status) : code,
                      std::move(message), response.status);
  err.retry_after_ms = parse_retry_after_seconds(response.header("retry-after"));
  return err;
}

error classify(const std::string& code, std::string message, long status) {
  auto full = "s3." + code;
  auto transient = [&] { return error::make_transient(std::move(full), std::move(message)); };
  auto permanent = [&] { return error::make_permanent(std::move(full), std::move(message)); };
  if (one_of(code, {"SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout",
                    "OperationAborted", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                    "TooManyRequests", "BadDigest", "IncompleteBody", "XAmzContentSHA256Mismatch"}))
    return transient();
  if (one_of(code, {"AccessDenied",         "SignatureDoesNotMatch",
                    "RequestTimeTooSkewed", "InvalidAccessKeyId",
                    "NoSuchBucket",         "AuthorizationHeaderMalformed",
                    "PermanentRedirect",    "InvalidBucketName",
                    "EntityTooLarge",       "ExpiredToken",
                    "InvalidToken",         "AccountProblem",
                    "AllAccessDisabled",    "InvalidObjectState",
                    "MethodNotAllowed",     "MissingContentLength",
                    "InvalidArgument",      "InvalidRequest",
                    "KeyTooLongError",      "NoSuchKey"}))
    return permanent();
  if (status == 429 || status >= 500)
    return transient();
  return permanent();
}

result<list_page> parse_list(std::string_view body) {
  if (body.find("<ListBucketResult") == std::string_view::npos)
    return error::make_transient("s3.bad_response", "not a ListObjectsV2 answer");
  list_page page;
  page.keys = xml_all(body, "Key");
  if (xml_text(body, "IsTruncated") == "true")
    page.next_token = xml_text(body, "NextContinuationToken");
  return page;
}

} // namespace ingestd::s3
