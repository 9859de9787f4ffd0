// The hashing and encoding helpers of adapters/aws against known vectors (FIPS 180-2, RFC 4231,
// RFC 1321, RFC 4648) and the URL splitter on the shapes the clients use.
#include <gtest/gtest.h>

#include "adapters/aws/encoding.hpp"

namespace ingestd::aws {
namespace {

TEST(encoding, sha256_hmac_md5_known_vectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex_encode(hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(md5_hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
}

TEST(encoding, base64_rfc4648) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(encoding, uri_encode) {
  EXPECT_EQ(uri_encode("a-b_c.d~e f/g+h*"), "a-b_c.d~e%20f%2Fg%2Bh%2A");
  EXPECT_EQ(uri_encode("a b/c", true), "a%20b/c");
  EXPECT_EQ(uri_encode("\xc3\xa9"), "%C3%A9");
}

TEST(encoding, parse_url_shapes) {
  url_parts u;
  ASSERT_TRUE(parse_url("http://127.0.0.1:54566/000000000000/q1?x=1#frag", u));
  EXPECT_EQ(u.scheme, "http");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 54566);
  EXPECT_EQ(u.path, "/000000000000/q1");
  EXPECT_EQ(u.query, "x=1");
  EXPECT_EQ(u.host_header(), "127.0.0.1:54566");
  ASSERT_TRUE(parse_url("HTTPS://Bucket.S3.amazonaws.com", u));
  EXPECT_EQ(u.host, "bucket.s3.amazonaws.com");
  EXPECT_EQ(u.path, "/");
  EXPECT_EQ(u.port, 443);
  EXPECT_EQ(u.host_header(), "bucket.s3.amazonaws.com");
  ASSERT_TRUE(parse_url("https://host:443/x", u));
  EXPECT_EQ(u.host_header(), "host");
  ASSERT_TRUE(parse_url("http://[::1]:8080?a", u));
  EXPECT_EQ(u.host, "[::1]");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.query, "a");
  EXPECT_FALSE(parse_url("ftp://x/", u));
  EXPECT_FALSE(parse_url("http://", u));
  EXPECT_FALSE(parse_url("http://h:99999/", u));
  EXPECT_FALSE(parse_url("/relative", u));
}

} // namespace
} // namespace ingestd::aws
