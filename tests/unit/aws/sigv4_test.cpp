// SigV4 against known results: the aws-sig-v4-test-suite cases and AWS documentation examples,
// checked byte for byte (canonical request, string to sign).
#include <gtest/gtest.h>

#include <ctime>

#include "adapters/aws/encoding.hpp"
#include "adapters/aws/sigv4.hpp"

namespace ingestd::aws {
namespace {

// The test suite's credentials and time.
aws_credentials suite_credentials() {
  return {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", "us-east-1"};
}

std::chrono::system_clock::time_point utc(int y, int mo, int d, int h, int mi, int s) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

http_request suite_request(std::string method) {
  http_request r;
  r.method = std::move(method);
  r.url = "https://example.amazonaws.com/";
  r.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}};
  return r;
}

const std::string empty_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(sigv4, get_vanilla_canonical_request_string_to_sign_and_signature) {
  auto sig
      = compute_signature(suite_request("GET"), suite_credentials(), service_signing("service"));
  ASSERT_TRUE(sig.ok()) << sig.error().describe();
  EXPECT_EQ(sig->canonical_request, "GET\n/\n\nhost:example.amazonaws.com\n"
                                    "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
                                        + empty_hash);
  EXPECT_EQ(sha256_hex(sig->canonical_request),
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(sig->string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  EXPECT_EQ(sig->signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(sig->authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(sigv4, sign_request_adds_date_and_authorization_like_the_suite) {
  http_request r;
  r.method = "GET";
  r.url = "https://example.amazonaws.com/";
  auto opts = service_signing("service");
  opts.time = utc(2015, 8, 30, 12, 36, 0);
  auto sig = sign_request(r, suite_credentials(), opts);
  ASSERT_TRUE(sig.ok()) << sig.error().describe();
  EXPECT_EQ(sig->signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  http_response view{0, r.headers, ""};
  EXPECT_EQ(view.header("x-amz-date"), "20150830T123600Z");
  EXPECT_EQ(view.header("authorization"), sig->authorization);
  // Signing again (a retry) replaces, never duplicates.
  ASSERT_TRUE(sign_request(r, suite_credentials(), opts).ok());
  EXPECT_EQ(r.headers.size(), 2u);
}

TEST(sigv4, post_vanilla) {
  auto sig
      = compute_signature(suite_request("POST"), suite_credentials(), service_signing("service"));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->signature, "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

TEST(sigv4, post_x_www_form_urlencoded) {
  auto r = suite_request("POST");
  r.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  r.body = "Param1=value1";
  auto sig = compute_signature(r, suite_credentials(), service_signing("service"));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->signed_headers, "content-type;host;x-amz-date");
  EXPECT_EQ(sig->canonical_request, "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\n"
                                    "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                                    "content-type;host;x-amz-date\n"
                                        + sha256_hex("Param1=value1"));
  EXPECT_EQ(sig->signature, "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
}

// The suite's post-sts-header-before case: the session token is a signed header.
TEST(sigv4, session_token_is_a_signed_header) {
  auto creds = suite_credentials();
  creds.session_token = "AQoDYXdzEPT//////////"
                        "wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfI"
                        "eoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/"
                        "kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7W"
                        "Z0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+"
                        "xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8"
                        "FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";
  http_request r;
  r.method = "POST";
  r.url = "https://example.amazonaws.com/";
  auto opts = service_signing("service");
  opts.time = utc(2015, 8, 30, 12, 36, 0);
  auto sig = sign_request(r, creds, opts);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->signed_headers, "host;x-amz-date;x-amz-security-token");
  EXPECT_NE(sig->canonical_request.find("\nx-amz-security-token:" + creds.session_token + "\n"),
            std::string::npos);
  EXPECT_EQ(sig->signature, "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead");
  http_response view{0, r.headers, ""};
  EXPECT_EQ(view.header("x-amz-security-token"), creds.session_token);
}

TEST(sigv4, iam_list_users_documentation_example) {
  http_request r;
  r.method = "GET";
  r.url = "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08";
  r.headers = {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
               {"X-Amz-Date", "20150830T123600Z"}};
  auto sig = compute_signature(r, suite_credentials(), service_signing("iam"));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->canonical_request,
            "GET\n/\nAction=ListUsers&Version=2010-05-08\n"
            "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
            "host:iam.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "content-type;host;x-amz-date\n"
                + empty_hash);
  EXPECT_EQ(sha256_hex(sig->canonical_request),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
  EXPECT_EQ(sig->signature, "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

// S3 documentation examples (credentials AKIAIOSFODNN7EXAMPLE, 2013-05-24, bucket examplebucket).
aws_credentials s3_doc_credentials() {
  return {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", "us-east-1"};
}

TEST(sigv4, s3_get_object_with_content_sha256_header) {
  http_request r;
  r.method = "GET";
  r.url = "https://examplebucket.s3.amazonaws.com/test.txt";
  r.headers = {{"Range", "bytes=0-9"}};
  auto opts = s3_signing();
  opts.time = utc(2013, 5, 24, 0, 0, 0);
  auto sig = sign_request(r, s3_doc_credentials(), opts);
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->signed_headers, "host;range;x-amz-content-sha256;x-amz-date");
  http_response view{0, r.headers, ""};
  EXPECT_EQ(view.header("x-amz-content-sha256"), empty_hash);
  EXPECT_EQ(sig->signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(sigv4, s3_unsigned_payload) {
  http_request r;
  r.method = "PUT";
  r.url = "https://examplebucket.s3.amazonaws.com/a.bin";
  r.body = "payload";
  auto opts = s3_signing();
  opts.payload = payload_signing::unsigned_payload;
  opts.time = utc(2013, 5, 24, 0, 0, 0);
  auto sig = sign_request(r, s3_doc_credentials(), opts);
  ASSERT_TRUE(sig.ok());
  http_response view{0, r.headers, ""};
  EXPECT_EQ(view.header("x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_TRUE(sig->canonical_request.ends_with("\nUNSIGNED-PAYLOAD"));
}

TEST(sigv4, s3_presigned_url_documentation_example) {
  auto opts = s3_signing();
  opts.time = utc(2013, 5, 24, 0, 0, 0);
  auto url = presign_url("GET", "https://examplebucket.s3.amazonaws.com/test.txt",
                         s3_doc_credentials(), opts, 86400);
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(*url,
            "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
            "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

TEST(sigv4, s3_path_is_encoded_once_other_services_twice) {
  http_request r;
  r.method = "GET";
  r.url = "http://127.0.0.1:54566/bucket/documents/a%20b+c.pdf";
  r.headers = {{"X-Amz-Date", "20150830T123600Z"}};
  auto s3 = compute_signature(r, suite_credentials(), s3_signing());
  ASSERT_TRUE(s3.ok());
  EXPECT_TRUE(s3->canonical_request.starts_with("GET\n/bucket/documents/a%20b%2Bc.pdf\n\n"
                                                "host:127.0.0.1:54566\n"))
      << s3->canonical_request;
  auto other = compute_signature(r, suite_credentials(), service_signing("service"));
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->canonical_request.starts_with("GET\n/bucket/documents/a%2520b%2Bc.pdf\n"))
      << other->canonical_request;
  // S3 keeps dot segments and double slashes; other services normalise them.
  r.url = "https://example.amazonaws.com/a/./b//../c/";
  EXPECT_TRUE(compute_signature(r, suite_credentials(), s3_signing())
                  ->canonical_request.starts_with("GET\n/a/./b//../c/\n"));
  EXPECT_TRUE(compute_signature(r, suite_credentials(), service_signing("service"))
                  ->canonical_request.starts_with("GET\n/a/c/\n"));
}

TEST(sigv4, query_is_sorted_and_encoded) {
  http_request r;
  r.url = "https://example.amazonaws.com/?b=2&a=z%2Fy&a=x y&c";
  r.headers = {{"X-Amz-Date", "20150830T123600Z"}};
  auto sig = compute_signature(r, suite_credentials(), service_signing("service"));
  ASSERT_TRUE(sig.ok());
  EXPECT_TRUE(sig->canonical_request.starts_with("GET\n/\na=x%20y&a=z%2Fy&b=2&c=\n"))
      << sig->canonical_request;
}

TEST(sigv4, header_values_are_trimmed_and_repeats_joined) {
  auto r = suite_request("GET");
  r.headers.emplace_back("My-Header1", "  a   b   c  ");
  r.headers.emplace_back("my-header2", "x");
  r.headers.emplace_back("My-Header2", "y");
  auto sig = compute_signature(r, suite_credentials(), service_signing("service"));
  ASSERT_TRUE(sig.ok());
  EXPECT_NE(sig->canonical_request.find("\nmy-header1:a b c\nmy-header2:x,y\n"), std::string::npos)
      << sig->canonical_request;
}

TEST(sigv4, bad_input_is_a_permanent_error) {
  http_request r;
  r.url = "not a url";
  auto opts = service_signing("sqs");
  auto sig = sign_request(r, suite_credentials(), opts);
  ASSERT_FALSE(sig.ok());
  EXPECT_TRUE(sig.error().permanent());
  EXPECT_EQ(sig.error().code, "aws.sigv4");
  r.url = "https://sqs.us-east-1.amazonaws.com/";
  auto no_region = suite_credentials();
  no_region.region.clear();
  auto sig2 = sign_request(r, no_region, opts);
  ASSERT_FALSE(sig2.ok());
  EXPECT_NE(sig2.error().message.find("region"), std::string::npos);
}

} // namespace
} // namespace ingestd::aws
