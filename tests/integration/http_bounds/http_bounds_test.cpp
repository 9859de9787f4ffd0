// The daemon's HTTP endpoints under hostile clients, as `ingestd run` serves them: the intake, the
// admin endpoint and the review desk on it, driven over raw sockets (so that a test can stream a
// body of any size, trickle bytes, choose its Host and Origin, and connect from another loopback
// address: 127.0.0.0/8 is all this host's). The daemon's RSS is read from /proc while it refuses.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "intake/intake_server.hpp"
#include "intake/intake_service.hpp"
#include "tests/support/daemon/daemon_process.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

const std::string intake_token = "intake-token-0123456789abcdef0123";
const std::string admin_token = "admin-token-0123456789abcdef01234";
const std::string desk_token = "desk-token-0123456789abcdef012345";

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error("free_port: no loopback port to bind");
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// A TCP connection to 127.0.0.1:port from the loopback address `from`; -1 when refused.
int connect_from(int port, const std::string& from) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    ::close(fd);
    return -1;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct reply {
  int status = 0;
  std::string head;
  std::string body;
  double seconds = 0;
  /// Body bytes the client got to send before the answer came.
  uint64_t sent = 0;

  std::string header(const std::string& name) const {
    std::istringstream in{head};
    std::string line;
    while (std::getline(in, line)) {
      auto colon = line.find(':');
      if (colon == std::string::npos || colon != name.size())
        continue;
      if (std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a))
                   == std::tolower(static_cast<unsigned char>(b));
          })) {
        auto v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(' '));
        if (!v.empty() && v.back() == '\r')
          v.pop_back();
        return v;
      }
    }
    return {};
  }
};

/// Produces the body in pieces: an empty piece ends it.
using body_source = std::function<std::string_view()>;

/// Sends `head` (request line and headers, ending in an empty line), then the body while no
/// answer has come, and reads the answer (until Content-Length or the connection's end), all
/// within `deadline`.
reply http_exchange(int port, const std::string& head, const body_source& body = {},
                    const std::string& from = "127.0.0.1", std::chrono::seconds deadline = 60s) {
  reply r;
  auto start = clock_type::now();
  int fd = connect_from(port, from);
  if (fd < 0)
    return r;
  std::string pending = head;
  bool body_done = !body;
  std::string in;
  size_t header_end = std::string::npos;
  size_t want = std::string::npos;
  bool writing = true;
  while (clock_type::now() - start < deadline) {
    if (writing && pending.empty() && !body_done) {
      auto piece = body();
      if (piece.empty())
        body_done = true;
      else
        pending.assign(piece.data(), piece.size());
    }
    if (pending.empty() && body_done)
      writing = false;
    pollfd p{fd, static_cast<short>(POLLIN | (writing ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, 200) <= 0)
      continue;
    if (p.revents & POLLIN) {
      char buf[65536];
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        break;
      in.append(buf, static_cast<size_t>(n));
      writing = false; // an answer came: stop sending, as curl does
      if (header_end == std::string::npos
          && (header_end = in.find("\r\n\r\n")) != std::string::npos) {
        r.head = in.substr(0, header_end);
        auto cl = reply{0, r.head + "\r\n"}.header("Content-Length");
        if (!cl.empty())
          want = header_end + 4 + std::stoul(cl);
      }
      if (want != std::string::npos && in.size() >= want)
        break;
      continue;
    }
    if (p.revents & (POLLERR | POLLHUP)) {
      writing = false;
      continue;
    }
    if (writing && (p.revents & POLLOUT)) {
      auto n = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL);
      if (n < 0) {
        writing = false;
        continue;
      }
      r.sent += static_cast<uint64_t>(n);
      pending.erase(0, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  r.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  if (header_end != std::string::npos) {
    r.head = in.substr(0, header_end) + "\r\n";
    r.body = in.substr(header_end + 4);
    std::sscanf(r.head.c_str(), "HTTP/1.%*d %d", &r.status);
  }
  r.sent = r.sent > head.size() ? r.sent - head.size() : 0;
  return r;
}

/// A chunked body of `total` zero bytes, in 64 KiB chunks.
body_source chunked_zeros(uint64_t total) {
  auto left = std::make_shared<uint64_t>(total);
  auto piece = std::make_shared<std::string>();
  auto done = std::make_shared<bool>(false);
  return [=]() -> std::string_view {
    if (*done)
      return {};
    if (*left == 0) {
      *done = true;
      *piece = "0\r\n\r\n";
      return *piece;
    }
    auto n = std::min<uint64_t>(*left, 65536);
    *left -= n;
    char size[32];
    std::snprintf(size, sizeof size, "%llx\r\n", static_cast<unsigned long long>(n));
    *piece = size;
    piece->append(n, '\0');
    piece->append("\r\n");
    return *piece;
  };
}

/// `bytes` once.
body_source fixed(std::string bytes) {
  auto sent = std::make_shared<bool>(false);
  auto data = std::make_shared<std::string>(std::move(bytes));
  return [=]() -> std::string_view {
    if (*sent)
      return {};
    *sent = true;
    return *data;
  };
}

/// A gzip stream that inflates to `inflated` zero bytes (about a thousandth of it compressed).
std::string gzip_bomb(uint64_t inflated) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  std::string zeros(1 << 20, '\0');
  std::string out;
  char buf[1 << 16];
  for (uint64_t done = 0; done < inflated;) {
    auto n = std::min<uint64_t>(zeros.size(), inflated - done);
    done += n;
    z.next_in = reinterpret_cast<Bytef*>(zeros.data());
    z.avail_in = static_cast<uInt>(n);
    int flush = done == inflated ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      deflate(&z, flush);
      out.append(buf, sizeof buf - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

int64_t rss_kib(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoll(line.substr(6));
  return -1;
}

/// Samples a process's RSS until stopped; the highest seen.
class rss_sampler {
public:
  explicit rss_sampler(pid_t pid) : pid_(pid), peak_(rss_kib(pid)) {
    thread_ = std::thread{[this] {
      while (!stop_) {
        peak_ = std::max<int64_t>(peak_, rss_kib(pid_));
        std::this_thread::sleep_for(20ms); // a sampling period, not a wait for a condition
      }
    }};
  }
  ~rss_sampler() { stop(); }
  int64_t stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
    return peak_;
  }

private:
  pid_t pid_;
  std::atomic<int64_t> peak_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string request_head(const std::string& method, const std::string& path, int port,
                         const std::vector<std::string>& headers = {}) {
  std::string out = method + " " + path + " HTTP/1.1\r\n";
  bool host = false;
  for (auto& h : headers)
    host = host || h.rfind("Host:", 0) == 0;
  if (!host)
    out += "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  for (auto& h : headers)
    out += h + "\r\n";
  return out + "\r\n";
}

/// The daemon every test of the suite shares: intake, admin and review desk, small deadlines.
class http_bounds_test : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    db = new test::pg_schema();
    root = test::make_temp_dir("http_bounds");
    admin_port = free_port();
    intake_port = free_port();
    tenant = uuid::v7().str();
    auto queue = test::unique_name("q");
    test::create_stage_queues(db->url(), queue);
    if (HasFailure())
      return;
    std::map<std::string, std::string> env{{"INGESTD_DATABASE__URL", db->url()},
                                           {"INGESTD_QUEUE__NAME", queue},
                                           {"INGESTD_QUEUE__WAIT_TIME_SECONDS", "1"},
                                           {"INGESTD_STORAGE__ROOT", root + "/storage"},
                                           {"INGESTD_ADMIN__PORT", std::to_string(admin_port)},
                                           {"INGESTD_INTAKE__PORT", std::to_string(intake_port)},
                                           {"INGESTD_INTAKE_TOKEN", intake_token},
                                           {"INGESTD_ADMIN_TOKEN", admin_token},
                                           {"INGESTD_REVIEW__ENABLED", "true"},
                                           {"INGESTD_REVIEW_TOKEN", tenant + ":" + desk_token},
                                           {"INGESTD_REVIEW__SECURE_COOKIE", "true"},
                                           {"INGESTD_REVIEW__MAX_SESSIONS", "3"},
                                           {"INGESTD_ADMIN__ALLOWED_HOSTS", "ingestd.internal"},
                                           {"INGESTD_ADMIN__HEADER_TIMEOUT_SECONDS", "3"},
                                           {"INGESTD_ADMIN__MAX_CONNECTIONS_PER_ADDRESS", "4"},
                                           {"INGESTD_TRANSCRIPTION__MAX_FILE_BYTES", "1000000"},
                                           {"INGESTD_LOG__FORMAT", "json"}};
    daemon = new test::daemon_process(env, root + "/daemon.log");
    bool ready = test::wait_until(
        [] {
          return http_exchange(admin_port, request_head("GET", "/readyz", admin_port)).status == 200
                 || !daemon->running();
        },
        60s, 100ms);
    ASSERT_TRUE(ready && daemon->running()) << daemon->log_tail();
  }

  static void TearDownTestSuite() {
    delete daemon;
    daemon = nullptr;
    delete db;
    db = nullptr;
  }

  static std::string desk(const std::string& path) { return path; }

  /// The refusal of a hostile body to one endpoint, with the daemon's RSS before and at its peak.
  struct measured {
    reply answer;
    int64_t rss_before_kib = 0;
    int64_t rss_peak_kib = 0;
  };

  measured send_measured(int port, const std::string& head, const body_source& body,
                         const std::string& from) {
    measured m;
    m.rss_before_kib = rss_kib(daemon->pid());
    rss_sampler sampler{daemon->pid()};
    m.answer = http_exchange(port, head, body, from);
    // The daemon may still be discarding what the client sent: the sampler ran throughout.
    m.rss_peak_kib = sampler.stop();
    return m;
  }

  static inline test::pg_schema* db = nullptr;
  static inline test::daemon_process* daemon = nullptr;
  static inline std::string root;
  static inline std::string tenant;
  static inline int admin_port = 0;
  static inline int intake_port = 0;
};

struct target {
  const char* what;
  bool intake;
  std::string method;
  std::string path;
  std::vector<std::string> headers;
  int chunked_status;
  int gzip_status;
};

std::vector<target> targets() {
  std::string doc = "/review/api/documents/0190a8c4-1111-7000-8000-000000000001/approve";
  return {
      {"intake POST /v1/documents (token)",
       true,
       "POST",
       "/v1/documents",
       {"Authorization: Bearer " + intake_token, "Content-Type: application/pdf"},
       413,
       415},
      {"intake POST /v1/documents (no token)",
       true,
       "POST",
       "/v1/documents",
       {"Content-Type: application/pdf"},
       401,
       415},
      {"admin POST /drain (no token)", false, "POST", "/drain", {}, 401, 415},
      {"admin POST /drain (token)",
       false,
       "POST",
       "/drain",
       {"Authorization: Bearer " + admin_token},
       413,
       415},
      {"desk POST /review/login",
       false,
       "POST",
       "/review/login",
       {"Content-Type: application/x-www-form-urlencoded"},
       413,
       415},
      {"desk POST approve (token)",
       false,
       "POST",
       doc,
       {"Authorization: Bearer " + desk_token, "Content-Type: application/json"},
       413,
       415},
      {"desk POST approve (no token)",
       false,
       "POST",
       doc,
       {"Content-Type: application/json"},
       401,
       415},
  };
}

} // namespace

TEST_F(http_bounds_test, a_chunked_body_of_1_5_gb_is_refused_at_once_with_rss_flat) {
  for (auto& t : targets()) {
    int port = t.intake ? intake_port : admin_port;
    auto headers = t.headers;
    headers.push_back("Transfer-Encoding: chunked");
    auto m = send_measured(port, request_head(t.method, t.path, port, headers),
                           chunked_zeros(1'500'000'000ULL), "127.0.0.11");
    auto growth_mib = static_cast<double>(m.rss_peak_kib - m.rss_before_kib) / 1024.0;
    std::cout << "[chunked 1.5 GB] " << t.what << ": " << m.answer.status << " in "
              << m.answer.seconds << " s, " << m.answer.sent << " body bytes sent, RSS "
              << m.rss_before_kib / 1024 << " MiB -> peak " << m.rss_peak_kib / 1024 << " MiB (+"
              << growth_mib << ")\n";
    EXPECT_EQ(m.answer.status, t.chunked_status) << t.what << "\n" << m.answer.head;
    EXPECT_LT(m.answer.seconds, 5.0) << t.what;
    EXPECT_LT(growth_mib, 64.0) << t.what;
    EXPECT_LT(m.answer.sent, uint64_t{64} << 20) << t.what;
  }
  EXPECT_TRUE(daemon->running()) << "POST /drain with a body over its limit drained nothing";
}

TEST_F(http_bounds_test, a_gzip_bomb_is_refused_before_its_body_is_read) {
  auto bomb = gzip_bomb(uint64_t{1} << 30); // 1 GiB of zeros, about 1 MiB compressed
  for (auto& t : targets()) {
    int port = t.intake ? intake_port : admin_port;
    auto headers = t.headers;
    headers.push_back("Content-Encoding: gzip");
    headers.push_back("Content-Length: " + std::to_string(bomb.size()));
    auto m = send_measured(port, request_head(t.method, t.path, port, headers), fixed(bomb),
                           "127.0.0.12");
    auto growth_mib = static_cast<double>(m.rss_peak_kib - m.rss_before_kib) / 1024.0;
    std::cout << "[gzip bomb " << bomb.size() << " B -> 1 GiB] " << t.what << ": "
              << m.answer.status << " in " << m.answer.seconds << " s, RSS +" << growth_mib
              << " MiB\n";
    EXPECT_EQ(m.answer.status, t.gzip_status) << t.what << "\n" << m.answer.head;
    EXPECT_LT(m.answer.seconds, 5.0) << t.what;
    EXPECT_LT(growth_mib, 64.0) << t.what;
  }
  // Also chunked and compressed, or a coding in the transfer.
  auto r = http_exchange(
      intake_port,
      request_head("POST", "/v1/documents", intake_port,
                   {"Authorization: Bearer " + intake_token, "Transfer-Encoding: gzip, chunked"}),
      fixed(bomb), "127.0.0.12");
  EXPECT_EQ(r.status, 415);
}

TEST_F(http_bounds_test, slow_clients_do_not_block_healthz_and_get_408) {
  // Twelve connections from three addresses trickle a request's headers, a byte a second.
  std::vector<int> slow;
  for (int a = 0; a < 3; ++a)
    for (int i = 0; i < 4; ++i) {
      int fd = connect_from(admin_port, "127.0.0." + std::to_string(21 + a));
      ASSERT_GE(fd, 0);
      slow.push_back(fd);
    }
  std::atomic<bool> stop{false};
  std::thread trickle{[&] {
    std::string text
        = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(200, 's');
    for (size_t i = 0; i < text.size() && !stop; ++i) {
      for (int fd : slow)
        ::send(fd, &text[i], 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(1s); // the client's pace, not a wait for the server
    }
  }};
  auto started = clock_type::now();
  for (int i = 0; i < 10; ++i) {
    auto r = http_exchange(admin_port, request_head("GET", "/healthz", admin_port), {}, "127.0.0.1",
                           5s);
    EXPECT_EQ(r.status, 200);
    EXPECT_LT(r.seconds, 1.0);
  }
  // admin.header_timeout_seconds is 3: each slow connection gets a 408 and is closed.
  int answered = 0;
  for (int fd : slow) {
    std::string in;
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    while (clock_type::now() - started < 20s && ::poll(&p, 1, 500) >= 0) {
      if (!(p.revents & POLLIN))
        continue;
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        break;
      in.append(buf, static_cast<size_t>(n));
    }
    answered += in.rfind("HTTP/1.1 408", 0) == 0;
    ::close(fd);
  }
  stop = true;
  trickle.join();
  EXPECT_EQ(answered, static_cast<int>(slow.size()));
  EXPECT_LT(std::chrono::duration<double>(clock_type::now() - started).count(), 15.0);
}

TEST_F(http_bounds_test, connections_per_address_are_capped_without_blocking_others) {
  // admin.max_connections_per_address is 4: a fifth from the same address is closed at once.
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    int fd = connect_from(admin_port, "127.0.0.31");
    ASSERT_GE(fd, 0);
    held.push_back(fd);
  }
  auto fifth = http_exchange(admin_port, request_head("GET", "/healthz", admin_port), {},
                             "127.0.0.31", 5s);
  EXPECT_EQ(fifth.status, 0) << fifth.head;
  auto other = http_exchange(admin_port, request_head("GET", "/healthz", admin_port), {},
                             "127.0.0.32", 5s);
  EXPECT_EQ(other.status, 200);
  for (int fd : held)
    ::close(fd);
  EXPECT_TRUE(test::wait_until(
      [] {
        return http_exchange(admin_port, request_head("GET", "/healthz", admin_port), {},
                             "127.0.0.31", 5s)
                   .status
               == 200;
      },
      10s, 100ms));
}

TEST_F(http_bounds_test, a_rebinding_host_is_refused) {
  auto get = [](int port, const std::string& path, const std::string& host,
                std::vector<std::string> extra = {}) {
    extra.push_back("Host: " + host);
    return http_exchange(port, request_head("GET", path, port, extra), {}, "127.0.0.41", 10s)
        .status;
  };
  auto port = std::to_string(admin_port);
  EXPECT_EQ(get(admin_port, "/healthz", "attacker.example:" + port), 421);
  EXPECT_EQ(get(admin_port, "/metrics", "attacker.example"), 421);
  EXPECT_EQ(get(admin_port, "/review/login", "127.0.0.1.attacker.example:" + port), 421);
  EXPECT_EQ(get(intake_port, "/v1/documents/0190a8c4-1111-7000-8000-000000000001",
                "attacker.example", {"Authorization: Bearer " + intake_token}),
            421);
  EXPECT_EQ(get(admin_port, "/healthz", "127.0.0.1:" + port), 200);
  EXPECT_EQ(get(admin_port, "/healthz", "localhost:" + port), 200);
  EXPECT_EQ(get(admin_port, "/healthz", "[::1]:" + port), 200);
  EXPECT_EQ(get(admin_port, "/healthz", "10.1.2.3:" + port), 200); // a pod IP: no DNS involved
  EXPECT_EQ(get(admin_port, "/healthz", "ingestd.internal"), 200); // admin.allowed_hosts
  EXPECT_EQ(get(intake_port, "/v1/documents/0190a8c4-1111-7000-8000-000000000001",
                "ingestd.internal", {"Authorization: Bearer " + intake_token}),
            421); // the intake's own list is empty
}

TEST_F(http_bounds_test, a_foreign_origin_on_a_state_changing_call_is_refused) {
  auto post = [](int port, const std::string& path, std::vector<std::string> headers,
                 const std::string& body = "") {
    headers.push_back("Content-Length: " + std::to_string(body.size()));
    return http_exchange(port, request_head("POST", path, port, headers), fixed(body), "127.0.0.51",
                         10s);
  };
  auto drain = post(admin_port, "/drain",
                    {"Authorization: Bearer " + admin_token, "Origin: http://attacker.example"});
  EXPECT_EQ(drain.status, 403);
  EXPECT_TRUE(daemon->running());
  auto login
      = post(admin_port, "/review/login",
             {"Origin: http://127.0.0.1:1", "Content-Type: application/x-www-form-urlencoded"},
             "name=Eve&token=" + desk_token);
  EXPECT_EQ(login.status, 403);
  auto del = http_exchange(
      intake_port,
      request_head("DELETE", "/v1/ingestions/0190a8c4-1111-7000-8000-000000000001", intake_port,
                   {"Authorization: Bearer " + intake_token, "Origin: null"}),
      {}, "127.0.0.51", 10s);
  EXPECT_EQ(del.status, 403);
  // The page's own origin goes through.
  auto same = post(admin_port, "/review/login",
                   {"Origin: http://127.0.0.1:" + std::to_string(admin_port),
                    "Content-Type: application/x-www-form-urlencoded"},
                   "name=Erin&token=" + desk_token);
  EXPECT_EQ(same.status, 303) << same.head << same.body;
}

TEST_F(http_bounds_test, the_sixth_wrong_sign_in_within_a_minute_gets_429) {
  auto sign_in = [](const std::string& from, const std::string& name, const std::string& token) {
    std::string body = "name=" + name + "&token=" + token;
    return http_exchange(admin_port,
                         request_head("POST", "/review/login", admin_port,
                                      {"Content-Type: application/x-www-form-urlencoded",
                                       "Content-Length: " + std::to_string(body.size())}),
                         fixed(body), from, 10s);
  };
  // Per address.
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(
        sign_in("127.0.0.61", "Mallory" + std::to_string(i), "guess" + std::to_string(i)).status,
        401)
        << i;
  auto sixth = sign_in("127.0.0.61", "Mallory9", "guess9");
  EXPECT_EQ(sixth.status, 429);
  EXPECT_FALSE(sixth.header("Retry-After").empty());
  EXPECT_EQ(sign_in("127.0.0.61", "Erin", desk_token).status, 429)
      << "blocked, even the right token";
  // Bad bearer tokens count for the address as well.
  auto api = http_exchange(
      admin_port,
      request_head("GET", "/review/api/queue", admin_port, {"Authorization: Bearer " + desk_token}),
      {}, "127.0.0.61", 10s);
  EXPECT_EQ(api.status, 429);
  // Per name, from five addresses.
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(sign_in("127.0.0." + std::to_string(70 + i), "Victim", "guess").status, 401) << i;
  EXPECT_EQ(sign_in("127.0.0.80", "Victim", "guess").status, 429);
  EXPECT_EQ(sign_in("127.0.0.80", "Someone", desk_token).status, 303);
  // Each failure is logged with the address and the name, never the token.
  auto log = daemon->log();
  EXPECT_NE(log.find("review: sign-in failed"), std::string::npos);
  EXPECT_NE(log.find("127.0.0.61"), std::string::npos);
  EXPECT_NE(log.find("Victim"), std::string::npos);
  EXPECT_EQ(log.find("guess9"), std::string::npos);
}

TEST_F(http_bounds_test, every_desk_answer_carries_the_security_headers_and_the_cookie_is_secure) {
  std::vector<reply> answers{
      http_exchange(admin_port, request_head("GET", "/review/login", admin_port), {}, "127.0.0.91"),
      http_exchange(admin_port, request_head("GET", "/review/api/queue", admin_port), {},
                    "127.0.0.91"),
      http_exchange(admin_port, request_head("GET", "/review/nowhere", admin_port), {},
                    "127.0.0.91"),
      http_exchange(admin_port,
                    request_head("POST", "/review/login", admin_port,
                                 {"Content-Type: application/x-www-form-urlencoded",
                                  "Content-Length: 999999"}),
                    {}, "127.0.0.91", 10s)};
  for (auto& a : answers) {
    SCOPED_TRACE(a.head);
    auto csp = a.header("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
    EXPECT_NE(csp.find("script-src 'sha256-"), std::string::npos);
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
    EXPECT_EQ(a.header("X-Frame-Options"), "DENY");
    EXPECT_EQ(a.header("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(a.header("Referrer-Policy"), "same-origin");
  }
  EXPECT_EQ(answers[0].status, 200);
  EXPECT_EQ(answers[1].status, 401);
  EXPECT_EQ(answers[2].status, 404);
  EXPECT_EQ(answers[3].status, 413);
  std::string body = "name=Erin&token=" + desk_token;
  auto login = http_exchange(admin_port,
                             request_head("POST", "/review/login", admin_port,
                                          {"Content-Type: application/x-www-form-urlencoded",
                                           "Content-Length: " + std::to_string(body.size())}),
                             fixed(body), "127.0.0.92");
  ASSERT_EQ(login.status, 303);
  auto cookie = login.header("Set-Cookie");
  EXPECT_NE(cookie.find("; Secure"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
}

TEST_F(http_bounds_test, sessions_are_bounded_in_number) {
  // review.max_sessions is 3: a fourth sign-in ends the oldest session.
  auto sign_in = [](const std::string& name) {
    std::string body = "name=" + name + "&token=" + desk_token;
    auto r = http_exchange(admin_port,
                           request_head("POST", "/review/login", admin_port,
                                        {"Content-Type: application/x-www-form-urlencoded",
                                         "Content-Length: " + std::to_string(body.size())}),
                           fixed(body), "127.0.0.101");
    auto c = r.header("Set-Cookie");
    return c.substr(0, c.find(';'));
  };
  auto signed_in = [](const std::string& cookie) {
    return http_exchange(admin_port,
                         request_head("GET", "/review/login", admin_port, {"Cookie: " + cookie}),
                         {}, "127.0.0.101")
                   .status
               == 200
           && http_exchange(
                  admin_port,
                  request_head("GET", "/review/api/queue", admin_port, {"Cookie: " + cookie}), {},
                  "127.0.0.101")
                      .status
                  != 401;
  };
  std::vector<std::string> cookies;
  cookies.reserve(5);
  for (int i = 0; i < 5; ++i)
    cookies.push_back(sign_in("Reviewer" + std::to_string(i)));
  for (auto& c : cookies)
    ASSERT_FALSE(c.empty());
  EXPECT_FALSE(signed_in(cookies[0]));
  EXPECT_FALSE(signed_in(cookies[1]));
  EXPECT_TRUE(signed_in(cookies[2]));
  EXPECT_TRUE(signed_in(cookies[4]));
}

TEST(http_bounds_start, a_short_token_refuses_to_start_naming_its_variable) {
  test::pg_schema db;
  for (auto& [variable, extra] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"INGESTD_INTAKE_TOKEN", {"INGESTD_INTAKE__PORT=" + std::to_string(free_port())}},
           {"INGESTD_INTAKE_ADMIN_TOKEN", {"INGESTD_INTAKE__PORT=" + std::to_string(free_port())}},
           {"INGESTD_ADMIN_TOKEN", {}},
           {"INGESTD_REVIEW_TOKEN", {"INGESTD_REVIEW__ENABLED=true"}}}) {
    std::vector<std::string> env{"INGESTD_DATABASE__URL=" + db.url(),
                                 "INGESTD_ADMIN__PORT=" + std::to_string(free_port()),
                                 variable + "=change-me"};
    env.insert(env.end(), extra.begin(), extra.end());
    auto r = test::run_ingestd({"run"}, env, 60);
    EXPECT_NE(r.exit_code, 0) << variable;
    EXPECT_NE(r.err.find(variable), std::string::npos) << variable << ": " << r.err;
    EXPECT_NE(r.err.find("16"), std::string::npos) << r.err;
  }
}

TEST(http_bounds_errors, a_database_failure_is_answered_without_its_detail) {
  // An intake whose database cannot be reached: the answer names the failure's code only.
  std::string url = "postgresql://ingestd:s3cret@127.0.0.1:1/nowhere";
  auto root = test::make_temp_dir("http_bounds_db");
  auto service = std::make_shared<intake_service>(std::make_shared<pg_intake_repository>(url),
                                                  std::make_shared<filesystem_store>(root));
  intake_server_options opts;
  opts.default_tenant = uuid::v7();
  intake_server server{service, opts};
  ASSERT_TRUE(server.start());
  auto r = http_exchange(
      server.port(),
      request_head("GET", "/v1/documents/0190a8c4-1111-7000-8000-000000000001", server.port()), {},
      "127.0.0.1", 60s);
  EXPECT_EQ(r.status, 503) << r.head << r.body;
  EXPECT_FALSE(r.header("Retry-After").empty());
  for (const char* detail : {"127.0.0.1", "port", "s3cret", "nowhere", "refused"})
    EXPECT_EQ(r.body.find(detail), std::string::npos) << detail << " in " << r.body;
  EXPECT_NE(r.body.find("the service is unavailable"), std::string::npos) << r.body;
  server.stop();
}
