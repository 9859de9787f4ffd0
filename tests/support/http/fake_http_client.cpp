// The fake of the http_client port: one worker thread answers requests in order.
#include "tests/support/http/fake_http_client.hpp"

#include <algorithm>
#include <cctype>

#include <gtest/gtest.h>

namespace ingestd::test {

namespace {

std::string lower(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// What is wrong with a request a real engine would refuse or misread, or "".
std::string malformed(const http_request& r) {
  if (r.method.empty())
    return "a request without a method";
  if (r.url.empty())
    return "a request without a URL";
  if (r.connect_timeout.count() <= 0 || r.total_timeout.count() <= 0)
    return "a request to " + r.url + " with a timeout of zero";
  return {};
}

} // namespace

http_response make_response(long status, std::string body, const http_headers& headers) {
  http_response r;
  r.status = status;
  r.body = std::move(body);
  for (auto& [k, v] : headers)
    r.headers.emplace_back(lower(k), v);
  return r;
}

std::string header_of(const http_request& request, std::string_view name) {
  auto wanted = lower(name);
  for (auto& [k, v] : request.headers)
    if (lower(k) == wanted)
      return v;
  return {};
}

fake_http_client::fake_http_client(responder answer)
    : answer_(std::move(answer)), worker_([this] { run(); }) {}

fake_http_client::~fake_http_client() {
  {
    std::lock_guard guard{mu_};
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
  for (auto& v : violations_)
    ADD_FAILURE() << "fake_http_client: " << v;
}

void fake_http_client::set_responder(responder answer) {
  std::lock_guard guard{mu_};
  answer_ = std::move(answer);
}

void fake_http_client::respond_with(result<http_response> answer) {
  set_responder([answer = std::move(answer)](const http_request&) { return answer; });
}

uint64_t fake_http_client::submit(http_request request, callback<http_response> done) {
  std::lock_guard guard{mu_};
  auto id = next_id_++;
  if (stop_)
    violations_.push_back("submit() to " + request.url + " while the client is being destroyed");
  if (auto why = malformed(request); !why.empty())
    violations_.push_back(why);
  log_.push_back(request);
  queue_.push_back({id, std::move(request), std::move(done)});
  cv_.notify_all();
  return id;
}

void fake_http_client::cancel(uint64_t id) {
  std::lock_guard guard{mu_};
  if (id == 0 || id >= next_id_)
    violations_.push_back("cancel() of id " + std::to_string(id) + ", never returned by submit()");
  for (auto& p : queue_)
    if (p.id == id)
      p.cancelled = true;
}

void fake_http_client::hold() {
  std::lock_guard guard{mu_};
  holding_ = true;
}

void fake_http_client::release(size_t n) {
  {
    std::lock_guard guard{mu_};
    released_ += n;
  }
  cv_.notify_all();
}

size_t fake_http_client::unanswered() const {
  std::lock_guard guard{mu_};
  return queue_.size() + answering_;
}

std::vector<http_request> fake_http_client::requests() const {
  std::lock_guard guard{mu_};
  return log_;
}

size_t fake_http_client::request_count() const {
  std::lock_guard guard{mu_};
  return log_.size();
}

std::vector<std::string> fake_http_client::violations() const {
  std::lock_guard guard{mu_};
  return violations_;
}

void fake_http_client::run() {
  std::unique_lock lock{mu_};
  while (true) {
    cv_.wait(lock, [this] { return stop_ || (!queue_.empty() && (!holding_ || released_ > 0)); });
    if (queue_.empty() && stop_)
      return;
    if (holding_ && released_ > 0)
      --released_;
    auto p = std::move(queue_.front());
    queue_.pop_front();
    ++answering_;
    auto answer = answer_;
    bool stopping = stop_;
    lock.unlock();
    if (p.cancelled)
      p.done(error::make_transient("http.cancelled", "cancelled"));
    else if (stopping)
      p.done(error::make_transient("http.cancelled", "fake engine stopped"));
    else if (!answer)
      p.done(error::make_transient("http.connect", "fake_http_client has no responder"));
    else
      p.done(answer(p.request));
    lock.lock();
    --answering_;
  }
}

} // namespace ingestd::test
