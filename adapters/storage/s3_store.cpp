// Amazon S3 over the HTTP engine: signed GET/PUT/HEAD of objects in one bucket, bucket setup
// and listing, with S3's XML errors mapped onto the storage port's error codes.
#include "adapters/storage/s3_store.hpp"

#include <algorithm>
#include <charconv>
#include <mutex>
#include <thread>
#include <utility>

#include "adapters/aws/encoding.hpp"
#include "adapters/aws/sigv4.hpp"
#include "adapters/storage/s3_protocol.hpp"
#include "messages/error_codes.hpp"

namespace ingestd {

namespace detail {

/// What a store's calls need; shared by the calls in flight so the store may go away first.
struct s3_shared {
  std::shared_ptr<http_client> http;
  s3_options options;
  std::string region;
  s3::addressing addressing;
};

} // namespace detail

namespace {

using shared_ptr = std::shared_ptr<const detail::s3_shared>;

/// Delivers a result known before any I/O from another thread, as the port promises.
template <class T>
void deliver_later(callback<T> done, result<T> value) {
  std::thread([done = std::move(done), value = std::move(value)]() mutable {
    done(std::move(value));
  }).detach();
}

/// The smallest response limit the engine gets: error bodies must fit even when the caller
/// wants at most a few bytes of object.
constexpr size_t min_response_limit = size_t{64} * 1024;

/// Signs and submits `req`; delivers the engine's answer (any status) or its transport error.
void submit(const shared_ptr& sh, http_request req, callback<http_response> done) {
  req.connect_timeout = sh->options.connect_timeout;
  auto signing = aws::s3_signing(sh->region);
  if (!sh->options.sign_payload)
    signing.payload = aws::payload_signing::unsigned_payload;
  auto sig = aws::sign_request(req, sh->options.credentials, signing);
  if (!sig) {
    deliver_later<http_response>(std::move(done), sig.error());
    return;
  }
  sh->http->submit(std::move(req), std::move(done));
}

bool success(long status) {
  return status >= 200 && status < 300;
}

/// Content-Length of a response, when present and numeric.
std::optional<uint64_t> content_length(const http_response& r) {
  auto v = r.header("content-length");
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || ptr != v.data() + v.size())
    return std::nullopt;
  return n;
}

error too_large(const std::string& key, size_t max_bytes, const std::string& detail) {
  return error::make_permanent("storage.too_large", "object '" + key + "' is larger than "
                                                        + std::to_string(max_bytes) + " bytes"
                                                        + detail);
}

/// One S3 call, what the calls differ in.
struct s3_call {
  std::string method;
  std::chrono::milliseconds timeout;
  /// Names the call in S3's error messages, e.g. "GET documents/a.pdf" or "CreateBucket".
  std::string what;
  /// A 404 without an S3 error code is the object's absence ("storage.not_found").
  bool object_request = false;
};

/// Passes every error on.
template <class T>
struct keep_error {
  result<T> operator()(error e) const { return e; }
};

/// The skeleton every call shares: an invalid URL is delivered before any I/O; otherwise the
/// request goes to `url`, signed. A 2xx answer goes to `on_answer`, which makes the value; any
/// other status becomes S3's error (s3::parse_error), and that or a transport error goes to
/// `on_error`, which may turn it into a value (S3's "already so" answers).
template <class T, class OnAnswer, class OnError = keep_error<T>>
void send_call(const shared_ptr& sh, result<std::string> url, s3_call call, http_request req,
               callback<T> done, OnAnswer on_answer, OnError on_error = {}) {
  if (!url) {
    deliver_later<T>(std::move(done), url.error());
    return;
  }
  req.method = std::move(call.method);
  req.url = std::move(*url);
  req.total_timeout = call.timeout;
  submit(sh, std::move(req),
         [call = std::move(call), done = std::move(done), on_answer = std::move(on_answer),
          on_error = std::move(on_error)](result<http_response> r) {
           if (!r) {
             done(on_error(std::move(r.error())));
             return;
           }
           if (!success(r->status)) {
             done(on_error(s3::parse_error(*r, call.object_request, call.what)));
             return;
           }
           done(on_answer(*r));
         });
}

} // namespace

s3_store::s3_store(std::shared_ptr<http_client> http, s3_options options) {
  auto sh = std::make_shared<detail::s3_shared>();
  sh->http = std::move(http);
  sh->region = options.region.empty() ? options.credentials.region : options.region;
  sh->addressing.endpoint = aws::service_endpoint("s3", sh->region, options.endpoint);
  sh->addressing.bucket = options.bucket;
  sh->addressing.path_style = options.path_style;
  sh->options = std::move(options);
  shared_ = std::move(sh);
}

const s3_options& s3_store::options() const {
  return shared_->options;
}

void s3_store::get(std::string key, size_t max_bytes, callback<std::string> done) {
  http_request req;
  // The engine stops reading a body over this limit (from Content-Length when the server sends
  // it), so an oversized object is never held in memory.
  req.max_response_bytes = std::max(max_bytes, min_response_limit);
  auto url = s3::object_url(shared_->addressing, key);
  send_call<std::string>(
      shared_, std::move(url), {"GET", shared_->options.transfer_timeout, "GET " + key, true},
      std::move(req), std::move(done),
      [key, max_bytes](http_response& r) -> result<std::string> {
        if (auto n = content_length(r); n && *n > max_bytes)
          return too_large(key, max_bytes, " (Content-Length " + std::to_string(*n) + ")");
        if (r.body.size() > max_bytes)
          return too_large(key, max_bytes, "");
        return std::move(r.body);
      },
      [key, max_bytes](error e) -> result<std::string> {
        if (e.code == errc::http_too_large)
          return too_large(key, max_bytes, "");
        return e;
      });
}

void s3_store::put(std::string key, std::string bytes, std::string content_type,
                   callback<void> done) {
  http_request req;
  req.headers.emplace_back("Content-Type",
                           content_type.empty() ? "application/octet-stream" : content_type);
  if (shared_->options.sign_payload)
    req.headers.emplace_back("Content-MD5", aws::base64_encode(aws::md5(bytes)));
  req.body = std::move(bytes);
  auto url = s3::object_url(shared_->addressing, key);
  send_call<void>(shared_, std::move(url), {"PUT", shared_->options.transfer_timeout, "PUT " + key},
                  std::move(req), std::move(done),
                  [](http_response&) -> result<void> { return unit{}; });
}

void s3_store::exists(std::string key, callback<bool> done) {
  auto url = s3::object_url(shared_->addressing, key);
  // HEAD answers carry no body: a 404 is the object's absence.
  send_call<bool>(
      shared_, std::move(url), {"HEAD", shared_->options.call_timeout, "HEAD " + key, true}, {},
      std::move(done), [](http_response&) -> result<bool> { return true; },
      [](error e) -> result<bool> {
        if (e.code == errc::storage_not_found)
          return false;
        return e;
      });
}

void s3_store::create_bucket(callback<void> done) {
  http_request req;
  // us-east-1 is the default location and must not be named.
  if (shared_->region != "us-east-1") {
    req.headers.emplace_back("Content-Type", "application/xml");
    req.body = "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
               "<LocationConstraint>"
               + shared_->region + "</LocationConstraint></CreateBucketConfiguration>";
  }
  send_call<void>(
      shared_, s3::bucket_url(shared_->addressing),
      {"PUT", shared_->options.call_timeout, "CreateBucket"}, std::move(req), std::move(done),
      [](http_response&) -> result<void> { return unit{}; },
      [](error e) -> result<void> {
        if (e.code == "s3.BucketAlreadyOwnedByYou")
          return unit{};
        return e;
      });
}

void s3_store::delete_bucket(callback<void> done) {
  send_call<void>(shared_, s3::bucket_url(shared_->addressing),
                  {"DELETE", shared_->options.call_timeout, "DeleteBucket"}, {}, std::move(done),
                  [](http_response&) -> result<void> { return unit{}; });
}

void s3_store::remove(std::string key, callback<void> done) {
  auto url = s3::object_url(shared_->addressing, key);
  send_call<void>(
      shared_, std::move(url), {"DELETE", shared_->options.call_timeout, "DELETE " + key, true}, {},
      std::move(done), [](http_response&) -> result<void> { return unit{}; },
      [](error e) -> result<void> {
        if (e.code == errc::storage_not_found)
          return unit{};
        return e;
      });
}

namespace {

struct listing {
  shared_ptr sh;
  std::string base_url;
  std::string prefix;
  std::vector<std::string> keys;
  callback<std::vector<std::string>> done;
};

void list_page(const std::shared_ptr<listing>& state, const std::string& token) {
  auto url = state->base_url + "?list-type=2&prefix=" + aws::uri_encode(state->prefix);
  if (!token.empty())
    url += "&continuation-token=" + aws::uri_encode(token);
  send_call<s3::list_page>(
      state->sh, std::move(url), {"GET", state->sh->options.call_timeout, "ListObjectsV2"}, {},
      [state](result<s3::list_page> page) {
        if (!page) {
          state->done(std::move(page.error()));
          return;
        }
        state->keys.insert(state->keys.end(), page->keys.begin(), page->keys.end());
        if (page->next_token.empty()) {
          state->done(std::move(state->keys));
          return;
        }
        list_page(state, page->next_token);
      },
      [](http_response& r) { return s3::parse_list(r.body); });
}

} // namespace

void s3_store::list(std::string prefix, callback<std::vector<std::string>> done) {
  auto url = s3::bucket_url(shared_->addressing);
  if (!url) {
    deliver_later<std::vector<std::string>>(std::move(done), url.error());
    return;
  }
  auto state = std::make_shared<listing>();
  state->sh = shared_;
  state->base_url = std::move(*url);
  state->prefix = std::move(prefix);
  state->done = std::move(done);
  list_page(state, {});
}

} // namespace ingestd
