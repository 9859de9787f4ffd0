// The review desk in `ingestd run`: refused at start when misconfigured (an open desk on a public
// bind, no admin port, a bad token setting), and served by a running daemon: a document that
// failed for good is in the desk's queue, a reprocess through the API makes the daemon take it
// again, and the desk's address is in the log.
#include <chrono>
#include <csignal>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>

#include "tests/support/daemon/e2e_setup.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

/// A port free on loopback now (bound to port 0, then closed).
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0
      && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

TEST(review_desk_daemon, refuses_to_start_when_misconfigured) {
  e2e_setup setup;
  struct bad_case {
    std::map<std::string, std::string> env;
    std::string expected;
  };
  std::vector<bad_case> cases{
    {{{"INGESTD_REVIEW__ENABLED", "true"}, {"INGESTD_ADMIN__PORT", "9"}, {"INGESTD_ADMIN__BIND", "0.0.0.0"}},
     "INGESTD_REVIEW_TOKEN"},
    {{{"INGESTD_REVIEW__ENABLED", "true"}, {"INGESTD_ADMIN__PORT", "0"}}, "admin.port"},
    {{{"INGESTD_REVIEW__ENABLED", "true"}, {"INGESTD_ADMIN__PORT", "9"}, {"INGESTD_REVIEW_TOKEN", "a,,b"}},
     "INGESTD_REVIEW_TOKEN"},
  };
  for (auto& c : cases) {
    auto d = setup.start(c.env);
    auto code = d->wait_exit(30s);
    ASSERT_TRUE(code) << d->log_tail();
    EXPECT_EQ(*code, 1) << d->log_tail();
    EXPECT_NE(d->log().find(c.expected), std::string::npos) << d->log_tail();
  }
}

TEST(review_desk_daemon, a_failed_document_is_reviewed_and_reprocessed_through_the_running_daemon) {
  e2e_setup setup;
  auto tenant = std::string{"00000000-0000-7000-8000-0000000000aa"};
  auto ingestions = setup.add_documents(1, doc_kind::corrupt_pdf, {}, tenant);
  setup.enqueue(ingestions);
  int port = free_port();
  auto d = setup.start({{"INGESTD_REVIEW__ENABLED", "true"},
                        {"INGESTD_ADMIN__PORT", std::to_string(port)},
                        {"INGESTD_REVIEW_TOKEN", tenant + ":desk-token"}});
  ASSERT_TRUE(wait_until([&] { return setup.with_status("failed") == 1; }, 60s)) << setup.logs();
  EXPECT_NE(d->log().find("http://127.0.0.1:" + std::to_string(port) + "/review"), std::string::npos)
    << d->log_tail();

  httplib::Client c{"127.0.0.1", port};
  httplib::Headers auth{{"Authorization", "Bearer desk-token"}, {"X-Reviewer", "ops"}};
  auto q = c.Get("/review/api/queue", auth);
  ASSERT_TRUE(q);
  ASSERT_EQ(q->status, 200) << q->body;
  rapidjson::Document queue;
  queue.Parse(q->body.c_str());
  ASSERT_EQ(queue["documents"].Size(), 1u) << q->body;
  std::string document = queue["documents"][0]["document_id"].GetString();
  EXPECT_EQ(std::string{queue["documents"][0]["reason"].GetString()}, "failed");
  auto version = queue["documents"][0]["version"].GetInt64();

  auto r = c.Post(("/review/api/documents/" + document + "/reprocess").c_str(), auth,
                  R"({"version":)" + std::to_string(version) + "}", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  // The daemon takes the new ingestion from the queue and fails it again: the file is corrupt.
  ASSERT_TRUE(wait_until([&] { return setup.with_status("failed") == 2; }, 60s)) << setup.logs();
  EXPECT_EQ(setup.count("SELECT count(*) FROM document WHERE needs_human_review"), 1);
  EXPECT_EQ(setup.count("SELECT count(*) FROM document_review WHERE action = 'reprocess' AND reviewer = 'ops'"), 1);

  d->signal(SIGTERM);
  auto code = d->wait_exit(60s);
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 0) << d->log_tail();
}

} // namespace
