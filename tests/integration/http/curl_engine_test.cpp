// curl_engine against a real local HTTP server: round trips, statuses, error classes, size limit,
// cancellation, connection reuse, and the exactly-once callback contract at destruction.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "adapters/http/curl_engine.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/http/http_call.hpp"
#include "tests/support/http/local_http_server.hpp"

namespace ingestd {
namespace {

using namespace std::chrono_literals;
using test::call;
using test::http_collector;

class curl_engine_test : public ::testing::Test {
protected:
  static void SetUpTestSuite() { server_ = new test::local_http_server(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  http_request get(const std::string& path) {
    http_request r;
    r.url = server_->base_url() + path;
    return r;
  }

  http_response ok_response(http_request r) {
    auto out = call(engine_, std::move(r));
    if (!out) {
      ADD_FAILURE() << "no callback within the deadline";
      return {};
    }
    EXPECT_EQ(out->calls, 1);
    EXPECT_EQ(out->thread, engine_.thread_id());
    if (!out->res->ok()) {
      ADD_FAILURE() << out->res->error().describe();
      return {};
    }
    return std::move(out->res->value());
  }

  error failed(http_request r) {
    auto out = call(engine_, std::move(r));
    if (!out) {
      ADD_FAILURE() << "no callback within the deadline";
      return {};
    }
    EXPECT_EQ(out->calls, 1);
    if (out->res->ok()) {
      ADD_FAILURE() << "expected an error, got HTTP " << out->res->value().status;
      return {};
    }
    return out->res->error();
  }

  static test::local_http_server* server_;
  curl_engine engine_;
};

test::local_http_server* curl_engine_test::server_ = nullptr;

TEST_F(curl_engine_test, get_round_trips_request_headers_and_captures_response_headers) {
  auto r = get("/echo");
  r.headers = {{"X-Test", "value 1"}, {"Accept", "application/json"}};
  auto resp = ok_response(std::move(r));
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.header("x-method"), "GET");
  EXPECT_EQ(resp.header("x-got-x-test"), "value 1");
  EXPECT_EQ(resp.header("X-GOT-ACCEPT"), "application/json");
  EXPECT_EQ(resp.header("x-got-user-agent"), "ingestd/0.1");
  for (const auto& [name, value] : resp.headers)
    for (char c : name)
      EXPECT_FALSE(c >= 'A' && c <= 'Z') << name;
}

TEST_F(curl_engine_test, post_body_round_trips_byte_for_byte) {
  auto r = get("/echo");
  r.method = "POST";
  r.headers = {{"Content-Type", "application/octet-stream"}};
  for (int i = 0; i < 200'000; ++i)
    r.body.push_back(static_cast<char>(i * 7 % 256)); // includes NUL bytes
  auto body = r.body;
  auto resp = ok_response(std::move(r));
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.header("x-method"), "POST");
  EXPECT_EQ(resp.header("x-got-content-type"), "application/octet-stream");
  EXPECT_EQ(resp.header("x-got-content-length"), std::to_string(body.size()));
  EXPECT_EQ(resp.header("x-got-expect"), ""); // no 100-continue round trip
  EXPECT_TRUE(resp.body == body);
}

TEST_F(curl_engine_test, put_and_delete_with_and_without_body) {
  auto put = get("/echo");
  put.method = "PUT";
  auto resp = ok_response(put);
  EXPECT_EQ(resp.header("x-method"), "PUT");
  EXPECT_EQ(resp.header("x-got-content-length"), "0");
  EXPECT_EQ(resp.header("x-got-content-type"), ""); // curl's form default is suppressed
  put.body = "{\"a\":1}";
  put.headers = {{"Content-Type", "application/json"}};
  resp = ok_response(put);
  EXPECT_EQ(resp.body, "{\"a\":1}");
  EXPECT_EQ(resp.header("x-got-content-type"), "application/json");
  auto del = get("/echo");
  del.method = "DELETE";
  EXPECT_EQ(ok_response(del).header("x-method"), "DELETE");
}

TEST_F(curl_engine_test, head_has_headers_and_no_body) {
  auto r = get("/bytes/100");
  r.method = "HEAD";
  auto resp = ok_response(std::move(r));
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.header("content-length"), "100");
  EXPECT_TRUE(resp.body.empty());
}

TEST_F(curl_engine_test, repeated_headers_kept_in_order_names_lower_case_values_trimmed) {
  auto resp = ok_response(get("/headers"));
  std::vector<std::string> multi;
  for (const auto& [name, value] : resp.headers)
    if (name == "x-multi")
      multi.push_back(value);
  EXPECT_EQ(multi, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(resp.header("X-Multi"), "a");
  EXPECT_EQ(resp.header("x-mixed-case"), "v");
  EXPECT_EQ(resp.header("absent"), "");
}

TEST_F(curl_engine_test, non_2xx_is_a_response_not_an_error) {
  for (int code : {404, 429, 500, 503}) {
    auto resp = ok_response(get("/status/" + std::to_string(code)));
    EXPECT_EQ(resp.status, code);
    EXPECT_EQ(resp.body, "status " + std::to_string(code));
  }
}

TEST_F(curl_engine_test, connection_refused_is_transient_http_connect) {
  http_request r;
  r.url = "http://127.0.0.1:" + std::to_string(test::unused_loopback_port()) + "/";
  auto e = failed(std::move(r));
  EXPECT_EQ(e.code, "http.connect");
  EXPECT_TRUE(e.transient());
}

TEST_F(curl_engine_test, total_timeout_is_transient_http_timeout) {
  auto r = get("/delay/10000");
  r.total_timeout = 300ms;
  auto start = std::chrono::steady_clock::now();
  auto e = failed(std::move(r));
  EXPECT_EQ(e.code, "http.timeout");
  EXPECT_TRUE(e.transient());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(curl_engine_test, oversize_response_is_permanent_http_too_large) {
  // With Content-Length (curl refuses before reading) and without (the write callback aborts).
  for (std::string path : {"/bytes/100000", "/stream/5000000"}) {
    auto r = get(path);
    r.max_response_bytes = 1000;
    auto e = failed(std::move(r));
    EXPECT_EQ(e.code, "http.too_large") << path << ": " << e.describe();
    EXPECT_TRUE(e.permanent());
  }
  auto at_limit = get("/stream/1000");
  at_limit.max_response_bytes = 1000;
  EXPECT_EQ(ok_response(std::move(at_limit)).body.size(), 1000u);
}

TEST_F(curl_engine_test, cancel_in_flight_gives_http_cancelled_once) {
  http_collector collector;
  auto id = engine_.submit(get("/delay/10000"), collector.make_callback());
  // The inbox is FIFO: once a later request completed, the slow one is in curl's hands.
  ASSERT_EQ(ok_response(get("/status/200")).status, 200);
  auto start = std::chrono::steady_clock::now();
  engine_.cancel(id);
  ASSERT_TRUE(collector.wait_for(1, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  engine_.cancel(id);                                         // already finished: no-op
  engine_.cancel(999999);                                     // unknown: no-op
  ASSERT_TRUE(ok_response(get("/status/204")).status == 204); // the engine is still fine
  auto outcomes = collector.outcomes();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].calls, 1);
  ASSERT_FALSE(outcomes[0].res->ok());
  EXPECT_EQ(outcomes[0].res->error().code, "http.cancelled");
  EXPECT_TRUE(outcomes[0].res->error().transient());
}

TEST_F(curl_engine_test, keep_alive_reuses_one_connection_for_sequential_requests) {
  auto first = std::stoi(ok_response(get("/stats")).body);
  for (int i = 0; i < 10; ++i)
    ok_response(get("/status/200"));
  auto last = std::stoi(ok_response(get("/stats")).body);
  EXPECT_EQ(last, first); // no new connection accepted
}

TEST_F(curl_engine_test, submissions_from_many_threads_and_from_callbacks) {
  http_collector collector;
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i)
        engine_.submit(get("/status/200"), collector.make_callback());
    });
  for (auto& t : threads)
    t.join();
  // A callback that submits the next request (what an actor wrapper may do).
  auto chained = std::make_shared<http_collector>();
  auto next = chained->make_callback();
  engine_.submit(get("/status/201"), [this, chained, next](const result<http_response>& r) {
    EXPECT_TRUE(r.ok());
    engine_.submit(get("/status/202"), next);
  });
  ASSERT_TRUE(collector.wait_for(200, 30s));
  ASSERT_TRUE(chained->wait_for(1, 10s));
  for (const auto& o : collector.outcomes()) {
    EXPECT_EQ(o.calls, 1);
    ASSERT_TRUE(o.res->ok());
    EXPECT_EQ(o.res->value().status, 200);
  }
  EXPECT_EQ(chained->outcomes()[0].res->value().status, 202);
  EXPECT_EQ(engine_.stats().in_flight, 0u);
}

TEST_F(curl_engine_test, destroying_the_engine_cancels_every_request_in_flight_exactly_once) {
  http_collector collector;
  auto engine = std::make_unique<curl_engine>();
  for (int i = 0; i < 50; ++i)
    engine->submit(get("/delay/10000"), collector.make_callback());
  auto start = std::chrono::steady_clock::now();
  engine.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(collector.calls(), 50u); // all delivered before the destructor returned
  for (const auto& o : collector.outcomes()) {
    EXPECT_EQ(o.calls, 1);
    ASSERT_FALSE(o.res->ok());
    EXPECT_EQ(o.res->error().code, "http.cancelled");
  }
}

TEST_F(curl_engine_test, timer_tasks_run_on_the_engine_thread_in_deadline_order_and_may_submit) {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::string> order;
  std::vector<std::thread::id> threads;
  auto note = [&](std::string what) {
    std::lock_guard g{mtx};
    order.push_back(std::move(what));
    threads.push_back(std::this_thread::get_id());
    cv.notify_all();
  };
  engine_.after(60ms, [&] { note("second"); });
  engine_.after(0ms, [&] {
    note("first");
    // A task may submit a request (what a retry does); its answer comes on the same thread.
    engine_.submit(get("/status/204"), [&](result<http_response> r) {
      note(r && r->status == 204 ? "answer" : "bad answer");
    });
  });
  std::unique_lock g{mtx};
  ASSERT_TRUE(cv.wait_for(g, 10s, [&] { return order.size() == 3; }));
  EXPECT_EQ(order.front(), "first");
  EXPECT_NE(std::find(order.begin(), order.end(), "answer"), order.end());
  EXPECT_NE(std::find(order.begin(), order.end(), "second"), order.end());
  for (auto& t : threads)
    EXPECT_EQ(t, engine_.thread_id());
}

TEST_F(curl_engine_test, a_throwing_timer_task_does_not_stop_the_engine) {
  std::promise<void> later;
  engine_.after(0ms, [] { throw std::runtime_error("task failure"); });
  engine_.after(10ms, [&later] { later.set_value(); });
  EXPECT_EQ(later.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(ok_response(get("/status/200")).status, 200);
}

TEST_F(curl_engine_test, destroying_the_engine_drops_pending_timer_tasks_without_running_them) {
  struct probe {
    explicit probe(std::atomic<int>* counter) : destroyed(counter) {}
    ~probe() { ++*destroyed; }
    std::atomic<int>* destroyed;
  };
  std::atomic<int> ran{0}, destroyed{0};
  {
    curl_engine engine;
    for (int i = 0; i < 5; ++i) {
      auto p = std::make_shared<probe>(&destroyed);
      engine.after(1h, [&ran, p] { ++ran; });
    }
  }
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(destroyed.load(), 5);
}

} // namespace
} // namespace ingestd

namespace ingestd {
namespace {

// TLS verification is on: a certificate nobody vouches for is refused (permanent), and the same
// server is accepted once its certificate is the trusted CA.
TEST(curl_engine_tls, untrusted_certificate_is_permanent_http_tls_trusted_one_works) {
  auto dir = test::make_temp_dir("ingestd_tls");
  auto [cert, key] = test::make_self_signed_cert(dir);
  test::local_http_server server({.tls_cert_file = cert, .tls_key_file = key});
  http_request r;
  r.url = server.base_url() + "/status/200";
  {
    curl_engine engine;
    auto out = test::call(engine, r);
    ASSERT_TRUE(out.has_value());
    ASSERT_FALSE(out->res->ok());
    EXPECT_EQ(out->res->error().code, "http.tls") << out->res->error().describe();
    EXPECT_TRUE(out->res->error().permanent());
  }
  {
    curl_engine engine({.ca_file = cert});
    auto out = test::call(engine, r);
    ASSERT_TRUE(out.has_value());
    ASSERT_TRUE(out->res->ok()) << out->res->error().describe();
    EXPECT_EQ(out->res->value().status, 200);
  }
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace ingestd
