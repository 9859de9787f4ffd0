// The scripted http_client for unit tests: one worker thread answers requests in order.
#include "tests/support/http/fake_http_client.hpp"

#include <algorithm>
#include <cctype>

namespace ingestd::test {

namespace {

std::string lower(std::string_view s) {
  std::string out{s};
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

} // namespace

http_response make_response(long status, std::string body, http_headers headers) {
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
  : answer_(std::move(answer)), worker_([this] { run(); }) {
}

fake_http_client::~fake_http_client() {
  {
    std::lock_guard guard{mu_};
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void fake_http_client::set_responder(responder answer) {
  std::lock_guard guard{mu_};
  answer_ = std::move(answer);
}

uint64_t fake_http_client::submit(http_request request, callback<http_response> done) {
  std::lock_guard guard{mu_};
  auto id = next_id_++;
  log_.push_back(request);
  queue_.push_back({id, std::move(request), std::move(done)});
  cv_.notify_all();
  return id;
}

void fake_http_client::cancel(uint64_t id) {
  std::lock_guard guard{mu_};
  for (auto& p : queue_)
    if (p.id == id)
      p.cancelled = true;
}

std::vector<http_request> fake_http_client::requests() const {
  std::lock_guard guard{mu_};
  return log_;
}

size_t fake_http_client::request_count() const {
  std::lock_guard guard{mu_};
  return log_.size();
}

void fake_http_client::run() {
  std::unique_lock lock{mu_};
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_)
      return;
    auto p = std::move(queue_.front());
    queue_.pop_front();
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
  }
}

} // namespace ingestd::test
