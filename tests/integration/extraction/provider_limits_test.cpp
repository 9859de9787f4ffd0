// The LLM provider's limits on the real path: openai_extractor through rate_limited_client over
// the curl engine against the local chat-completions stub. The stub counts how many requests of
// a model are open at once; the limit must hold there, on the server's side of the network.
#include <atomic>
#include <future>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/http/rate_limited_client.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/llm/stub_client.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// The stub's "peak" for `model`, or -1.
int peak_of(http_client& http, const std::string& base_url, const std::string& model) {
  auto r = test::get_sync(http, base_url + "/peak?model=" + model);
  if (!r || r->status != 200)
    return -1;
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  return !d.HasParseError() && d.IsObject() && d.HasMember("peak") && d["peak"].IsInt()
             ? d["peak"].GetInt()
             : -1;
}

} // namespace

TEST(provider_limits, the_llms_concurrency_limit_holds_at_the_server_and_every_call_completes) {
  test::chat_stub stub;
  curl_engine engine;
  rate_limited_client llm{"llm", engine, engine, provider_limits{.max_concurrent = 2}};
  openai_options o;
  o.base_url = stub.base_url();
  o.model = "slow:concurrency";
  o.request_timeout = 30s;
  openai_extractor ex{llm, engine, o};

  constexpr int calls = 8;
  std::mutex mtx;
  std::vector<result<extraction>> answers;
  std::promise<void> all_done;
  std::atomic<int> waits{0};
  for (int i = 0; i < calls; ++i)
    ex.extract_with("Invoice INV-1, total 119.00 EUR", call_context{[&] { ++waits; }, {}},
                    [&](result<extraction> r) {
                      std::lock_guard lock{mtx};
                      answers.push_back(std::move(r));
                      if (answers.size() == calls)
                        all_done.set_value();
                    });
  ASSERT_EQ(all_done.get_future().wait_for(60s), std::future_status::ready);
  for (auto& a : answers)
    EXPECT_TRUE(a) << a.error().describe();
  auto peak = peak_of(engine, stub.base_url(), o.model);
  EXPECT_GE(peak, 1);
  EXPECT_LE(peak, 2) << "more requests open at the server than llm_max_concurrent";
  auto s = llm.stats();
  EXPECT_EQ(s.sent, static_cast<uint64_t>(calls));
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.waiting, 0u);
  EXPECT_EQ(static_cast<uint64_t>(waits.load()), s.waited) << "each wait told the caller";
  EXPECT_GT(s.tokens, 0) << "the calls carry their token estimate";
}
