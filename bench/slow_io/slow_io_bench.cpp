// Slow-I/O concurrency: a node embedded in this process (actors/node.hpp: start_node with the
// ingest stage of stages/ingest) over the real postgres_queue, pg_work_repository and
// pg_ingest_repository, instant transcription, and the REAL openai_extractor over the curl engine
// against a stub chat-completions server (a forked process, one epoll thread) that answers every
// request after a fixed delay. Prints throughput against max_in_flight / delay (over the whole run,
// in its steady state, the most the whole run can reach at that steady rate, and the most any node
// could reach over a run of that many: the first job ends after the delay, so a whole run's ratio
// is below 0.9 under 9 x in-flight ingestions), the process's OS threads over the run, and
// resident memory per in-flight job.
//
// With --extractor timer, the extraction is a timer that answers after the same delay with no HTTP
// at all: the difference between the two runs is what the HTTP layer costs per in-flight job.
// With --extractor https the requests go over TLS, as to a hosted provider: nghttpx (Debian's
// nghttp2-proxy) in front of the stub, with a certificate made for the run, negotiates HTTP/2 and
// its streams (100 a connection) share connections; --extractor https1 offers HTTP/1.1 only, a
// connection and a TLS session per request in flight, of which the engine opens at most
// http.https_connections_per_host per lane (256 in all by default).
// The node logs as the daemon does by default (JSON lines at info, a line per job, to stderr:
// `2>/dev/null` keeps them off a terminal); --log-level warn writes none, for their cost.
//
//   bench_slow_io [--ingestions 30000] [--in-flight 10000] [--delay-ms 2000] [--extractor
//   http|https|https1|timer] [--log-level info|warn] [--max-messages 100]
//
// --max-messages is queue.max_messages (the default configuration's is 10; the Postgres queue
// takes up to 100 a receive, what a node of thousands in flight is configured with).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <arpa/inet.h>
#include <fcntl.h>
#if INGESTD_JEMALLOC
#  include <jemalloc/jemalloc.h>
#else
#  include <malloc.h>
#endif
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "actors/node.hpp"
#include "adapters/db/pg_ingest_repository.hpp"
#include "adapters/db/pg_work_repository.hpp"
#include "adapters/extraction/extraction_schema.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/extraction/openai_extractor.hpp"
#include "adapters/http/curl_engine.hpp"
#include "adapters/queue/postgres_queue.hpp"
#include "adapters/support/log.hpp"
#include "adapters/support/timer.hpp"
#include "bench/support/cpu_time.hpp"
#include "messages/error_codes.hpp"
#include "stages/ingest/ingest_stage.hpp"
#include "tests/support/http/connections.hpp"
#include "tests/support/http/local_http_server.hpp"
#include "tests/support/http/tls_front.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr const char* invoice_text
    = "ACME Supplies GmbH\nHauptstrasse 1, 10115 Berlin\nUSt-IdNr.: DE123456789\n\nINVOICE\n"
      "Invoice No.: INV-2024-001\nInvoice Date: 2024-03-15\nDue Date: 2024-04-14\nBill to: Example "
      "Ltd\n\n"
      "Description Qty Unit price Amount\nPaper A4 10 5.00 50.00\nToner 2 25.00 50.00\n\n"
      "Subtotal 100.00 EUR\nVAT 19% 19.00 EUR\nTotal 119.00 EUR\n";

std::string arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i] == "--" + name)
      return argv[i + 1];
  return fallback;
}

void raise_fd_limit() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
}

/// The stub's answer: a chat completion whose content is a schema-valid invoice.
std::string completion_response(const std::string& content) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartObject();
  w.Key("id"), w.String("stub"), w.Key("object"), w.String("chat.completion"), w.Key("model"),
      w.String("stub-model");
  w.Key("choices"), w.StartArray(), w.StartObject();
  w.Key("index"), w.Int(0), w.Key("message"), w.StartObject(), w.Key("role"), w.String("assistant");
  w.Key("content"), w.String(content.c_str(), static_cast<rapidjson::SizeType>(content.size()));
  w.EndObject(), w.Key("finish_reason"), w.String("stop"), w.EndObject(), w.EndArray();
  w.Key("usage"), w.StartObject(), w.Key("prompt_tokens"), w.Int(120), w.Key("completion_tokens"),
      w.Int(80);
  w.Key("total_tokens"), w.Int(200), w.EndObject(), w.EndObject();
  std::string body = buf.GetString();
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: "
         "keep-alive\r\nContent-Length: "
         + std::to_string(body.size()) + "\r\n\r\n" + body;
}

/// The stub server (runs in a forked child): every complete request is answered `delay` later.
[[noreturn]] void run_stub(int listen_fd, std::chrono::milliseconds delay,
                           const std::string& response) {
  int ep = epoll_create1(0);
  epoll_event ev{EPOLLIN, {}};
  ev.data.fd = listen_fd;
  epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev);
  std::unordered_map<int, std::string> inbox;
  std::deque<std::pair<clock_type::time_point, int>> due;
  std::vector<epoll_event> events(1024);
  for (;;) {
    int timeout = -1;
    if (!due.empty())
      timeout = static_cast<int>(
          std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                   due.front().first - clock_type::now())
                                       .count()
                                   + 1));
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listen_fd) {
        for (;;) {
          int c = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK);
          if (c < 0)
            break;
          epoll_event cev{EPOLLIN, {}};
          cev.data.fd = c;
          epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
        }
        continue;
      }
      char buf[16384];
      ssize_t got;
      while ((got = read(fd, buf, sizeof buf)) > 0)
        inbox[fd].append(buf, static_cast<size_t>(got));
      if (got == 0) {
        close(fd);
        inbox.erase(fd);
        continue;
      }
      auto& in = inbox[fd];
      auto head_end = in.find("\r\n\r\n");
      if (head_end == std::string::npos)
        continue;
      size_t length = 0;
      auto cl = in.find("Content-Length:");
      if (cl == std::string::npos)
        cl = in.find("content-length:");
      if (cl != std::string::npos && cl < head_end)
        length = std::strtoul(in.c_str() + cl + 15, nullptr, 10);
      if (in.size() < head_end + 4 + length)
        continue;
      in.erase(0, head_end + 4 + length);
      due.emplace_back(clock_type::now() + delay, fd);
    }
    auto now = clock_type::now();
    while (!due.empty() && due.front().first <= now) {
      int fd = due.front().second;
      due.pop_front();
      size_t off = 0;
      while (off < response.size()) {
        auto w = write(fd, response.data() + off, response.size() - off);
        if (w <= 0)
          break;
        off += static_cast<size_t>(w);
      }
    }
  }
}

int thread_count() {
  int n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator{"/proc/self/task"})
    ++n;
  return n;
}

long rss_kb() {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atol(line.c_str() + 6);
  return 0;
}

/// Bytes handed out by malloc and not freed yet (the heap part of the resident memory), as the
/// allocator the build links counts them.
long heap_kb() {
#if INGESTD_JEMALLOC
  uint64_t epoch = 1;
  size_t size = sizeof epoch;
  ::mallctl("epoch", &epoch, &size, &epoch, size); // refreshes the statistics
  size_t allocated = 0;
  size = sizeof allocated;
  if (::mallctl("stats.allocated", &allocated, &size, nullptr, 0) != 0)
    return 0;
  return static_cast<long>(allocated / 1024);
#else
  auto m = mallinfo2();
  return static_cast<long>((m.uordblks + m.hblkhd) / 1024);
#endif
}

/// An extractor that answers after a fixed delay from a timer thread: the slow provider without
/// HTTP.
class timer_extractor : public extractor {
public:
  timer_extractor(timer& t, std::chrono::milliseconds delay, extraction answer)
      : timer_{t}, delay_{delay}, answer_{std::move(answer)} {}
  void extract(std::string, callback<extraction> done) override {
    timer_.after(delay_, [this, done = std::move(done)]() mutable { done(answer_); });
  }
  std::string name() const override { return "timer"; }

private:
  timer& timer_;
  std::chrono::milliseconds delay_;
  extraction answer_;
};

/// Every document (documents/...) reads as the invoice; nothing else was stored before (no
/// transcription of an earlier attempt to resume from).
class memory_store : public object_store {
public:
  void get(std::string key, size_t, callback<std::string> done) override {
    if (key.rfind("documents/", 0) == 0)
      return done(std::string{invoice_text});
    done(error::make_permanent(errc::storage_not_found, "no object " + key));
  }
  void put(std::string, std::string, std::string, callback<void> done) override {
    done(result<void>{});
  }
  void exists(std::string, callback<bool> done) override { done(false); }
  void remove(std::string, callback<void> done) override { done(result<void>{}); }
  void list(std::string, callback<std::vector<std::string>> done) override {
    done(std::vector<std::string>{});
  }
  std::string name() const override { return "memory"; }
};

class instant_transcriber : public transcriber {
public:
  void transcribe(transcription_request request, callback<transcription> done) override {
    transcription t;
    t.text = request.bytes;
    t.pages.push_back(transcription_page{1, request.bytes, 1.0, {}});
    t.page_count = 1;
    t.quality_score = 1.0;
    t.provider = "instant";
    done(std::move(t));
  }
  std::string name() const override { return "instant"; }
};

} // namespace

int main(int argc, char** argv) {
  int n = std::stoi(arg(argc, argv, "ingestions", "30000"));
  int in_flight = std::stoi(arg(argc, argv, "in-flight", "10000"));
  std::chrono::milliseconds delay{std::stoi(arg(argc, argv, "delay-ms", "2000"))};
  auto extractor_kind = arg(argc, argv, "extractor", "http");
  if (extractor_kind != "http" && extractor_kind != "https" && extractor_kind != "https1"
      && extractor_kind != "timer") {
    std::fprintf(stderr, "--extractor must be http, https, https1 or timer, not %s\n",
                 extractor_kind.c_str());
    return 2;
  }
  bool tls = extractor_kind == "https" || extractor_kind == "https1";
  auto log_level = arg(argc, argv, "log-level", "info");
  int max_messages = std::stoi(arg(argc, argv, "max-messages", "100"));
  raise_fd_limit();
  log::setup("json", log_level);

  auto invoice = local_extractor{}.run(invoice_text);
  if (auto valid = validate_extraction_json(invoice.structured_data); !valid) {
    std::fprintf(stderr, "the stub's invoice is not schema-valid: %s\n",
                 valid.error().describe().c_str());
    return 1;
  }
  // The stub goes into its own process before this one starts any thread.
  int listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listen_fd < 0 || bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || listen(listen_fd, 65535) != 0) {
    std::perror("bench_slow_io: the stub's socket");
    return 1;
  }
  socklen_t len = sizeof addr;
  getsockname(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len);
  auto port = ntohs(addr.sin_port);
  pid_t stub = fork();
  if (stub == 0)
    run_stub(listen_fd, delay, completion_response(invoice.structured_data));
  close(listen_fd);
  // The TLS front and its certificate, for --extractor https and https1.
  auto tls_dir
      = std::filesystem::temp_directory_path() / ("bench_slow_io_tls_" + std::to_string(getpid()));
  std::unique_ptr<test::tls_front> front;
  if (tls) {
    try {
      std::filesystem::create_directories(tls_dir);
      auto [cert, key] = test::make_self_signed_cert(tls_dir.string());
      front = std::make_unique<test::tls_front>(
          port, cert, key, extractor_kind == "https" ? "h2,http/1.1" : "http/1.1");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_slow_io: %s\n", e.what());
      kill(stub, SIGKILL);
      waitpid(stub, nullptr, 0);
      std::filesystem::remove_all(tls_dir);
      return 1;
    }
  }
  auto stop_helpers = [&] {
    kill(stub, SIGKILL);
    waitpid(stub, nullptr, 0);
    front.reset();
    if (tls)
      std::filesystem::remove_all(tls_dir);
  };

  std::unique_ptr<test::pg_schema> db;
  try {
    db = std::make_unique<test::pg_schema>(true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_slow_io: %s\n", e.what());
    stop_helpers();
    return 1;
  }
  db->query("INSERT INTO document (id, tenant_id, content_hash, file_path, mime_type) "
            "SELECT d, gen_random_uuid(), d::text, 'documents/' || d || '.txt', 'text/plain' "
            "FROM (SELECT gen_random_uuid() AS d FROM generate_series(1, $1::integer)) x",
            {std::to_string(n)});
  db->query("INSERT INTO ingestion (id, document_id, uploaded_by) SELECT gen_random_uuid(), id, "
            "gen_random_uuid() FROM document");
  db->query("INSERT INTO work_item (id, stage, document_id, tenant_id) SELECT i.id, 'ingest', "
            "d.id, d.tenant_id "
            "FROM ingestion AS i JOIN document AS d ON d.id = i.document_id");
  db->query("INSERT INTO queue_message (id, queue_name, body) SELECT gen_random_uuid(), 'slow', "
            "id::text FROM ingestion");
  db->query("ANALYZE");

  if (extractor_kind != "timer")
    std::printf("slow-I/O concurrency: EMBEDDED node, real postgres_queue + pg_work_repository + "
                "pg_ingest_repository, instant transcription, openai_extractor over the curl "
                "engine against a stub answering after %lld ms%s\n",
                static_cast<long long>(delay.count()),
                extractor_kind == "https" ? ", over TLS offering HTTP/2 (nghttpx in front)"
                : extractor_kind == "https1"
                    ? ", over TLS offering HTTP/1.1 only (nghttpx in front)"
                    : "");
  else
    std::printf("slow-I/O concurrency: EMBEDDED node, real postgres_queue + pg_work_repository + "
                "pg_ingest_repository, instant transcription, an extractor that answers from a "
                "timer after %lld ms "
                "(no HTTP)\n",
                static_cast<long long>(delay.count()));
  std::printf("  ingestions %d, max_in_flight %d, queue.max_messages %d, log level %s\n", n,
              in_flight, max_messages, log_level.c_str());
  std::fflush(stdout);
  long rss_before = rss_kb();
  long heap_before = heap_kb();
  int threads_before = thread_count();
  {
    caf::actor_system_config cfg;
    configure_scheduler(cfg); // as `ingestd run`
    caf::actor_system sys{cfg};
    curl_engine_options engine;
    if (tls)
      engine.ca_file = (tls_dir / "cert.pem").string();
    auto http = std::make_shared<curl_engine>(engine);
    openai_options o;
    o.base_url = tls ? front->base_url() : "http://127.0.0.1:" + std::to_string(port);
    o.model = "stub-model";
    o.request_timeout = std::chrono::seconds{120};
    o.connect_timeout = std::chrono::seconds{30};
    auto ports = std::make_shared<ingest_ports>();
    ports->db = std::make_shared<pg_ingest_repository>(db->url(), pg_ingest_options{4});
    ports->storage = std::make_shared<memory_store>();
    ports->ocr = std::make_shared<instant_transcriber>();
    if (extractor_kind != "timer")
      ports->extract = std::make_shared<openai_extractor>(*http, *http, o); // as ingestd run
    else
      ports->extract = std::make_shared<timer_extractor>(*http, delay, invoice);
    ingest_class cls;
    cls.queue = std::make_shared<postgres_queue>(db->url(), "slow", postgres_queue_options{2});
    cls.queue_name = "slow";
    auto ctx = std::make_shared<node_context>();
    ctx->settings.worker_id = "bench";
    ctx->settings.max_in_flight = in_flight;
    ctx->settings.max_messages = max_messages;
    ctx->settings.wait_time = std::chrono::seconds{1};
    ctx->settings.step_timeout = std::chrono::seconds{300};
    ctx->work = std::make_shared<pg_work_repository>(db->url(), pg_work_options{4});
    ctx->stages = {make_ingest_stage(ports, ingest_settings{}, cls)};
    std::atomic<int> completed{0}, other{0}, finished{0};
    std::promise<void> all_done;
    // Steady state: from the 10th to the 90th percentile of completions (no ramp-up, no tail).
    std::atomic<int64_t> t1_ns{0}, t10_ns{0}, t90_ns{0}, t100_ns{0};
    std::mutex mtx;
    std::string first_other;
    ctx->observer = [&](const job_outcome& x) {
      if (x.result != job_result::completed) {
        std::lock_guard g{mtx};
        if (first_other.empty())
          first_other = x.detail;
        ++other;
      } else {
        ++completed;
      }
      // One counter, so that exactly one outcome is the n-th (two outcomes at once would both
      // see the sum of two counters at n, and set the promise twice).
      auto done_now = ++finished;
      auto now_ns = clock_type::now().time_since_epoch().count();
      if (done_now == 1)
        t1_ns = now_ns;
      if (done_now == n / 10)
        t10_ns = now_ns;
      if (done_now == n * 9 / 10)
        t90_ns = now_ns;
      if (done_now == n) {
        t100_ns = now_ns;
        all_done.set_value();
      }
    };
    std::promise<void> stopped;
    node_options opts;
    opts.sweeper = false;
    opts.on_stopped = [&] { stopped.set_value(); };
    auto db_cpu0 = bench::database_cpu_seconds();
    auto node_cpu0 = bench::process_cpu_seconds();
    auto t0 = clock_type::now();
    auto w = start_node(sys, ctx, opts);
    auto done = all_done.get_future();
    int threads_min = 1 << 30, threads_max = 0;
    long rss_most = 0, heap_most = 0;
    int64_t peak_in_flight = 0;
    // The node's connections to the server it calls (the stub, or the TLS front before it).
    int server_port = front ? front->port() : port;
    int connections_most = 0;
    int64_t samples = 0;
    while (done.wait_for(std::chrono::milliseconds{250}) != std::future_status::ready) {
      auto t = thread_count();
      threads_min = std::min(threads_min, t);
      threads_max = std::max(threads_max, t);
      auto f = ctx->admission->in_flight();
      // The most memory of the run, wherever the jobs were then (when the count first peaks, many
      // are still being claimed and hold no HTTP transfer yet), over the most jobs in flight.
      rss_most = std::max(rss_most, rss_kb());
      peak_in_flight = std::max(peak_in_flight, f);
      // Every 2 s only, for what they cost the node: glibc's mallinfo2 walks every arena's free
      // lists under its lock (20-70 ms with the heap of 10,000 jobs, while the node's threads wait
      // to allocate), and a read of /proc/net/tcp with 20,000 loopback sockets costs its cores too.
      if (++samples % 8 == 1) {
        heap_most = std::max(heap_most, heap_kb());
        if (extractor_kind != "timer")
          connections_most = std::max(connections_most, test::connections_to(server_port));
      }
      if (clock_type::now() - t0 > std::chrono::minutes{10}) {
        std::printf("  TIMEOUT after 10 min\n");
        break;
      }
    }
    double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    double db_cpu = bench::database_cpu_seconds() - db_cpu0;
    double node_cpu = bench::process_cpu_seconds() - node_cpu0;
    long heap_at_end = heap_kb();
    double rate = completed / secs;
    double ideal = in_flight / (delay.count() / 1000.0);
    std::printf("  %d completed, %d other%s%s in %.1f s = %.0f ingestions/s; in_flight/delay = "
                "%.0f/s; ratio %.2f "
                "(target >= 0.9; see the whole run's ceiling below)\n",
                completed.load(), other.load(), first_other.empty() ? "" : " (first: ",
                first_other.empty() ? "" : (first_other + ")").c_str(), secs, rate, ideal,
                rate / ideal);
    auto since_start = [&](int64_t ns) {
      return ns > 0 ? static_cast<double>(ns - t0.time_since_epoch().count()) / 1e9 : 0.0;
    };
    // Even a node that took no time at all finishes its first job after the delay, then its
    // ingestions at the ideal rate: over a run of n, the whole run's ratio is at most
    // n / (n + delay * ideal) (0.75 for 30,000 at 10,000 in flight and 2 s; 0.9 from 90,000).
    double ceiling = n / (delay.count() / 1000.0 + n / ideal);
    std::printf("  whole run at most, for any node (the delay, then %d at %.0f/s): %.0f "
                "ingestions/s; ratio %.2f\n",
                n, ideal, ceiling, ceiling / ideal);
    std::printf("  completions from the node's start: the first at %.1f s, 10%% at %.1f s, 90%% at "
                "%.1f s, the last at %.1f s\n",
                since_start(t1_ns), since_start(t10_ns), since_start(t90_ns), since_start(t100_ns));
    if (t90_ns > t10_ns && t10_ns > 0) {
      double steady = (n * 0.8) / (static_cast<double>(t90_ns - t10_ns) / 1e9);
      std::printf("  steady state (10th to 90th percentile of completions): %.0f ingestions/s; "
                  "ratio %.2f\n",
                  steady, steady / ideal);
      // No job finishes before the delay, and the work after it (the completion, the next job's
      // claim) waits for the machine: a run takes at least the delay plus its ingestions at the
      // rate the machine finishes them. At the steady rate that bounds the whole run's ratio,
      // however its start is scheduled.
      double bound = std::min(ideal, n / (delay.count() / 1000.0 + n / steady));
      std::printf("  whole run at most, at this steady rate (the delay, then %d at %.0f/s): "
                  "%.0f ingestions/s; ratio %.2f\n",
                  n, steady, bound, bound / ideal);
    }
    std::printf("  node process CPU (user + system, all threads; the stub is another process): "
                "%.1f s = %.0f us per ingestion\n",
                node_cpu, completed > 0 ? node_cpu * 1e6 / completed : 0.0);
    std::printf("  database CPU (every PostgreSQL process of this machine): %.1f s = %.0f us per "
                "ingestion, %.2f cores over the run\n",
                db_cpu, completed > 0 ? db_cpu * 1e6 / completed : 0.0, db_cpu / secs);
    std::printf(
        "  OS threads of the process: %d before the node, %d..%d during the run (includes the "
        "bench's own main thread; the stub is another process)\n",
        threads_before, threads_min, threads_max);
    auto per_job = [&](long before, long most) {
      return peak_in_flight > 0
                 ? static_cast<double>(most - before) / static_cast<double>(peak_in_flight)
                 : 0.0;
    };
    std::printf(
        "  resident memory: %ld kB before, %ld kB at most, %lld jobs in flight at most = %.1f kB "
        "per in-flight job%s\n",
        rss_before, rss_most, static_cast<long long>(peak_in_flight), per_job(rss_before, rss_most),
        extractor_kind == "http"     ? " (each holds one HTTP/1.1 connection to the stub)"
        : extractor_kind == "https1" ? " (each holds one TLS connection, HTTP/1.1)"
        : extractor_kind == "https"  ? " (HTTP/2 streams over shared TLS connections)"
                                     : "");
    std::printf("  of which malloc'd heap: %ld kB before, %ld kB at most (sampled every 2 s) = "
                "%.1f kB per in-flight job\n",
                heap_before, heap_most, per_job(heap_before, heap_most));
    std::printf("  heap after the last job finished: %ld kB (what finished jobs leave behind)\n",
                heap_at_end);
    if (extractor_kind != "timer")
      std::printf("  connections to the %s at most: %d (sampled every 2 s)\n",
                  front ? "TLS front" : "stub", connections_most);
    caf::anon_send(w.coordinator, shutdown_atom_v);
    stopped.get_future().wait_for(std::chrono::seconds{60});
    ctx.reset();
    ports.reset();
    http.reset();
  }
  stop_helpers();
  return 0;
}
