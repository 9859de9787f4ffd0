// AWS Signature Version 4 (see sigv4.hpp): canonical request, string to sign, signing key,
// Authorization header and presigned URLs, following the published algorithm and test suite.
#include "adapters/aws/sigv4.hpp"

#include <algorithm>
#include <ctime>
#include <map>
#include <vector>

#include "adapters/aws/encoding.hpp"
#include "messages/text.hpp"

namespace ingestd::aws {

namespace {

constexpr std::string_view algorithm = "AWS4-HMAC-SHA256";
constexpr std::string_view unsigned_payload_text = "UNSIGNED-PAYLOAD";

error sigv4_error(std::string message) {
  return error::make_permanent("aws.sigv4", std::move(message));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && lower(a) == lower(b);
}

/// Trims the value and collapses inner runs of spaces (the spec's "Trimall").
std::string trim_all(std::string_view v) {
  std::string out;
  bool pending_space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space)
      out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

std::string format_amz_date(std::chrono::system_clock::time_point tp) {
  std::time_t t = std::chrono::system_clock::to_time_t(tp);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[17];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

bool valid_amz_date(std::string_view d) {
  if (d.size() != 16 || d[8] != 'T' || d[15] != 'Z')
    return false;
  for (size_t i = 0; i < 15; ++i)
    if (i != 8 && (d[i] < '0' || d[i] > '9'))
      return false;
  return true;
}

/// Removes dot segments and empty segments; keeps a trailing slash (other services only).
std::string normalize_path(std::string_view path) {
  std::vector<std::string_view> segments;
  size_t pos = 0;
  while (pos <= path.size()) {
    auto next = path.find('/', pos);
    if (next == std::string_view::npos)
      next = path.size();
    auto seg = path.substr(pos, next - pos);
    if (seg == "..") {
      if (!segments.empty())
        segments.pop_back();
    } else if (!seg.empty() && seg != ".") {
      segments.push_back(seg);
    }
    pos = next + 1;
  }
  std::string out;
  for (auto seg : segments) {
    out.push_back('/');
    out.append(seg);
  }
  if (out.empty())
    return "/";
  if (path.size() > 1 && path.back() == '/')
    out.push_back('/');
  return out;
}

std::string canonical_uri(std::string_view path, bool s3_path) {
  if (s3_path)
    return uri_encode(percent_decode(path), true);
  return uri_encode(normalize_path(path), true);
}

std::string canonical_query(std::string_view query,
                            const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  std::vector<std::pair<std::string, std::string>> params;
  size_t pos = 0;
  while (pos < query.size()) {
    auto amp = query.find('&', pos);
    if (amp == std::string_view::npos)
      amp = query.size();
    auto item = query.substr(pos, amp - pos);
    if (!item.empty()) {
      auto eq = item.find('=');
      auto key = item.substr(0, eq);
      auto value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
      params.emplace_back(uri_encode(percent_decode(key)), uri_encode(percent_decode(value)));
    }
    pos = amp + 1;
  }
  for (auto& [k, v] : extra)
    params.emplace_back(uri_encode(k), uri_encode(v));
  std::sort(params.begin(), params.end());
  std::string out;
  for (auto& [k, v] : params) {
    if (!out.empty())
      out.push_back('&');
    out += k;
    out.push_back('=');
    out += v;
  }
  return out;
}

/// Headers that proxies or curl may change on the way: botocore leaves them unsigned too.
bool never_signed(std::string_view lower_name) {
  return lower_name == "authorization" || lower_name == "user-agent" || lower_name == "expect"
         || lower_name == "x-amzn-trace-id" || lower_name == "content-length";
}

struct signing_input {
  url_parts url;
  std::string region;
  std::string amz_date;
};

result<signing_input> prepare(std::string_view url, const aws_credentials& credentials,
                              const sigv4_options& options) {
  signing_input in;
  if (!parse_url(url, in.url))
    return sigv4_error("not an absolute http(s) URL: " + std::string(url));
  if (options.service.empty())
    return sigv4_error("no service name to sign for");
  in.region = options.region.empty() ? credentials.region : options.region;
  if (in.region.empty())
    return sigv4_error("no region to sign for (set AWS_REGION or the client's region)");
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty())
    return sigv4_error("credentials without access key id or secret access key");
  return in;
}

sigv4_signature finish(std::string canonical_request, std::string signed_headers,
                       std::string amz_date, const signing_input& in,
                       const aws_credentials& credentials, const sigv4_options& options) {
  sigv4_signature out;
  auto date = amz_date.substr(0, 8);
  out.amz_date = std::move(amz_date);
  out.credential_scope = date + "/" + in.region + "/" + options.service + "/aws4_request";
  out.canonical_request = std::move(canonical_request);
  out.string_to_sign = std::string(algorithm) + "\n" + out.amz_date + "\n" + out.credential_scope
                       + "\n" + sha256_hex(out.canonical_request);
  auto key = derive_signing_key(credentials.secret_access_key, date, in.region, options.service);
  out.signature = hex_encode(hmac_sha256(key, out.string_to_sign));
  out.signed_headers = std::move(signed_headers);
  out.authorization = std::string(algorithm) + " Credential=" + credentials.access_key_id + "/"
                      + out.credential_scope + ", SignedHeaders=" + out.signed_headers
                      + ", Signature=" + out.signature;
  return out;
}

void erase_header(http_request& request, std::string_view name) {
  std::erase_if(request.headers, [&](const auto& h) { return iequals(h.first, name); });
}

} // namespace

sigv4_options s3_signing(std::string region) {
  sigv4_options out;
  out.service = "s3";
  out.region = std::move(region);
  out.payload = payload_signing::hash_body;
  out.add_content_sha256_header = true;
  out.s3_path = true;
  return out;
}

sigv4_options service_signing(std::string service, std::string region) {
  sigv4_options out;
  out.service = std::move(service);
  out.region = std::move(region);
  return out;
}

std::string derive_signing_key(std::string_view secret_access_key, std::string_view date,
                               std::string_view region, std::string_view service) {
  auto k_date = hmac_sha256("AWS4" + std::string(secret_access_key), date);
  auto k_region = hmac_sha256(k_date, region);
  auto k_service = hmac_sha256(k_region, service);
  return hmac_sha256(k_service, "aws4_request");
}

result<sigv4_signature> compute_signature(const http_request& request,
                                          const aws_credentials& credentials,
                                          const sigv4_options& options) {
  auto in = prepare(request.url, credentials, options);
  if (!in)
    return in.error();
  // Lower-case names, values trimmed; repeated names joined with ',' in order of appearance.
  std::map<std::string, std::string> headers;
  for (const auto& [name, value] : request.headers) {
    auto key = lower(name);
    if (never_signed(key))
      continue;
    auto [it, inserted] = headers.try_emplace(key, trim_all(value));
    if (!inserted)
      it->second += "," + trim_all(value);
  }
  if (!headers.contains("host"))
    headers.emplace("host", in->url.host_header());
  auto date_it = headers.find("x-amz-date");
  if (date_it == headers.end())
    return sigv4_error("the request has no X-Amz-Date header");
  if (!valid_amz_date(date_it->second))
    return sigv4_error("X-Amz-Date is not of the form YYYYMMDDTHHMMSSZ: " + date_it->second);
  std::string payload_hash;
  if (auto it = headers.find("x-amz-content-sha256"); it != headers.end())
    payload_hash = it->second;
  else if (options.payload == payload_signing::unsigned_payload)
    payload_hash = unsigned_payload_text;
  else
    payload_hash = sha256_hex(request.body);

  std::string canonical_headers;
  std::string signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers.append(name).append(":").append(value).append("\n");
    if (!signed_headers.empty())
      signed_headers.push_back(';');
    signed_headers += name;
  }
  std::string cr = request.method + "\n" + canonical_uri(in->url.path, options.s3_path) + "\n"
                   + canonical_query(in->url.query) + "\n" + canonical_headers + "\n"
                   + signed_headers + "\n" + payload_hash;
  return finish(std::move(cr), std::move(signed_headers), date_it->second, *in, credentials,
                options);
}

result<sigv4_signature> sign_request(http_request& request, const aws_credentials& credentials,
                                     const sigv4_options& options) {
  auto in = prepare(request.url, credentials, options);
  if (!in)
    return in.error();
  // Re-signing (a retry) replaces everything an earlier signature added.
  erase_header(request, "authorization");
  erase_header(request, "x-amz-date");
  request.headers.emplace_back(
      "X-Amz-Date", format_amz_date(options.time.value_or(std::chrono::system_clock::now())));
  if (!credentials.session_token.empty()) {
    erase_header(request, "x-amz-security-token");
    request.headers.emplace_back("X-Amz-Security-Token", credentials.session_token);
  }
  if (options.add_content_sha256_header) {
    erase_header(request, "x-amz-content-sha256");
    request.headers.emplace_back("x-amz-content-sha256",
                                 options.payload == payload_signing::unsigned_payload
                                     ? std::string(unsigned_payload_text)
                                     : sha256_hex(request.body));
  }
  auto sig = compute_signature(request, credentials, options);
  if (!sig)
    return sig.error();
  request.headers.emplace_back("Authorization", sig->authorization);
  return sig;
}

result<std::string> presign_url(std::string_view method, std::string_view url,
                                const aws_credentials& credentials, const sigv4_options& options,
                                int64_t expires_seconds) {
  auto in = prepare(url, credentials, options);
  if (!in)
    return in.error();
  if (expires_seconds < 1 || expires_seconds > 604800)
    return sigv4_error("presigned URL expiry must be 1..604800 seconds, got "
                       + std::to_string(expires_seconds));
  auto amz_date = format_amz_date(options.time.value_or(std::chrono::system_clock::now()));
  auto scope = amz_date.substr(0, 8) + "/" + in->region + "/" + options.service + "/aws4_request";
  std::vector<std::pair<std::string, std::string>> auth_params{
      {"X-Amz-Algorithm", std::string(algorithm)},
      {"X-Amz-Credential", credentials.access_key_id + "/" + scope},
      {"X-Amz-Date", amz_date},
      {"X-Amz-Expires", std::to_string(expires_seconds)},
      {"X-Amz-SignedHeaders", "host"},
  };
  if (!credentials.session_token.empty())
    auth_params.emplace_back("X-Amz-Security-Token", credentials.session_token);
  auto query = canonical_query(in->url.query, auth_params);
  auto host = in->url.host_header();
  std::string cr = std::string(method) + "\n" + canonical_uri(in->url.path, options.s3_path) + "\n"
                   + query + "\nhost:" + host + "\n\nhost\n" + std::string(unsigned_payload_text);
  auto sig = finish(std::move(cr), "host", amz_date, *in, credentials, options);
  return in->url.scheme + "://" + host + in->url.path + "?" + query
         + "&X-Amz-Signature=" + sig.signature;
}

} // namespace ingestd::aws
