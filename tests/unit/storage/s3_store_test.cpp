// Unit tests of the S3 client with a scripted http_client: URLs (path style, virtual host, key
// encoding), signed payload headers, size limits, XML errors and their classification.
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/aws/encoding.hpp"
#include "adapters/storage/s3_protocol.hpp"
#include "adapters/storage/s3_store.hpp"
#include "tests/support/await.hpp"
#include "tests/support/http/fake_http_client.hpp"

using namespace ingestd;
using namespace std::chrono_literals;
using ingestd::test::await;
using ingestd::test::fake_http_client;
using ingestd::test::header_of;
using ingestd::test::make_response;

namespace {

s3_options test_options(bool path_style = false) {
  s3_options o;
  o.credentials.access_key_id = "AKIDEXAMPLE";
  o.credentials.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  o.credentials.region = "eu-west-1";
  o.bucket = "ingestd-docs";
  o.path_style = path_style;
  return o;
}

http_response s3_error(long status, const std::string& code, const std::string& message) {
  return make_response(status,
                       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code
                           + "</Code><Message>" + message
                           + "</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>",
                       {{"Content-Type", "application/xml"}});
}

std::shared_ptr<fake_http_client> answering(const http_response& r) {
  return std::make_shared<fake_http_client>(
      [r](const http_request&) -> result<http_response> { return r; });
}

} // namespace

// ---- addressing -------------------------------------------------------------------------------

TEST(s3_urls, virtual_host_is_the_default_on_aws) {
  auto http = answering(make_response(200, "x"));
  s3_store store{http, test_options()};
  ASSERT_TRUE(
      await<std::string>([&](auto cb) { store.get("documents/a.pdf", 100, std::move(cb)); }));
  EXPECT_EQ(http->requests().at(0).url,
            "https://ingestd-docs.s3.eu-west-1.amazonaws.com/documents/a.pdf");
}

TEST(s3_urls, path_style_with_endpoint_override) {
  auto http = answering(make_response(200, "x"));
  auto o = test_options(true);
  o.endpoint = "http://127.0.0.1:54566/";
  s3_store store{http, o};
  ASSERT_TRUE(
      await<std::string>([&](auto cb) { store.get("documents/a.pdf", 100, std::move(cb)); }));
  EXPECT_EQ(http->requests().at(0).url, "http://127.0.0.1:54566/ingestd-docs/documents/a.pdf");
}

TEST(s3_urls, virtual_host_on_a_custom_endpoint_keeps_the_port) {
  s3::addressing a{"http://s3.localhost:54566", "b-1", false};
  EXPECT_EQ(*s3::object_url(a, "k"), "http://b-1.s3.localhost:54566/k");
  EXPECT_EQ(*s3::bucket_url(a), "http://b-1.s3.localhost:54566/");
  a.path_style = true;
  EXPECT_EQ(*s3::bucket_url(a), "http://s3.localhost:54566/b-1");
}

TEST(s3_urls, keys_are_encoded_per_segment) {
  s3::addressing a{"https://s3.eu-west-1.amazonaws.com", "b", true};
  EXPECT_EQ(*s3::object_url(a, "ingestions/x y/\xC3\xBC+~%=.pdf"),
            "https://s3.eu-west-1.amazonaws.com/b/ingestions/x%20y/%C3%BC%2B~%25%3D.pdf");
}

TEST(s3_urls, invalid_keys_are_refused_before_any_request) {
  auto http = std::make_shared<fake_http_client>();
  s3_store store{http, test_options()};
  for (std::string key : {"", "/abs", "a/../b", "a//b", "a\\b", "./a", "a\nb", "a/"}) {
    auto r = await<std::string>([&](auto cb) { store.get(key, 100, std::move(cb)); });
    ASSERT_FALSE(r) << key;
    EXPECT_EQ(r.error().code, "storage.bad_key") << key;
    EXPECT_TRUE(r.error().permanent());
    auto p = await<void>([&](auto cb) { store.put(key, "x", "text/plain", std::move(cb)); });
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().code, "storage.bad_key");
    auto e = await<bool>([&](auto cb) { store.exists(key, std::move(cb)); });
    ASSERT_FALSE(e);
  }
  EXPECT_EQ(http->request_count(), 0u);
}

TEST(s3_urls, bucket_names) {
  EXPECT_TRUE(s3::valid_bucket_name("t-abc123"));
  EXPECT_TRUE(s3::valid_bucket_name("a.b.c"));
  EXPECT_FALSE(s3::valid_bucket_name("ab"));
  EXPECT_FALSE(s3::valid_bucket_name("t_abc"));
  EXPECT_FALSE(s3::valid_bucket_name("Upper"));
  EXPECT_FALSE(s3::valid_bucket_name("-abc"));
  EXPECT_FALSE(s3::valid_bucket_name("a..b"));
  EXPECT_FALSE(s3::valid_bucket_name("192.168.1.1"));
  EXPECT_FALSE(s3::valid_bucket_name(std::string(64, 'a')));
}

// ---- requests ---------------------------------------------------------------------------------

TEST(s3_requests, get_is_signed_with_the_empty_payload_hash) {
  auto http = answering(make_response(200, "hello"));
  s3_store store{http, test_options()};
  auto r = await<std::string>([&](auto cb) { store.get("a/b.txt", 10, std::move(cb)); });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "hello");
  auto req = http->requests().at(0);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(header_of(req, "x-amz-content-sha256"), aws::sha256_hex(""));
  auto auth = header_of(req, "Authorization");
  EXPECT_NE(auth.find("/eu-west-1/s3/aws4_request"), std::string::npos) << auth;
  EXPECT_NE(auth.find("x-amz-content-sha256"), std::string::npos) << "payload hash is signed";
  // The engine's limit leaves room for error bodies even when the caller wants few bytes.
  EXPECT_GE(req.max_response_bytes, 64u * 1024);
}

TEST(s3_requests, put_carries_body_type_and_hashes) {
  auto http = answering(make_response(200, "", {{"ETag", "\"x\""}}));
  s3_store store{http, test_options()};
  std::string body = "{\"pages\":[]}";
  auto r = await<void>([&](auto cb) {
    store.put("ingestions/1/out.json", body, "application/json", std::move(cb));
  });
  ASSERT_TRUE(r) << r.error().describe();
  auto req = http->requests().at(0);
  EXPECT_EQ(req.method, "PUT");
  EXPECT_EQ(req.body, body);
  EXPECT_EQ(header_of(req, "Content-Type"), "application/json");
  EXPECT_EQ(header_of(req, "x-amz-content-sha256"), aws::sha256_hex(body));
  EXPECT_EQ(header_of(req, "Content-MD5"), aws::base64_encode(aws::md5(body)));
  auto empty_type = await<void>([&](auto cb) { store.put("k", "x", "", std::move(cb)); });
  ASSERT_TRUE(empty_type);
  EXPECT_EQ(header_of(http->requests().at(1), "Content-Type"), "application/octet-stream");
}

TEST(s3_requests, unsigned_payload_option) {
  auto http = answering(make_response(200));
  auto o = test_options();
  o.sign_payload = false;
  s3_store store{http, o};
  ASSERT_TRUE(await<void>([&](auto cb) { store.put("k", "body", "text/plain", std::move(cb)); }));
  auto req = http->requests().at(0);
  EXPECT_EQ(header_of(req, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_EQ(header_of(req, "Content-MD5"), "");
}

TEST(s3_requests, create_bucket_names_the_region_outside_us_east_1) {
  auto http = answering(make_response(200));
  s3_store eu{http, test_options(true)};
  ASSERT_TRUE(await<void>([&](auto cb) { eu.create_bucket(std::move(cb)); }));
  auto req = http->requests().at(0);
  EXPECT_EQ(req.method, "PUT");
  EXPECT_EQ(req.url, "https://s3.eu-west-1.amazonaws.com/ingestd-docs");
  EXPECT_NE(req.body.find("<LocationConstraint>eu-west-1</LocationConstraint>"), std::string::npos);
  auto o = test_options(true);
  o.region = "us-east-1";
  s3_store us{http, o};
  ASSERT_TRUE(await<void>([&](auto cb) { us.create_bucket(std::move(cb)); }));
  EXPECT_TRUE(http->requests().at(1).body.empty());
}

TEST(s3_requests, create_bucket_that_we_already_own_succeeds) {
  auto http = answering(s3_error(409, "BucketAlreadyOwnedByYou", "yours"));
  s3_store store{http, test_options()};
  EXPECT_TRUE(await<void>([&](auto cb) { store.create_bucket(std::move(cb)); }));
  auto taken = answering(s3_error(409, "BucketAlreadyExists", "someone else's"));
  s3_store other{taken, test_options()};
  auto r = await<void>([&](auto cb) { other.create_bucket(std::move(cb)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "s3.BucketAlreadyExists");
  EXPECT_TRUE(r.error().permanent());
}

TEST(s3_requests, list_follows_continuation_tokens) {
  auto http
      = std::make_shared<fake_http_client>([](const http_request& req) -> result<http_response> {
          if (req.url.find("continuation-token=") == std::string::npos) {
            EXPECT_NE(req.url.find("list-type=2"), std::string::npos);
            EXPECT_NE(req.url.find("prefix=docs%2F"), std::string::npos) << req.url;
            return make_response(200, "<ListBucketResult><IsTruncated>true</IsTruncated>"
                                      "<Contents><Key>docs/a&amp;b</Key></Contents>"
                                      "<Contents><Key>docs/c</Key></Contents>"
                                      "<NextContinuationToken>tok/1=</NextContinuationToken>"
                                      "</ListBucketResult>");
          }
          EXPECT_NE(req.url.find("continuation-token=tok%2F1%3D"), std::string::npos) << req.url;
          return make_response(200, "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                    "<Contents><Key>docs/d</Key></Contents></ListBucketResult>");
        });
  s3_store store{http, test_options()};
  auto r = await<std::vector<std::string>>([&](auto cb) { store.list("docs/", std::move(cb)); });
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(*r, (std::vector<std::string>{"docs/a&b", "docs/c", "docs/d"}));
}

// ---- size limit ---------------------------------------------------------------------------------

TEST(s3_limits, content_length_over_the_limit_is_too_large) {
  auto http = answering(make_response(200, "0123456789", {{"Content-Length", "10"}}));
  s3_store store{http, test_options()};
  auto r = await<std::string>([&](auto cb) { store.get("k", 9, std::move(cb)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "storage.too_large");
  EXPECT_TRUE(r.error().permanent());
  auto exact = await<std::string>([&](auto cb) { store.get("k", 10, std::move(cb)); });
  ASSERT_TRUE(exact);
  EXPECT_EQ(*exact, "0123456789");
}

TEST(s3_limits, body_over_the_limit_without_content_length_is_too_large) {
  auto http = answering(make_response(200, std::string(100, 'x')));
  s3_store store{http, test_options()};
  auto r = await<std::string>([&](auto cb) { store.get("k", 99, std::move(cb)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "storage.too_large");
}

TEST(s3_limits, engine_limit_becomes_too_large) {
  auto http = std::make_shared<fake_http_client>([](const http_request&) -> result<http_response> {
    return error::make_permanent("http.too_large", "response over the limit");
  });
  s3_store store{http, test_options()};
  auto r = await<std::string>([&](auto cb) { store.get("k", 1 << 20, std::move(cb)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "storage.too_large");
  EXPECT_TRUE(r.error().permanent());
  EXPECT_EQ(http->requests().at(0).max_response_bytes, size_t{1} << 20);
}

// ---- errors -------------------------------------------------------------------------------------

TEST(s3_errors, classification) {
  struct row {
    http_response response;
    const char* code;
    bool transient;
  };
  std::vector<row> rows{
      {s3_error(404, "NoSuchKey", "The specified key does not exist."), "storage.not_found", false},
      {make_response(404), "storage.not_found", false},
      {s3_error(404, "NoSuchBucket", "The specified bucket does not exist"), "s3.NoSuchBucket",
       false},
      {s3_error(503, "SlowDown", "Please reduce your request rate."), "s3.SlowDown", true},
      {s3_error(500, "InternalError", "We encountered an internal error."), "s3.InternalError",
       true},
      {s3_error(400, "RequestTimeout", "Your socket connection was idle."), "s3.RequestTimeout",
       true},
      {s3_error(403, "AccessDenied", "Access Denied"), "s3.AccessDenied", false},
      {s3_error(403, "SignatureDoesNotMatch", "The signature does not match"),
       "s3.SignatureDoesNotMatch", false},
      {s3_error(403, "RequestTimeTooSkewed", "The difference is too large"),
       "s3.RequestTimeTooSkewed", false},
      {s3_error(301, "PermanentRedirect", "Use the right endpoint"), "s3.PermanentRedirect", false},
      {make_response(502, "<html>Bad Gateway</html>"), "s3.http_502", true},
      {make_response(429), "s3.http_429", true},
      {make_response(403), "s3.http_403", false},
  };
  for (auto& r : rows) {
    auto http = answering(r.response);
    s3_store store{http, test_options()};
    auto got = await<std::string>([&](auto cb) { store.get("k", 100, std::move(cb)); });
    ASSERT_FALSE(got) << r.code;
    EXPECT_EQ(got.error().code, r.code);
    EXPECT_EQ(got.error().transient(), r.transient) << r.code;
  }
}

TEST(s3_errors, xml_messages_are_decoded_and_retry_after_kept) {
  auto e = s3::parse_error(s3_error(503, "SlowDown", "a &lt;b&gt; &amp; &quot;c&quot; &#233;"),
                           true, "");
  EXPECT_EQ(e.message, "a <b> & \"c\" \xC3\xA9");
  auto r = make_response(503, "", {{"Retry-After", "3"}});
  EXPECT_EQ(s3::parse_error(r, true, "").retry_after_ms, 3000);
  // Seconds * 1000 overflowed int64_t; the wait is clamped to max_retry_after_ms.
  auto huge = make_response(503, "", {{"Retry-After", "9223372036854775807"}});
  EXPECT_EQ(s3::parse_error(huge, true, "").retry_after_ms, max_retry_after_ms);
}

TEST(s3_errors, character_references_xml_forbids_are_kept_as_written) {
  // &#0; decoded to a NUL byte and &#xD800; to a UTF-8-encoded surrogate: neither is text.
  EXPECT_EQ(s3::xml_text("<Message>a&#0;b&#xD800;c&#x10FFFF;</Message>", "Message"),
            "a&#0;b&#xD800;c\xF4\x8F\xBF\xBF");
}

TEST(s3_errors, exists_reads_head_statuses) {
  struct row {
    long status;
    bool ok;
    bool value;
    bool transient;
  };
  for (auto [status, ok, value, transient] : std::vector<row>{{200, true, true, false},
                                                              {404, true, false, false},
                                                              {403, false, false, false},
                                                              {503, false, false, true}}) {
    auto http = answering(make_response(status));
    s3_store store{http, test_options()};
    auto r = await<bool>([&](auto cb) { store.exists("k", std::move(cb)); });
    ASSERT_EQ(r.ok(), ok) << status;
    if (ok)
      EXPECT_EQ(*r, value) << status;
    else
      EXPECT_EQ(r.error().transient(), transient) << status;
    EXPECT_EQ(http->requests().at(0).method, "HEAD");
  }
}

TEST(s3_errors, put_to_a_missing_bucket_is_not_a_missing_object) {
  auto http = answering(s3_error(404, "NoSuchBucket", "no bucket"));
  s3_store store{http, test_options()};
  auto r = await<void>([&](auto cb) { store.put("k", "x", "text/plain", std::move(cb)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "s3.NoSuchBucket");
  EXPECT_TRUE(r.error().permanent());
}

TEST(s3_errors, transport_errors_pass_through) {
  auto http = std::make_shared<fake_http_client>([](const http_request&) -> result<http_response> {
    return error::make_transient("http.connect", "refused");
  });
  s3_store store{http, test_options()};
  auto r = await<std::string>([&](auto cb) { store.get("k", 10, std::move(cb)); });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "http.connect");
  EXPECT_TRUE(r.error().transient());
}

TEST(s3_lifetime, store_destroyed_while_a_call_is_in_flight_still_answers_it) {
  std::promise<void> gate;
  auto opened = gate.get_future().share();
  auto http
      = std::make_shared<fake_http_client>([opened](const http_request&) -> result<http_response> {
          opened.wait();
          return make_response(200, "late");
        });
  auto store = std::make_unique<s3_store>(http, test_options());
  auto r = await<std::string>([&](auto cb) {
    store->get("k", 10, std::move(cb));
    store.reset();
    gate.set_value();
  });
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "late");
}
