// The daemon's HTTP surfaces from outside, as an operator's tools see them: curl for every intake
// answer, promtool for /metrics, /readyz through a database outage (a TCP proxy that stops) and
// through a drain (SIGTERM while a job waits on a silent LLM).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapters/storage/object_store.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

int listen_socket(int port = 0) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int port_of(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

int free_port() {
  int fd = listen_socket();
  int p = port_of(fd);
  ::close(fd);
  return p;
}

/// A TCP forwarder in front of PostgreSQL: stop() closes the listener and every connection, as a
/// database that went away; start() again on the same port brings it back.
class tcp_proxy {
public:
  explicit tcp_proxy(int target) : target_(target), port_(free_port()) {}
  ~tcp_proxy() { stop(); }
  int port() const { return port_; }
  void start() {
    // The port's old connections may linger a moment after stop(): retry the bind.
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds{20};
    while ((listener_ = listen_socket(port_)) < 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
    ASSERT_GE(listener_, 0);
    running_ = true;
    thread_ = std::thread{[this] { loop(); }};
  }
  void stop() {
    if (!running_)
      return;
    running_ = false;
    thread_.join();
    ::close(listener_);
    std::lock_guard g{mtx_};
    for (int fd : open_) {
      linger hard{1, 0}; // reset, as a dead server's connections are: no lingering states
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : pumps_)
      t.join();
    for (int fd : open_)
      ::close(fd);
    open_.clear();
    pumps_.clear();
  }

private:
  void loop() {
    while (running_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0)
        continue;
      int in = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (in < 0)
        continue;
      int out = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(target_));
      if (::connect(out, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(in);
        ::close(out);
        continue;
      }
      std::lock_guard g{mtx_};
      open_.push_back(in);
      open_.push_back(out);
      pumps_.emplace_back([in, out] { pump(in, out); });
      pumps_.emplace_back([in, out] { pump(out, in); });
    }
  }
  static void pump(int from, int to) {
    char buf[16384];
    for (;;) {
      auto n = ::read(from, buf, sizeof buf);
      // MSG_NOSIGNAL: a peer already reset (the proxy stopped under a live connection) must end
      // this pump, not the test process with SIGPIPE.
      if (n <= 0 || ::send(to, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n)
        break;
    }
    ::shutdown(to, SHUT_RDWR);
    ::shutdown(from, SHUT_RDWR);
  }

  int target_;
  int port_;
  int listener_ = -1;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex mtx_;
  std::vector<int> open_;
  std::vector<std::thread> pumps_;
};

/// `ingestd run` with environment overrides; SIGKILLed by the destructor if still running.
class daemon {
public:
  daemon(const std::map<std::string, std::string>& env, const std::string& log) : log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      for (auto& [k, v] : env)
        ::setenv(k.c_str(), v.c_str(), 1);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      auto bin = test::ingestd_binary();
      ::execl(bin.c_str(), bin.c_str(), "run", static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~daemon() {
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void signal(int sig) { ::kill(pid_, sig); }
  bool running() {
    if (exited_)
      return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true;
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    return !exited_;
  }
  int code() const { return code_; }
  std::string log() const {
    std::ifstream in{log_};
    std::ostringstream ss;
    ss << in.rdbuf();
    auto s = ss.str();
    return s.size() > 6000 ? s.substr(s.size() - 6000) : s;
  }

private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
  std::string log_;
};

bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond())
      return true;
    std::this_thread::sleep_for(50ms);
  }
  return cond();
}

struct reply {
  int status = 0;
  std::string body;
};

std::string shell(const std::string& cmd, int* code = nullptr) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  int st = ::pclose(p);
  if (code)
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

/// curl with `args` (already quoted); the status code and the body.
reply curl(const std::string& args) {
  auto body = test::make_temp_dir("curl") + "/body";
  auto code = shell("curl -s -o '" + body + "' -w '%{http_code}' " + args);
  reply r;
  r.status = std::atoi(code.c_str());
  std::ifstream in{body};
  std::ostringstream ss;
  ss << in.rdbuf();
  r.body = ss.str();
  fs::remove_all(fs::path{body}.parent_path());
  return r;
}

std::string json_string(const std::string& body, const std::string& key) {
  auto k = "\"" + key + "\":\"";
  auto i = body.find(k);
  if (i == std::string::npos)
    return {};
  i += k.size();
  return body.substr(i, body.find('"', i) - i);
}

class admin_test : public ::testing::Test {
protected:
  void SetUp() override {
    db = std::make_unique<test::pg_schema>();
    root = test::make_temp_dir("admin");
    corpus = test::source_dir() + "/tests/fixtures/corpus/";
    admin_port = free_port();
    intake_port = free_port();
  }
  void TearDown() override { fs::remove_all(root); }

  /// The daemon's environment, with its queues made as `ingestd queues create` makes them.
  std::map<std::string, std::string> env(const std::string& database_url) {
    auto queue = test::unique_name("q");
    test::create_stage_queues(database_url, queue);
    return {{"INGESTD_DATABASE__URL", database_url},
            {"INGESTD_QUEUE__NAME", queue},
            {"INGESTD_QUEUE__WAIT_TIME_SECONDS", "1"},
            {"INGESTD_STORAGE__ROOT", root + "/storage"},
            {"INGESTD_ADMIN__PORT", std::to_string(admin_port)},
            {"INGESTD_INTAKE__PORT", std::to_string(intake_port)},
            {"INGESTD_LOG__FORMAT", "json"}};
  }
  std::string admin(const std::string& path) {
    return "'http://127.0.0.1:" + std::to_string(admin_port) + path + "'";
  }
  std::string intake(const std::string& path) {
    return "'http://127.0.0.1:" + std::to_string(intake_port) + path + "'";
  }
  void wait_ready(daemon& d) {
    ASSERT_TRUE(
        wait_until([&] { return curl(admin("/readyz")).status == 200 || !d.running(); }, 30s))
        << d.log();
    ASSERT_TRUE(d.running()) << d.log();
  }

  std::unique_ptr<test::pg_schema> db;
  std::string root, corpus;
  int admin_port = 0, intake_port = 0;
};

// With the admin token, which acts for any tenant that a request names.
TEST_F(admin_test, http_intake_answers_every_status_code) {
  auto e = env(db->url());
  e["INGESTD_INTAKE_ADMIN_TOKEN"] = "s3cret-intake-token-0123";
  e["INGESTD_INTAKE__DEFAULT_TENANT"] = "";
  e["INGESTD_TRANSCRIPTION__MAX_FILE_BYTES"] = "100000";
  daemon d{e, root + "/daemon.log"};
  wait_ready(d);
  const std::string auth = " -H 'Authorization: Bearer s3cret-intake-token-0123' ";
  const std::string tenant = " -H 'X-Tenant-Id: 0190a8c4-1111-7000-8000-000000000001' ";
  auto pdf
      = " --data-binary '@" + corpus + "inv01_en_classic.pdf' -H 'Content-Type: application/pdf' ";

  EXPECT_EQ(curl(tenant + pdf + intake("/v1/documents")).status, 401);
  EXPECT_EQ(
      curl(" -H 'Authorization: Bearer wrong' " + tenant + pdf + intake("/v1/documents")).status,
      401);
  EXPECT_EQ(curl(intake("/v1/documents/0190a8c4-1111-7000-8000-000000000001")).status, 401);

  auto created = curl(auth + tenant + pdf + intake("/v1/documents"));
  ASSERT_EQ(created.status, 202) << created.body << d.log();
  EXPECT_NE(created.body.find("\"status\":\"new\""), std::string::npos) << created.body;
  auto doc = json_string(created.body, "document_id");
  auto ing = json_string(created.body, "ingestion_id");
  ASSERT_FALSE(doc.empty());

  auto dup = curl(auth + tenant + pdf + intake("/v1/documents"));
  EXPECT_EQ(dup.status, 200) << dup.body;
  EXPECT_EQ(json_string(dup.body, "document_id"), doc);
  EXPECT_EQ(json_string(dup.body, "ingestion_id"), ing);
  EXPECT_NE(dup.body.find("\"status\":\"duplicate\""), std::string::npos);

  // Multipart, another tenant, a scan: new work.
  auto multi = curl(auth + " -F 'tenant_id=0190a8c4-2222-7000-8000-000000000002' -F 'file=@"
                    + corpus + "inv02_de_modern.pdf' " + intake("/v1/documents"));
  EXPECT_EQ(multi.status, 202) << multi.body;

  auto no_tenant = curl(auth + pdf + intake("/v1/documents"));
  EXPECT_EQ(no_tenant.status, 400) << no_tenant.body;
  EXPECT_NE(no_tenant.body.find("intake.missing_tenant"), std::string::npos);
  EXPECT_EQ(curl(auth + " -H 'X-Tenant-Id: nope' " + pdf + intake("/v1/documents")).status, 400);
  EXPECT_EQ(curl(auth + tenant + " --data-binary '' " + intake("/v1/documents")).status, 400);

  auto text = curl(auth + tenant + " --data-binary '@" + corpus
                   + "bad/notes.txt' -H 'Content-Type: text/plain' " + intake("/v1/documents"));
  EXPECT_EQ(text.status, 415) << text.body;

  // Over the limit: one just over (refused by intake) and one far over (refused before reading).
  for (size_t size : {120000u, 400000u}) {
    auto big = root + "/big.pdf";
    std::ofstream{big, std::ios::binary} << "%PDF-1.4\n" << std::string(size, 'x');
    std::string upload = auth + tenant;
    upload.append(" --data-binary '@").append(big).append("' ").append(intake("/v1/documents"));
    auto r = curl(upload);
    EXPECT_EQ(r.status, 413) << size << " " << r.body;
  }

  auto got = curl(auth + tenant + intake("/v1/documents/" + doc));
  EXPECT_EQ(got.status, 200) << got.body;
  EXPECT_NE(got.body.find("\"state\""), std::string::npos) << got.body;
  EXPECT_NE(got.body.find("\"structured_data\""), std::string::npos) << got.body;
  auto gi = curl(auth + tenant + intake("/v1/ingestions/" + ing));
  EXPECT_EQ(gi.status, 200) << gi.body;
  EXPECT_NE(gi.body.find("\"events\""), std::string::npos) << gi.body;
  EXPECT_NE(gi.body.find("\"attempt_count\""), std::string::npos) << gi.body;
  EXPECT_EQ(
      curl(auth + tenant + intake("/v1/documents/0190a8c4-1111-7000-8000-00000000ffff")).status,
      404);
  EXPECT_EQ(curl(auth + tenant + intake("/v1/ingestions/not-a-uuid")).status, 400);
  // A read names its tenant (there is no default tenant here).
  auto unscoped = curl(auth + intake("/v1/documents/" + doc));
  EXPECT_EQ(unscoped.status, 400) << unscoped.body;
  EXPECT_NE(unscoped.body.find("intake.missing_tenant"), std::string::npos) << unscoped.body;

  // The local pipeline completes the document; GET shows it ready with its data.
  ASSERT_TRUE(wait_until(
      [&] {
        auto body = curl(auth + tenant + intake("/v1/documents/" + doc)).body;
        return body.find("\"state\" : \"ready\"") != std::string::npos
               || body.find("\"state\":\"ready\"") != std::string::npos;
      },
      60s))
      << curl(auth + tenant + intake("/v1/documents/" + doc)).body << d.log();

  d.signal(SIGTERM);
  ASSERT_TRUE(wait_until([&] { return !d.running(); }, 30s)) << d.log();
  EXPECT_EQ(d.code(), 0) << d.log();
}

// Each tenant's token acts for its own tenant only: the tenant comes from the token, never from
// X-Tenant-Id alone, and another tenant's documents and ingestions answer 404 on every route,
// exactly as unknown ids do, so that their existence does not leak. Tenant A's token is made by
// `ingestd tenants add` (the database keeps its digest); tenant B's comes from the environment.
TEST_F(admin_test, a_tenants_token_acts_for_its_own_tenant_on_every_route) {
  const std::string tenant_b = "0190a8c4-bbbb-7000-8000-00000000000b";
  const std::string token_b = "tenant-b-token-0123456789";
  auto tenants = [&](const std::vector<std::string>& args) {
    return test::run_ingestd(args, {"INGESTD_DATABASE__URL=" + db->url()});
  };
  auto added = tenants({"tenants", "add", "acme", "--json"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  auto tenant_a = json_string(added.out, "id");
  auto token_a = json_string(added.out, "token");
  ASSERT_EQ(token_a.size(), 64U) << added.out;
  EXPECT_EQ(db->scalar("SELECT count(*) FROM tenant_credential WHERE token_sha256 = $1", {token_a}),
            "0");                                              // the digest only
  EXPECT_EQ(tenants({"tenants", "add", "acme"}).exit_code, 1); // the name is taken

  auto e = env(db->url());
  e["INGESTD_INTAKE_TOKEN"] = tenant_b + ":" + token_b;
  e["INGESTD_INTAKE__DEFAULT_TENANT"] = tenant_b;
  daemon d{e, root + "/daemon.log"};
  wait_ready(d);
  const std::string as_a = " -H 'Authorization: Bearer " + token_a + "' ";
  const std::string as_b = " -H 'Authorization: Bearer " + token_b + "' ";
  const std::string naming_a = " -H 'X-Tenant-Id: " + tenant_a + "' ";
  const std::string naming_b = " -H 'X-Tenant-Id: " + tenant_b + "' ";
  const std::string pdf = " --data-binary '@" + corpus + "inv01_en_classic.pdf' ";

  // Tenants have tokens, so the intake is not open: no token, or a wrong one, is a 401.
  EXPECT_EQ(curl(pdf + intake("/v1/documents")).status, 401);
  EXPECT_EQ(curl(" -H 'Authorization: Bearer " + std::string(64, 'a') + "' " + pdf
                 + intake("/v1/documents"))
                .status,
            401);
  // A's token cannot submit for B by naming B, in a header or a form field.
  auto forged = curl(as_a + naming_b + pdf + intake("/v1/documents"));
  EXPECT_EQ(forged.status, 403) << forged.body;
  EXPECT_NE(forged.body.find("intake.forbidden_tenant"), std::string::npos) << forged.body;
  auto forged_form = curl(as_a + " -F 'tenant_id=" + tenant_b + "' -F 'file=@" + corpus
                          + "inv01_en_classic.pdf' " + intake("/v1/documents"));
  EXPECT_EQ(forged_form.status, 403) << forged_form.body;
  EXPECT_EQ(db->scalar("SELECT count(*) FROM document"), "0");

  auto created = curl(as_a + pdf + intake("/v1/documents"));
  ASSERT_EQ(created.status, 202) << created.body << d.log();
  auto doc = json_string(created.body, "document_id");
  auto ing = json_string(created.body, "ingestion_id");
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(db->scalar("SELECT tenant_id FROM document WHERE id = $1", {doc}), tenant_a);
  EXPECT_EQ(curl(as_a + intake("/v1/documents/" + doc)).status, 200);
  EXPECT_EQ(curl(as_a + naming_a + intake("/v1/ingestions/" + ing)).status, 200);

  // B, on every route, finds nothing of A's: the same answer as an unknown id.
  auto unknown = curl(as_b + intake("/v1/documents/0190a8c4-1111-7000-8000-00000000ffff"));
  ASSERT_EQ(unknown.status, 404) << unknown.body;
  auto unknown_ing
      = curl(as_b + " -X DELETE " + intake("/v1/ingestions/0190a8c4-1111-7000-8000-00000000ffff"));
  ASSERT_EQ(unknown_ing.status, 404) << unknown_ing.body;
  const auto doc_url = intake("/v1/documents/" + doc);
  const auto ing_url = intake("/v1/ingestions/" + ing);
  const auto cancel_url = " -X DELETE " + ing_url;
  for (const auto& caller : {as_b, as_b + naming_b}) {
    auto foreign_doc = curl(caller + doc_url);
    EXPECT_EQ(foreign_doc.status, 404) << foreign_doc.body;
    EXPECT_EQ(foreign_doc.body, unknown.body);
    auto foreign_ing = curl(caller + ing_url);
    EXPECT_EQ(foreign_ing.status, 404) << foreign_ing.body;
    EXPECT_EQ(foreign_ing.body.find(ing), std::string::npos) << foreign_ing.body;
    auto foreign_cancel = curl(caller + cancel_url);
    EXPECT_EQ(foreign_cancel.status, 404) << foreign_cancel.body;
    EXPECT_EQ(foreign_cancel.body, unknown_ing.body);
  }
  // ... and naming A does not help it.
  EXPECT_EQ(curl(as_b + naming_a + intake("/v1/documents/" + doc)).status, 403);
  EXPECT_EQ(curl(as_b + naming_a + " -X DELETE " + intake("/v1/ingestions/" + ing)).status, 403);
  EXPECT_EQ(db->scalar("SELECT count(*) FROM ingestion WHERE status = 'cancelled'"), "0");
  // The same file from B is B's own document, not a duplicate of A's.
  auto own_b = curl(as_b + pdf + intake("/v1/documents"));
  EXPECT_EQ(own_b.status, 202) << own_b.body;
  EXPECT_NE(json_string(own_b.body, "document_id"), doc);

  // A rotated token: the old one opens nothing from then on, the new one works.
  auto rotated = tenants({"tenants", "rotate-token", "acme", "--json"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  auto new_token = json_string(rotated.out, "token");
  ASSERT_EQ(new_token.size(), 64U);
  EXPECT_EQ(curl(as_a + intake("/v1/documents/" + doc)).status, 401);
  EXPECT_EQ(curl(" -H 'Authorization: Bearer " + new_token + "' " + intake("/v1/documents/" + doc))
                .status,
            200);
  // Its completion is counted for its tenant in /metrics.
  const std::string completed_a
      = "ingestd_tenant_completed_total{tenant=\"" + tenant_a + "\",stage=\"ingest\"} 1";
  EXPECT_TRUE(wait_until(
      [&] { return curl(admin("/metrics")).body.find(completed_a) != std::string::npos; }, 60s))
      << curl(admin("/metrics")).body;
  // Its use of the providers is A's: one ingestion, completed, its pages read locally.
  auto used = tenants({"usage", "--tenant", tenant_a, "--since", "1d", "--json"});
  ASSERT_EQ(used.exit_code, 0) << used.err;
  EXPECT_EQ(json_string(used.out, "tenant_name"), "acme") << used.out;
  EXPECT_NE(used.out.find("\"ingestions\":1,\"completed\":1,"), std::string::npos) << used.out;
  EXPECT_EQ(used.out.find("\"local_pages\":0"), std::string::npos) << used.out;
  EXPECT_EQ(used.out.find(tenant_b), std::string::npos) << used.out;
  auto listed = tenants({"tenants", "list", "--json"});
  EXPECT_EQ(listed.exit_code, 0);
  EXPECT_NE(listed.out.find("\"name\":\"acme\""), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find(new_token), std::string::npos) << listed.out;

  d.signal(SIGTERM);
  ASSERT_TRUE(wait_until([&] { return !d.running(); }, 30s)) << d.log();
  EXPECT_EQ(d.code(), 0) << d.log();
}

TEST_F(admin_test, metrics_pass_promtool_and_readyz_follows_the_database) {
  auto target = std::atoi(test::env_or("INGESTD_TEST_DATABASE_PORT", "55432").c_str());
  tcp_proxy proxy{target};
  proxy.start();
  auto url = db->url();
  auto at = url.find(":" + std::to_string(target));
  ASSERT_NE(at, std::string::npos) << url;
  url.replace(at, std::to_string(target).size() + 1, ":" + std::to_string(proxy.port()));
  daemon d{env(url), root + "/daemon.log"};
  wait_ready(d);
  EXPECT_EQ(curl(admin("/healthz")).status, 200);

  auto metrics = root + "/metrics.txt";
  int code = -1;
  shell("curl -s -o '" + metrics + "' " + admin("/metrics"));
  auto out = shell("promtool check metrics < '" + metrics + "' 2>&1", &code);
  EXPECT_EQ(code, 0) << out;
  std::ifstream in{metrics};
  std::ostringstream ss;
  ss << in.rdbuf();
  for (auto name : {"ingestd_jobs_in_flight{stage=\"ingest\"}",
                    "ingestd_queue_messages{queue=\"",
                    "state=\"visible\"}",
                    "ingestd_queue_up{queue=\"",
                    "ingestd_node_info{node=\"",
                    "ingestd_queue_oldest_message_age_seconds",
                    "ingestd_claim_wait_seconds_bucket",
                    "ingestd_sweeper_rescues_total",
                    "ingestd_cpu_pool_backlog",
                    "ingestd_llm_tokens_total",
                    "ingestd_heartbeat_lateness_seconds_count",
                    "ingestd_matching_documents{status=\"pending\"}",
                    "ingestd_matching_stalled_documents",
                    "ingestd_outbox_up 1",
                    "ingestd_outbox_pending ",
                    "ingestd_outbox_oldest_age_seconds ",
                    "ingestd_outbox_dead_rows 0",
                    "ingestd_outbox_dead_total 0",
                    "ingestd_tenant_work_up 1",
                    "ingestd_unpack_memory_budget_bytes 1073741824",
                    "ingestd_unpack_memory_reserved_bytes 0",
                    "ingestd_unpack_memory_waiting 0"})
    EXPECT_NE(ss.str().find(name), std::string::npos) << name;

  proxy.stop();
  reply r;
  ASSERT_TRUE(wait_until(
      [&] {
        r = curl(admin("/readyz"));
        return r.status == 503;
      },
      30s))
      << r.body;
  EXPECT_NE(r.body.find("database"), std::string::npos) << r.body;
  EXPECT_EQ(curl(admin("/healthz")).status, 200); // alive all the same
  proxy.start();
  EXPECT_TRUE(wait_until([&] { return curl(admin("/readyz")).status == 200; }, 60s)) << d.log();
  d.signal(SIGTERM);
  EXPECT_TRUE(wait_until([&] { return !d.running(); }, 30s)) << d.log();
}

TEST_F(admin_test, readyz_is_not_ready_while_draining) {
  // An LLM that accepts connections and never answers keeps one job in flight through the drain.
  int silent = listen_socket();
  auto e = env(db->url());
  e["INGESTD_EXTRACTION__PROVIDER"] = "llm";
  e["INGESTD_EXTRACTION__LLM_BASE_URL"] = "http://127.0.0.1:" + std::to_string(port_of(silent));
  // A grace well beyond the 3 s the test gives the node to say it is draining, so that the
  // node is still waiting for the job when the test looks.
  e["INGESTD_WORKER__SHUTDOWN_GRACE_SECONDS"] = "10";
  daemon d{e, root + "/daemon.log"};
  wait_ready(d);
  auto r = curl(" -H 'X-Tenant-Id: 0190a8c4-1111-7000-8000-000000000001' --data-binary '@" + corpus
                + "inv01_en_classic.pdf' " + intake("/v1/documents"));
  ASSERT_EQ(r.status, 202) << r.body;
  auto ing = json_string(r.body, "ingestion_id");
  // Transcribed (the transcription is in storage): the job waits on the LLM.
  auto transcription = std::filesystem::path{root} / "storage"
                       / storage_keys::transcription("0190a8c4-1111-7000-8000-000000000001", ing);
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(transcription); }, 60s)) << d.log();
  d.signal(SIGTERM);
  reply ready;
  ASSERT_TRUE(wait_until(
      [&] {
        ready = curl(admin("/readyz"));
        return ready.status == 503;
      },
      3s));
  EXPECT_NE(ready.body.find("shutting down"), std::string::npos) << ready.body;
  EXPECT_TRUE(d.running()) << "the drain should still be waiting for the job";
  EXPECT_TRUE(wait_until([&] { return !d.running(); }, 30s)) << d.log();
  EXPECT_EQ(d.code(), 0) << d.log();
  ::close(silent);
}

TEST_F(admin_test, post_drain_needs_the_token_then_drains_the_node_to_exit_0) {
  {
    // No INGESTD_ADMIN_TOKEN on the node: no unauthenticated drain.
    auto e = env(db->url());
    e["INGESTD_ADMIN_TOKEN"] = "";
    daemon d{e, root + "/no-token.log"};
    wait_ready(d);
    EXPECT_EQ(curl("-X POST --data '' " + admin("/drain")).status, 403);
    EXPECT_TRUE(d.running());
    d.signal(SIGTERM);
    EXPECT_TRUE(wait_until([&] { return !d.running(); }, 30s)) << d.log();
  }
  auto e = env(db->url());
  e["INGESTD_ADMIN_TOKEN"] = "drain-secret-of-the-node";
  e["INGESTD_WORKER__ID"] = "admin-drained";
  daemon d{e, root + "/daemon.log"};
  wait_ready(d);
  EXPECT_EQ(curl("-X POST --data '' " + admin("/drain")).status, 401);
  EXPECT_EQ(curl("-X POST --data '' -H 'Authorization: Bearer wrong' " + admin("/drain")).status,
            401);
  EXPECT_EQ(curl(admin("/drain")).status, 404) << "a GET drains nothing";
  EXPECT_TRUE(d.running());
  EXPECT_EQ(db->scalar("SELECT state FROM worker_node WHERE id = 'admin-drained'"), "running");
  auto r = curl("-X POST --data '' -H 'Authorization: Bearer drain-secret-of-the-node' "
                + admin("/drain"));
  EXPECT_EQ(r.status, 202) << r.body;
  EXPECT_TRUE(wait_until([&] { return !d.running(); }, 30s)) << d.log();
  EXPECT_EQ(d.code(), 0) << d.log();
  EXPECT_EQ(db->scalar("SELECT state FROM worker_node WHERE id = 'admin-drained'"), "stopped");
}

} // namespace
} // namespace ingestd
