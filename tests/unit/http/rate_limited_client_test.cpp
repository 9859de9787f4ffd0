// The provider limiter (adapters/http/rate_limited_client): requests at once, per minute and tokens
// per minute; first come first served; the longest wait; the wait hooks a job's deadline listens
// to; cancel and shutdown; the figures for /metrics. Time is the manual timer's (virtual); the
// network is the fake http client, which holds requests until the test lets them answer.
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "adapters/http/rate_limited_client.hpp"
#include "tests/support/daemon/daemon_process.hpp"
#include "tests/support/fakes/manual_timer.hpp"
#include "tests/support/http/fake_http_client.hpp"

namespace ingestd {
namespace {

using namespace std::chrono_literals;
using test::fake_http_client;
using test::manual_timer;
using test::wait_until;

http_request request(std::string url, int64_t tokens = 0) {
  http_request r;
  r.method = "POST";
  r.url = std::move(url);
  r.estimated_tokens = tokens;
  return r;
}

/// What the callers saw: answers by URL, in the order they came, and the hooks' calls.
struct observed {
  std::mutex mtx;
  std::vector<std::string> answered;
  std::vector<std::string> errors;
  std::vector<std::string> hooks;

  callback<http_response> on_answer(const std::string& url) {
    return [this, url](result<http_response> r) {
      std::lock_guard lock{mtx};
      if (r)
        answered.push_back(url);
      else
        errors.push_back(url + ": " + r.error().code);
    };
  }
  call_context hooks_for(const std::string& url) {
    return {[this, url] {
              std::lock_guard lock{mtx};
              hooks.push_back("waiting " + url);
            },
            [this, url] {
              std::lock_guard lock{mtx};
              hooks.push_back("resumed " + url);
            }};
  }
  size_t answers() {
    std::lock_guard lock{mtx};
    return answered.size() + errors.size();
  }
};

std::vector<std::string> urls(const fake_http_client& http) {
  std::vector<std::string> out;
  for (auto& r : http.requests())
    out.push_back(r.url);
  return out;
}

class rate_limited_client_test : public ::testing::Test {
protected:
  // Declared first, destroyed last: the fake's thread may still answer a request (into `seen`,
  // through the limiter's timer) until the fake is destroyed.
  observed seen;
  manual_timer clock;
  fake_http_client http{
      [](const http_request&) -> result<http_response> { return test::make_response(200, "ok"); }};

  std::unique_ptr<rate_limited_client> limiter(provider_limits limits) {
    return std::make_unique<rate_limited_client>("llm", http, clock, limits,
                                                 [this] { return clock.now(); });
  }
  void submit(rate_limited_client& l, const std::string& url, int64_t tokens = 0) {
    auto r = request(url, tokens);
    r.context = seen.hooks_for(url);
    l.submit(std::move(r), seen.on_answer(url));
  }
};

TEST_F(rate_limited_client_test, at_most_max_concurrent_on_the_network_the_rest_in_arrival_order) {
  http.hold();
  auto l = limiter({.max_concurrent = 2});
  for (auto u : {"a", "b", "c", "d", "e"})
    submit(*l, u);
  EXPECT_EQ(urls(http), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(l->stats().waiting, 3u);
  EXPECT_EQ(l->stats().in_flight, 2u);
  http.release(1); // a answers: c goes
  ASSERT_TRUE(wait_until([&] { return http.request_count() == 3; }, 10s));
  EXPECT_EQ(urls(http).back(), "c");
  ASSERT_TRUE(wait_until([&] { return http.unanswered() == 2; }, 10s));
  http.release(10);
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 5; }, 10s));
  EXPECT_EQ(urls(http), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  std::lock_guard lock{seen.mtx};
  EXPECT_EQ(seen.answered, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  // Only the requests that waited told their caller, each waiting before resumed.
  EXPECT_EQ(seen.hooks, (std::vector<std::string>{"waiting c", "waiting d", "waiting e",
                                                  "resumed c", "resumed d", "resumed e"}));
  auto s = l->stats();
  EXPECT_EQ(s.sent, 5u);
  EXPECT_EQ(s.waited, 3u);
  EXPECT_EQ(s.waiting, 0u);
}

TEST_F(rate_limited_client_test, requests_per_minute_go_out_evenly_without_a_thread) {
  auto l = limiter({.requests_per_minute = 60}); // one a second, one at a time
  for (auto u : {"a", "b", "c"})
    submit(*l, u);
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 1; }, 10s));
  EXPECT_EQ(urls(http), (std::vector<std::string>{"a"}));
  EXPECT_EQ(clock.pending(), 1u) << "one timer task, not one per waiting request";
  clock.advance(999ms);
  EXPECT_EQ(http.request_count(), 1u) << "not before a second has passed";
  // What falls due may be sent by the timer task (this thread) or by the answer to the request
  // before it (the fake's thread, which reads the same clock): wait for it.
  clock.advance(1ms);
  ASSERT_TRUE(wait_until([&] { return http.request_count() == 2; }, 10s));
  EXPECT_EQ(urls(http), (std::vector<std::string>{"a", "b"}));
  clock.advance(1s);
  ASSERT_TRUE(wait_until([&] { return http.request_count() == 3; }, 10s));
  EXPECT_EQ(urls(http), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 3; }, 10s));
  EXPECT_EQ(clock.pending(), 0u) << "nothing armed once the line is empty";
  auto s = l->stats();
  EXPECT_EQ(s.waited, 2u);
  EXPECT_NEAR(s.wait_seconds, 1.0 + 2.0, 0.01); // b waited 1 s, c 2 s
}

TEST_F(rate_limited_client_test, tokens_per_minute_let_a_large_request_go_when_the_bucket_is_full) {
  auto l = limiter({.tokens_per_minute = 6000}); // 100 a second, a bucket of 100
  submit(*l, "large", 250); // over the bucket: goes at once, leaves a debt of 150
  submit(*l, "small", 50);  // waits for the debt and its own 50: 2 s
  EXPECT_EQ(urls(http), (std::vector<std::string>{"large"}));
  clock.advance(1990ms);
  EXPECT_EQ(http.request_count(), 1u);
  // Sent by the timer task or by the answer to "large" on the fake's thread: wait for it.
  clock.advance(20ms);
  ASSERT_TRUE(wait_until([&] { return http.request_count() == 2; }, 10s));
  EXPECT_EQ(urls(http), (std::vector<std::string>{"large", "small"}));
  // Requests that are not counted in tokens (0) pass the token limit.
  submit(*l, "untokened", 0);
  EXPECT_EQ(http.request_count(), 3u);
  EXPECT_EQ(l->stats().tokens, 300);
}

TEST_F(rate_limited_client_test, a_request_that_waits_its_longest_wait_is_busy_and_never_sent) {
  http.hold();
  auto l = limiter({.max_concurrent = 1, .max_wait = 30s});
  submit(*l, "first");
  submit(*l, "second");
  clock.advance(29s);
  EXPECT_EQ(seen.answers(), 0u);
  clock.advance(1s);
  {
    std::lock_guard lock{seen.mtx};
    ASSERT_EQ(seen.errors, (std::vector<std::string>{"second: provider.busy"}));
    EXPECT_EQ(seen.hooks, (std::vector<std::string>{"waiting second", "resumed second"}));
  }
  EXPECT_EQ(urls(http), (std::vector<std::string>{"first"}));
  EXPECT_EQ(l->stats().busy, 1u);
  error busy = error::make_transient("provider.busy", "x");
  EXPECT_TRUE(provider_busy(busy));
  http.release(1);
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 2; }, 10s));
}

TEST_F(rate_limited_client_test,
       cancel_takes_a_waiting_request_out_of_the_line_and_passes_a_sent_one_on) {
  http.hold();
  auto l = limiter({.max_concurrent = 1});
  auto sent = l->submit(request("sent"), seen.on_answer("sent"));
  auto r = request("waiting");
  r.context = seen.hooks_for("waiting");
  auto waiting = l->submit(std::move(r), seen.on_answer("waiting"));
  l->cancel(waiting);
  {
    std::lock_guard lock{seen.mtx};
    EXPECT_EQ(seen.errors, (std::vector<std::string>{"waiting: http.cancelled"}));
    EXPECT_EQ(seen.hooks, (std::vector<std::string>{"waiting waiting", "resumed waiting"}));
  }
  l->cancel(sent);
  http.release(1);
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 2; }, 10s));
  std::lock_guard lock{seen.mtx};
  EXPECT_EQ(seen.errors.back(), "sent: http.cancelled");
  EXPECT_EQ(urls(http), (std::vector<std::string>{"sent"}));
}

TEST_F(rate_limited_client_test, shutting_down_answers_every_waiting_request_once) {
  http.hold();
  {
    auto l = limiter({.max_concurrent = 1});
    for (auto u : {"a", "b", "c"})
      submit(*l, u);
  }
  {
    std::lock_guard lock{seen.mtx};
    EXPECT_EQ(seen.errors, (std::vector<std::string>{"b: http.cancelled", "c: http.cancelled"}));
  }
  http.release(1); // the sent one still answers from the engine
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 3; }, 10s));
  clock.advance(1h); // a timer task of the gone limiter does nothing
}

TEST_F(rate_limited_client_test, without_limits_every_request_goes_at_once_and_is_counted) {
  auto l = limiter({});
  for (int i = 0; i < 100; ++i)
    submit(*l, "r" + std::to_string(i));
  EXPECT_EQ(http.request_count(), 100u);
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 100; }, 10s));
  EXPECT_EQ(l->stats().sent, 100u);
  EXPECT_EQ(l->stats().waited, 0u);
  EXPECT_TRUE(seen.hooks.empty());
}

TEST_F(rate_limited_client_test, the_figures_name_each_provider) {
  auto llm = limiter({.max_concurrent = 4, .requests_per_minute = 600, .tokens_per_minute = 90000});
  rate_limited_client hook{"webhook", http, clock, {}, [this] { return clock.now(); }};
  submit(*llm, "x", 10);
  ASSERT_TRUE(wait_until([&] { return seen.answers() == 1; }, 10s));
  auto text
      = provider_limits_prometheus({std::shared_ptr<rate_limited_client>(llm.get(), [](auto*) {}),
                                    std::shared_ptr<rate_limited_client>(&hook, [](auto*) {})});
  for (auto line : {"ingestd_provider_requests_total{provider=\"llm\"} 1",
                    "ingestd_provider_requests_total{provider=\"webhook\"} 0",
                    "ingestd_provider_tokens_total{provider=\"llm\"} 10",
                    "ingestd_provider_requests_waiting{provider=\"llm\"} 0",
                    "ingestd_provider_limit{provider=\"llm\",kind=\"max_concurrent\"} 4",
                    "ingestd_provider_limit{provider=\"llm\",kind=\"tokens_per_minute\"} 90000",
                    "# TYPE ingestd_provider_limit_wait_seconds_total counter"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

// Many threads at once, answers from the fake's thread: the concurrency bound holds at every
// moment and every request is answered exactly once.
TEST(rate_limited_client_threads, the_bound_holds_under_concurrent_submits) {
  // Each answer looks at what is on the network: the requests the engine holds unanswered.
  fake_http_client http;
  std::atomic<size_t> peak{0};
  http.set_responder([&](const http_request&) -> result<http_response> {
    auto now = http.unanswered();
    auto seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    return test::make_response(200);
  });
  manual_timer clock;
  rate_limited_client l{"llm", http, clock, {.max_concurrent = 3}, [&] { return clock.now(); }};
  std::atomic<int> answers{0};
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 250; ++i)
        l.submit(request("u"), [&](const result<http_response>&) { ++answers; });
    });
  for (auto& t : threads)
    t.join();
  ASSERT_TRUE(wait_until([&] { return answers.load() == 1000; }, 30s)) << answers.load();
  EXPECT_LE(peak.load(), 3u);
  EXPECT_GE(peak.load(), 1u);
  EXPECT_EQ(l.stats().sent, 1000u);
  EXPECT_EQ(l.stats().in_flight, 0u);
}

} // namespace
} // namespace ingestd
