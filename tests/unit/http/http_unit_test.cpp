// The HTTP port's helpers and the engine's behaviour on requests that never reach a server:
// malformed URLs, refused connections, cancelling unknown ids, destroying an idle engine.
#include <gtest/gtest.h>

#include "adapters/http/curl_engine.hpp"
#include "tests/support/http/http_call.hpp"
#include "tests/support/http/local_http_server.hpp"

namespace ingestd {
namespace {

using namespace std::chrono_literals;

TEST(http_response, header_lookup_is_case_insensitive_and_returns_the_first) {
  http_response r;
  r.headers = {{"content-type", "text/plain"}, {"x-a", "1"}, {"x-a", "2"}};
  EXPECT_EQ(r.header("Content-Type"), "text/plain");
  EXPECT_EQ(r.header("X-A"), "1");
  EXPECT_EQ(r.header("missing"), "");
}

TEST(http_response, retry_after_seconds_are_read_strictly_and_clamped) {
  EXPECT_EQ(parse_retry_after_seconds("7"), 7000);
  EXPECT_EQ(parse_retry_after_seconds(" 0 "), 0);
  EXPECT_EQ(parse_retry_after_seconds(""), -1);
  EXPECT_EQ(parse_retry_after_seconds("-1"), -1);
  EXPECT_EQ(parse_retry_after_seconds("1.5"), -1);
  EXPECT_EQ(parse_retry_after_seconds("7abc"), -1);
  EXPECT_EQ(parse_retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT"), -1);
  // Seconds * 1000 overflowed int64_t for a huge value.
  EXPECT_EQ(parse_retry_after_seconds("9223372036854775807"), max_retry_after_ms);
  EXPECT_EQ(parse_retry_after_seconds(std::string(400, '9')), max_retry_after_ms);
  EXPECT_EQ(parse_retry_after_seconds("43200"), max_retry_after_ms);
  EXPECT_EQ(parse_retry_after_seconds("43201"), max_retry_after_ms);
  EXPECT_EQ(parse_retry_after_seconds("43199"), max_retry_after_ms - 1000);
}

error fail_with(curl_engine& engine, std::string url) {
  http_request r;
  r.url = std::move(url);
  auto out = test::call(engine, std::move(r), 10s);
  if (!out) {
    ADD_FAILURE() << "no callback";
    return {};
  }
  EXPECT_EQ(out->calls, 1);
  EXPECT_EQ(out->thread, engine.thread_id());
  if (out->res->ok()) {
    ADD_FAILURE() << "expected an error";
    return {};
  }
  return out->res->error();
}

TEST(curl_engine_unit, malformed_or_unsupported_url_is_permanent) {
  curl_engine engine;
  auto e = fail_with(engine, "http://");
  EXPECT_EQ(e.code, "http.invalid_url") << e.describe();
  EXPECT_TRUE(e.permanent());
  auto f = fail_with(engine, "ftp://127.0.0.1/file");
  EXPECT_EQ(f.code, "http.invalid_url") << f.describe();
  EXPECT_TRUE(f.permanent());
}

TEST(curl_engine_unit, header_injection_is_refused_as_permanent) {
  curl_engine engine;
  for (auto [name, value] : {std::pair<std::string, std::string>{"X-A", "v\r\nX-Injected: 1"},
                             {"X-B\n", "v"},
                             {"", "v"}}) {
    http_request r;
    r.url = "http://127.0.0.1:" + std::to_string(test::unused_loopback_port());
    r.headers = {{name, value}};
    auto out = test::call(engine, std::move(r), 10s);
    ASSERT_TRUE(out.has_value());
    ASSERT_FALSE(out->res->ok());
    EXPECT_EQ(out->res->error().code, "http.invalid_request");
    EXPECT_TRUE(out->res->error().permanent());
  }
}

TEST(curl_engine_unit, refused_connection_is_transient_http_connect) {
  curl_engine engine;
  auto e = fail_with(engine, "http://127.0.0.1:" + std::to_string(test::unused_loopback_port()));
  EXPECT_EQ(e.code, "http.connect") << e.describe();
  EXPECT_TRUE(e.transient());
  EXPECT_NE(e.message.find("127.0.0.1"), std::string::npos);
}

TEST(curl_engine_unit, cancel_of_unknown_id_and_idle_destruction_are_harmless) {
  auto engine = std::make_unique<curl_engine>();
  engine->cancel(12345);
  EXPECT_NE(engine->thread_id(), std::this_thread::get_id());
  EXPECT_EQ(engine->stats().in_flight, 0u);
  engine.reset();
}

} // namespace
} // namespace ingestd
