// What the server decides on a request's headers alone, the shared secret checks, the attempt
// window of sign-in throttling, and the review desk's bounded sessions.
#include <gtest/gtest.h>

#include "adapters/http_server/checks.hpp"
#include "adapters/http_server/credentials.hpp"
#include "review/review_access.hpp"

using namespace ingestd;
using namespace ingestd::http_server;
using namespace std::chrono_literals;

namespace {

header_map headers(std::initializer_list<std::pair<std::string, std::string>> h) {
  header_map out;
  for (auto& [k, v] : h)
    out.emplace(k, v);
  return out;
}

int status_of(std::string_view method, const header_map& h, size_t max_body = 1000,
              std::vector<std::string> names = {}) {
  auto r = check_head(method, h, head_rules{std::move(names), max_body});
  return r ? r->status : 0;
}

} // namespace

TEST(host_allowed, answers_loopback_names_ip_literals_and_configured_names_only) {
  std::vector<std::string> none;
  for (const char* ok : {"127.0.0.1:9464", "localhost", "LOCALHOST:80", "[::1]:9464", "10.2.3.4",
                         "desk.localhost", "localhost.", ""})
    EXPECT_TRUE(host_allowed(ok, none)) << ok;
  for (const char* bad : {"attacker.example", "attacker.example:9464", "127.0.0.1.nip.io",
                          "localhost.attacker.example", "2130706433", "[::1", "a b", "x:y"})
    EXPECT_FALSE(host_allowed(bad, none)) << bad;
  EXPECT_TRUE(host_allowed("Ingestd.Internal:8080", {"ingestd.internal"}));
  EXPECT_TRUE(host_allowed("anything.example", {"*"}));
}

TEST(origin_allowed, is_the_request_own_origin_or_a_configured_name) {
  EXPECT_TRUE(origin_allowed("http://127.0.0.1:9464", "127.0.0.1:9464", {}));
  EXPECT_TRUE(origin_allowed("https://desk.example", "desk.example", {}));
  EXPECT_TRUE(origin_allowed("http://desk.example", "desk.example:80", {}));
  EXPECT_FALSE(origin_allowed("http://127.0.0.1:8080", "127.0.0.1:9464", {}));
  EXPECT_FALSE(origin_allowed("http://attacker.example", "127.0.0.1:9464", {}));
  EXPECT_FALSE(origin_allowed("null", "127.0.0.1:9464", {}));
  EXPECT_FALSE(origin_allowed("file://", "127.0.0.1:9464", {}));
  EXPECT_TRUE(origin_allowed("https://desk.example", "10.0.0.7:9464", {"desk.example"}));
  EXPECT_FALSE(origin_allowed("https://other.example", "10.0.0.7:9464", {"*"}));
}

TEST(check_head, refuses_on_the_headers_in_order) {
  auto h = [](std::initializer_list<std::pair<std::string, std::string>> extra) {
    auto out = headers({{"Host", "127.0.0.1:1"}});
    for (auto& [k, v] : extra)
      out.emplace(k, v);
    return out;
  };
  EXPECT_EQ(status_of("GET", h({})), 0);
  EXPECT_EQ(status_of("GET", headers({{"Host", "evil.example"}})), 421);
  EXPECT_EQ(status_of("GET", headers({{"Host", "127.0.0.1"}, {"Host", "evil.example"}})), 421);
  EXPECT_EQ(status_of("POST", h({{"Transfer-Encoding", "chunked"}})), 0);
  EXPECT_EQ(status_of("POST", h({{"Transfer-Encoding", "gzip, chunked"}})), 415);
  EXPECT_EQ(status_of("POST", h({{"Transfer-Encoding", "foo"}})), 501);
  EXPECT_EQ(status_of("POST", h({{"Transfer-Encoding", "chunked"}, {"Content-Length", "5"}})), 400);
  EXPECT_EQ(status_of("POST", h({{"Transfer-Encoding", "chunked, chunked"}})), 400);
  EXPECT_EQ(status_of("POST", h({{"Content-Length", "5"}, {"Content-Length", "6"}})), 400);
  EXPECT_EQ(status_of("POST", h({{"Content-Length", "-1"}})), 400);
  EXPECT_EQ(status_of("POST", h({{"Content-Length", "99999999999999999999"}})), 400);
  for (const char* coding : {"gzip", "br", "deflate", "x-gzip", "identity, gzip", "zstd"})
    EXPECT_EQ(status_of("POST", h({{"Content-Encoding", coding}})), 415) << coding;
  EXPECT_EQ(status_of("POST", h({{"Content-Encoding", "identity"}})), 0);
  EXPECT_EQ(status_of("POST", h({{"Origin", "http://evil.example"}})), 403);
  EXPECT_EQ(status_of("DELETE", h({{"Origin", "http://evil.example"}})), 403);
  EXPECT_EQ(status_of("GET", h({{"Origin", "http://evil.example"}})), 0);
  EXPECT_EQ(status_of("POST", h({{"Origin", "http://127.0.0.1:1"}})), 0);
  EXPECT_EQ(status_of("POST", h({{"Content-Length", "1000"}})), 0);
  EXPECT_EQ(status_of("POST", h({{"Content-Length", "1001"}})), 413);
  EXPECT_EQ(status_of("POST", h({{"Content-Length", "1500000000"}})), 413);
  body_framing f;
  ASSERT_FALSE(check_head("POST", h({{"Content-Length", "12"}}), head_rules{{}, 100}, &f));
  EXPECT_EQ(f.content_length, 12U);
  EXPECT_FALSE(f.chunked);
}

TEST(secrets, compare_in_constant_time_and_short_tokens_are_named) {
  EXPECT_TRUE(secrets_equal("Bearer abc", "Bearer abc"));
  EXPECT_FALSE(secrets_equal("Bearer abd", "Bearer abc"));
  EXPECT_FALSE(secrets_equal("Bearer ab", "Bearer abc"));
  EXPECT_FALSE(secrets_equal("", "x"));
  EXPECT_FALSE(weak_token("INGESTD_INTAKE_TOKEN", ""));
  EXPECT_FALSE(weak_token("INGESTD_INTAKE_TOKEN", std::string(min_token_length, 'a')));
  auto weak = weak_token("INGESTD_ADMIN_TOKEN", "change-me");
  ASSERT_TRUE(weak);
  EXPECT_NE(weak->find("INGESTD_ADMIN_TOKEN"), std::string::npos);
  EXPECT_NE(weak->find("16"), std::string::npos);
}

TEST(attempt_window, blocks_the_sixth_attempt_within_the_window) {
  attempt_window w{5, 60s};
  auto t0 = attempt_window::clock::time_point{} + 1000s;
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(w.blocked_for("addr:1", t0 + std::chrono::seconds{i})) << i;
    w.record("addr:1", t0 + std::chrono::seconds{i});
  }
  auto wait = w.blocked_for("addr:1", t0 + 10s);
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, 50s);
  EXPECT_FALSE(w.blocked_for("addr:2", t0 + 10s));
  // The first attempt leaves the window: one more may try.
  EXPECT_FALSE(w.blocked_for("addr:1", t0 + 60s));
  w.clear("addr:1");
  EXPECT_FALSE(w.blocked_for("addr:1", t0 + 10s));
}

TEST(attempt_window, keeps_a_bounded_number_of_keys) {
  attempt_window w{5, 60s, 100};
  auto t0 = attempt_window::clock::time_point{} + 1000s;
  for (int i = 0; i < 1000; ++i)
    w.record("name:" + std::to_string(i), t0 + std::chrono::milliseconds{i});
  EXPECT_LE(w.keys(), 100U);
  // The most recent keys are kept.
  for (int i = 0; i < 5; ++i)
    w.record("name:999", t0 + 2s);
  EXPECT_TRUE(w.blocked_for("name:999", t0 + 3s));
}

TEST(review_sessions, are_bounded_in_count_and_lifetime) {
  review_sessions sessions{std::chrono::minutes{60}, 3};
  std::vector<std::string> ids;
  ids.reserve(5);
  for (int i = 0; i < 5; ++i)
    ids.push_back(sessions.open("r" + std::to_string(i), {}));
  EXPECT_EQ(sessions.count(), 3U);
  // The oldest went first.
  EXPECT_FALSE(sessions.find(ids[0]));
  EXPECT_FALSE(sessions.find(ids[1]));
  EXPECT_TRUE(sessions.find(ids[4]));
  review_sessions short_lived{std::chrono::minutes{0}, 3};
  auto id = short_lived.open("r", {});
  EXPECT_FALSE(short_lived.find(id));
  EXPECT_EQ(short_lived.count(), 0U);
}

TEST(tenant_tokens, know_their_shortest_token) {
  auto tenant = uuid::v7();
  auto t = http_server::tenant_tokens::parse("short,a-much-longer-token", tenant, "T");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->shortest(), 5U);
  auto open = http_server::tenant_tokens::parse("", tenant, "T");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->shortest(), 0U);
}
