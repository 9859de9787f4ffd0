// The S3 store against the fauxqs emulator over the real HTTP engine: put/get/head, missing and
// oversized objects, both addressing styles, and interoperation with boto3.
#include <string>

#include <gtest/gtest.h>

#include "adapters/aws/encoding.hpp"
#include "tests/support/await.hpp"
#include "tests/support/fauxqs/fauxqs_fixture.hpp"

using namespace ingestd;
using ingestd::test::await;
using ingestd::test::run_python;

namespace {

std::string all_bytes() {
  std::string out;
  for (int round = 0; round < 4; ++round)
    for (int c = 0; c < 256; ++c)
      out.push_back(static_cast<char>(c));
  return out;
}

result<std::string> get(object_store& s, const std::string& key, size_t max = 1 << 20) {
  return await<std::string>([&](auto cb) { s.get(key, max, std::move(cb)); });
}

result<void> put(object_store& s, const std::string& key, std::string bytes,
                 std::string type = "application/octet-stream") {
  return await<void>(
      [&](auto cb) { s.put(key, std::move(bytes), std::move(type), std::move(cb)); });
}

result<bool> exists(object_store& s, const std::string& key) {
  return await<bool>([&](auto cb) { s.exists(key, std::move(cb)); });
}

} // namespace

class s3_fauxqs : public ingestd::test::fauxqs_test {};

TEST_F(s3_fauxqs, put_get_head_round_trip) {
  auto store = make_bucket();
  ASSERT_TRUE(store);
  auto key = storage_keys::document("0190a1b2-0000-7000-8000-00000000000a",
                                    "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "pdf");
  auto e = exists(*store, key);
  ASSERT_TRUE(e) << e.error().describe();
  EXPECT_FALSE(*e);
  auto bytes = all_bytes();
  auto p = put(*store, key, bytes, "application/pdf");
  ASSERT_TRUE(p) << p.error().describe();
  e = exists(*store, key);
  ASSERT_TRUE(e);
  EXPECT_TRUE(*e);
  auto g = get(*store, key);
  ASSERT_TRUE(g) << g.error().describe();
  EXPECT_EQ(*g, bytes);
  // Overwrite: readers see the whole new object.
  ASSERT_TRUE(put(*store, key, "second version"));
  g = get(*store, key);
  ASSERT_TRUE(g);
  EXPECT_EQ(*g, "second version");
  // Empty objects are objects.
  ASSERT_TRUE(put(*store, "empty", ""));
  g = get(*store, "empty", 0);
  ASSERT_TRUE(g) << g.error().describe();
  EXPECT_EQ(*g, "");
}

TEST_F(s3_fauxqs, keys_with_spaces_unicode_and_reserved_characters) {
  auto store = make_bucket();
  ASSERT_TRUE(store);
  for (std::string key :
       {"ingestions/a b/transcription-output.json", "docs/\xC3\xBC\xE2\x82\xAC.pdf",
        "docs/plus+equals=percent%25&amp;.txt", "docs/(1)~[x]!'*.txt"}) {
    auto p = put(*store, key, "body of " + key, "text/plain");
    ASSERT_TRUE(p) << key << ": " << p.error().describe();
    auto g = get(*store, key);
    ASSERT_TRUE(g) << key << ": " << g.error().describe();
    EXPECT_EQ(*g, "body of " + key);
    auto e = exists(*store, key);
    ASSERT_TRUE(e);
    EXPECT_TRUE(*e) << key;
  }
  auto keys
      = await<std::vector<std::string>>([&](auto cb) { store->list("docs/", std::move(cb)); });
  ASSERT_TRUE(keys) << keys.error().describe();
  EXPECT_EQ(keys->size(), 3u);
}

TEST_F(s3_fauxqs, missing_object_is_permanent_not_found) {
  auto store = make_bucket();
  ASSERT_TRUE(store);
  auto g = get(*store, "documents/nothing.pdf");
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, "storage.not_found");
  EXPECT_TRUE(g.error().permanent());
}

TEST_F(s3_fauxqs, object_over_the_limit_is_permanent_too_large) {
  auto store = make_bucket();
  ASSERT_TRUE(store);
  ASSERT_TRUE(put(*store, "small-limit", std::string(1000, 'x')));
  auto g = get(*store, "small-limit", 999);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().code, "storage.too_large");
  EXPECT_TRUE(g.error().permanent());
  auto exact = get(*store, "small-limit", 1000);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->size(), 1000u);
  // Over the engine's own limit too (the body is never held).
  ASSERT_TRUE(put(*store, "big", std::string(size_t{300} * 1024, 'y')));
  auto big = get(*store, "big", size_t{200} * 1024);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, "storage.too_large");
  EXPECT_TRUE(big.error().permanent());
}

TEST_F(s3_fauxqs, missing_bucket_is_a_permanent_configuration_error) {
  s3_store store{engine_, store_options(ingestd::test::unique_bucket_name("nob"), true)};
  auto p = put(store, "k", "x");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, "s3.NoSuchBucket");
  EXPECT_TRUE(p.error().permanent());
}

TEST_F(s3_fauxqs, invalid_key_is_refused) {
  auto store = make_bucket();
  ASSERT_TRUE(store);
  auto p = put(*store, "../escape", "x");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().code, "storage.bad_key");
}

TEST_F(s3_fauxqs, virtual_host_addressing) {
  // fauxqs takes the bucket from the Host header; libcurl resolves *.localhost to loopback.
  ingestd::aws::url_parts parts;
  ASSERT_TRUE(ingestd::aws::parse_url(endpoint_, parts));
  ASSERT_TRUE(parts.host == "127.0.0.1" || parts.host == "localhost")
      << "virtual-host test needs the emulator on loopback, not " << parts.host;
  std::string bucket;
  auto path_store = make_bucket(true, &bucket);
  ASSERT_TRUE(path_store);
  auto opts = store_options(bucket, false);
  opts.endpoint = parts.scheme + "://s3.localhost:" + std::to_string(parts.port);
  s3_store vhost{engine_, opts};
  auto p = put(vhost, "ingestions/x/preprocessed.png", "png bytes", "image/png");
  ASSERT_TRUE(p) << p.error().describe();
  auto via_path = get(*path_store, "ingestions/x/preprocessed.png");
  ASSERT_TRUE(via_path) << via_path.error().describe();
  EXPECT_EQ(*via_path, "png bytes");
  auto via_vhost = get(vhost, "ingestions/x/preprocessed.png");
  ASSERT_TRUE(via_vhost) << via_vhost.error().describe();
  EXPECT_EQ(*via_vhost, "png bytes");
  auto e = exists(vhost, "ingestions/x/nothing");
  ASSERT_TRUE(e);
  EXPECT_FALSE(*e);
}

TEST_F(s3_fauxqs, interop_object_put_by_boto3_is_read_by_ingestd) {
  std::string bucket;
  auto store = make_bucket(true, &bucket);
  ASSERT_TRUE(store);
  auto r = run_python(boto3_preamble() + R"(
data = bytes(range(256)) * 3
s3.put_object(Bucket=sys.argv[1], Key='documents/from boto3 \u00fc.bin', Body=data,
              ContentType='application/pdf')
)",
                      {bucket});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto g = get(*store, "documents/from boto3 \xC3\xBC.bin");
  ASSERT_TRUE(g) << g.error().describe();
  std::string expected;
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 256; ++c)
      expected.push_back(static_cast<char>(c));
  EXPECT_EQ(*g, expected);
  auto e = exists(*store, "documents/from boto3 \xC3\xBC.bin");
  ASSERT_TRUE(e);
  EXPECT_TRUE(*e);
}

TEST_F(s3_fauxqs, interop_object_put_by_ingestd_is_read_by_boto3) {
  std::string bucket;
  auto store = make_bucket(true, &bucket);
  ASSERT_TRUE(store);
  auto bytes = all_bytes();
  ASSERT_TRUE(put(*store, "ingestions/i-1/transcription-output.json", bytes, "application/json"));
  auto r = run_python(boto3_preamble() + R"(
o = s3.get_object(Bucket=sys.argv[1], Key=sys.argv[2])
body = o['Body'].read()
print(o['ContentType'], o['ContentLength'])
import hashlib
print(hashlib.sha256(body).hexdigest())
h = s3.head_object(Bucket=sys.argv[1], Key=sys.argv[2])
print(h['ContentLength'])
)",
                      {bucket, "ingestions/i-1/transcription-output.json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "application/json " + std::to_string(bytes.size()) + "\n"
                          + ingestd::aws::sha256_hex(bytes) + "\n" + std::to_string(bytes.size())
                          + "\n");
}
