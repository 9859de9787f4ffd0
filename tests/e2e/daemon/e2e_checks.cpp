// Assertions shared by the end-to-end tests, as SQL over the fresh schema.
#include "e2e_checks.hpp"

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "adapters/storage/object_store.hpp"

namespace ingestd::test {

cli_result run_cli(e2e_setup& s, const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& extra, int timeout_seconds) {
  auto all = s.daemon_env();
  for (auto& [k, v] : extra)
    all[k] = v;
  std::vector<std::string> env;
  for (auto& [k, v] : all)
    env.emplace_back(k).append("=").append(v);
  return run_ingestd(args, env, timeout_seconds);
}

void stop_cleanly(daemon_process& d) {
  d.signal(SIGTERM);
  auto rc = d.wait_exit(std::chrono::seconds{60});
  ASSERT_TRUE(rc.has_value()) << d.log_tail();
  EXPECT_EQ(*rc, 0) << d.log_tail();
}

void expect_completed_exactly_once(e2e_setup& s, const std::vector<std::string>& ids) {
  auto arr = pg_array(ids);
  auto n = static_cast<int64_t>(ids.size());
  EXPECT_EQ(
      s.count("SELECT count(*) FROM ingestion WHERE id = ANY($1::uuid[]) AND status = 'completed'",
              {arr}),
      n)
      << s.logs();
  // The work item is the claim: completed, and the ingestion's status follows it.
  EXPECT_EQ(
      s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) AND stage = 'ingest' "
              "AND status = 'completed' AND completed_at IS NOT NULL",
              {arr}),
      n);
  // The audit trail is written in the completion's transaction: a completed ingestion has its
  // `complete` row, with nothing left to wait for.
  // Exactly one successful completion per ingestion: none missing, none twice.
  EXPECT_EQ(s.count("SELECT count(DISTINCT ingestion_id) FROM ingestion_event "
                    "WHERE ingestion_id = ANY($1::uuid[]) AND step = 'complete' AND outcome = 'ok'",
                    {arr}),
            n);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event "
                    "WHERE ingestion_id = ANY($1::uuid[]) AND step = 'complete' AND outcome = 'ok'",
                    {arr}),
            n)
      << "one complete event per ingestion: none missing, none twice";
  // The trigger copied the result to the document.
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion i JOIN document d ON d.id = i.document_id "
                    "WHERE i.id = ANY($1::uuid[]) AND d.structured_data IS NOT NULL "
                    "AND d.structured_data = i.structured_data AND NOT d.needs_human_review",
                    {arr}),
            n);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE id = ANY($1::uuid[]) "
                    "AND (claim_token IS NOT NULL OR lease_expires_at IS NOT NULL)",
                    {arr}),
            0)
      << "completed work items keep no claim";
}

bool await_complete_events(e2e_setup& s, const std::vector<std::string>& ids,
                           std::chrono::seconds deadline) {
  auto arr = pg_array(ids);
  auto n = static_cast<int64_t>(ids.size());
  auto events = [&] {
    return s.count("SELECT count(DISTINCT ingestion_id) FROM ingestion_event "
                   "WHERE ingestion_id = ANY($1::uuid[]) AND step = 'complete' AND outcome = 'ok'",
                   {arr});
  };
  return wait_until([&] { return events() >= n; }, deadline, std::chrono::milliseconds{100});
}

bool await_completed(e2e_setup& s, int64_t n, std::chrono::seconds deadline) {
  bool ok = wait_until([&] { return s.with_status("completed") >= n; }, deadline,
                       std::chrono::milliseconds{200});
  EXPECT_TRUE(ok) << s.with_status("completed") << " of " << n << " completed, "
                  << s.with_status("failed") << " failed\n"
                  << s.logs();
  return ok;
}

int64_t queue_depth(e2e_setup& s) {
  return s.count("SELECT count(*) FROM queue_message WHERE queue_name = $1", {s.queue_name()});
}

silent_server::silent_server() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 16) != 0
      || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot listen on 127.0.0.1");
  port_ = ntohs(a.sin_port);
}

silent_server::~silent_server() {
  ::close(fd_);
}

std::string silent_server::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

bool await_waiting_on_extraction(e2e_setup& s, std::chrono::seconds deadline) {
  return await_waiting_on_extraction(s, 1, deadline);
}

bool await_waiting_on_extraction(e2e_setup& s, int64_t n, std::chrono::seconds deadline) {
  // Transcribed: the transcription is in storage (the ingestion records it with the result).
  return wait_until(
      [&] {
        auto held = s.db().query(
            "SELECT w.id::text, d.tenant_id::text FROM work_item AS w "
            "JOIN document AS d ON d.id = w.document_id "
            "WHERE w.stage = 'ingest' AND w.status = 'in-progress' AND w.claim_token IS NOT NULL");
        int64_t transcribed = 0;
        for (auto& row : held)
          if (std::filesystem::exists(std::filesystem::path{s.root()}
                                      / storage_keys::transcription(*row[1], *row[0])))
            ++transcribed;
        return transcribed == n;
      },
      deadline);
}

// -- held_llm_server -------------------------------------------------------------------------

namespace {

/// A chat completion whose content is an invoice the quality gate passes.
std::string held_completion() {
  std::string content
      = R"({\"invoice_number\":\"INV-1\",\"invoice_date\":\"2024-03-15\",)"
        R"(\"due_date\":\"2024-04-14\",\"supplier_name\":\"Acme Inc.\",)"
        R"(\"supplier_address\":\"1 Main St, Springfield\",\"supplier_vat_id\":\"DE123456789\",)"
        R"(\"customer_name\":\"Globex\",\"currency\":\"EUR\",\"line_items\":[{\"description\":)"
        R"(\"Widget\",\"quantity\":2,\"unit_price\":50.0,\"amount\":100.0}],\"subtotal\":100.0,)"
        R"(\"vat_amount\":19.0,\"total\":119.0,\"extraction_successful\":true,)"
        R"(\"confidence\":\"high\",\"missing_fields\":[]})";
  std::string body
      = R"({"id":"chatcmpl-held","object":"chat.completion","created":0,"model":"held",)"
        R"("choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",)"
        R"("content":")"
        + content
        + R"(","refusal":null}}],)"
          R"("usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150}})";
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
         "Content-Length: "
         + std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// Reads one HTTP request (headers and a Content-Length body) from `in`; false when the peer
/// closed or the server stops.
bool read_request(int fd, std::string& in, const std::atomic<bool>& stopping) {
  for (;;) {
    auto head = in.find("\r\n\r\n");
    if (head != std::string::npos) {
      size_t length = 0;
      for (auto key : {"Content-Length:", "content-length:"})
        if (auto at = in.find(key); at != std::string::npos && at < head)
          length = std::strtoul(in.c_str() + at + std::strlen(key), nullptr, 10);
      if (in.size() >= head + 4 + length) {
        in.erase(0, head + 4 + length);
        return true;
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (stopping)
      return false;
    if (::poll(&p, 1, 100) <= 0)
      continue;
    char buf[16384];
    auto got = ::read(fd, buf, sizeof buf);
    if (got <= 0)
      return false;
    in.append(buf, static_cast<size_t>(got));
  }
}

} // namespace

struct held_llm_server::impl {
  int fd = -1;
  int port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<int> requests{0};
  std::mutex mtx;
  std::condition_variable cv;
  bool released = false;
  int allowance = 0;
  std::vector<std::thread> threads;
  std::vector<int> connections;

  void serve(int c) {
    std::string in;
    auto response = held_completion();
    while (read_request(c, in, stopping)) {
      ++requests;
      {
        std::unique_lock lock{mtx};
        cv.wait(lock, [&] { return released || allowance > 0 || stopping.load(); });
        if (!released && allowance > 0)
          --allowance;
      }
      if (stopping)
        return;
      size_t off = 0;
      while (off < response.size()) {
        auto w = ::send(c, response.data() + off, response.size() - off, MSG_NOSIGNAL);
        if (w <= 0)
          return;
        off += static_cast<size_t>(w);
      }
    }
  }

  void accept_loop() {
    while (!stopping) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0)
        continue;
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0)
        continue;
      std::lock_guard lock{mtx};
      connections.push_back(c);
      threads.emplace_back([this, c] { serve(c); });
    }
  }
};

held_llm_server::held_llm_server() : impl_(std::make_unique<impl>()) {
  auto& m = *impl_;
  m.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (m.fd < 0 || ::bind(m.fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(m.fd, 64) != 0
      || ::getsockname(m.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot listen on 127.0.0.1");
  m.port = ntohs(a.sin_port);
  std::lock_guard lock{m.mtx};
  m.threads.emplace_back([&m] { m.accept_loop(); });
}

held_llm_server::~held_llm_server() {
  auto& m = *impl_;
  m.stopping = true;
  m.cv.notify_all();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock{m.mtx};
    // The accept loop adds no thread once it sees `stopping`; the first one is the loop itself.
    threads.swap(m.threads);
  }
  for (auto& t : threads)
    t.join();
  // A connection accepted while the threads were being taken has its thread in m.threads.
  for (auto& t : m.threads)
    t.join();
  for (int c : m.connections)
    ::close(c);
  ::close(m.fd);
}

std::string held_llm_server::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port);
}

int held_llm_server::requests() const {
  return impl_->requests.load();
}

void held_llm_server::release() {
  {
    std::lock_guard lock{impl_->mtx};
    impl_->released = true;
  }
  impl_->cv.notify_all();
}

void held_llm_server::release(int n) {
  {
    std::lock_guard lock{impl_->mtx};
    impl_->allowance += n;
  }
  impl_->cv.notify_all();
}

} // namespace ingestd::test
