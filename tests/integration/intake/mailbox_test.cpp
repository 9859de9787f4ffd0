// Mailbox intake against a Dovecot server the test starts (TLS on loopback, a certificate made
// for it), the real PostgreSQL and the filesystem store: messages with and without attachments
// become e-mail documents and move to the processed folder; a message that is no e-mail is
// flagged and stays; the same message again (a copy, or read again after a crash before its move)
// is taken once; the server going away in the middle of a pass loses nothing; two readers of one
// mailbox take each message once; wrong credentials and an unknown certificate are named.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <set>
#include <thread>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "intake/intake_service.hpp"
#include "intake/mailbox_intake.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/daemon/daemon_process.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/imap/dovecot_server.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

namespace ingestd {
namespace {

namespace fs = std::filesystem;

/// A supplier's e-mail, with `pdf` attached as invoice.pdf unless empty.
std::string mail(const std::string& message_id, const std::string& subject,
                 const std::string& pdf = "") {
  std::vector<std::pair<std::string, std::string>> attached;
  if (!pdf.empty())
    attached.emplace_back("invoice.pdf", pdf);
  return test::make_email(subject, "Please find our invoice.", attached,
                          "Supplier <billing@supplier.example>", message_id);
}

class mailbox_test : public ::testing::Test {
protected:
  void SetUp() override {
    db = std::make_unique<test::pg_schema>();
    root = test::make_temp_dir("mailbox");
    store = std::make_shared<filesystem_store>(root);
    queue_name = test::unique_name("q");
    test::create_stage_queues(db->url(), queue_name);
    server = std::make_unique<test::dovecot_server>();
  }
  void TearDown() override {
    server.reset();
    fs::remove_all(root);
  }

  /// A reader of the server's INBOX with an intake (and so connections) of its own.
  std::unique_ptr<mailbox_intake>
  reader(int batch_size = 100, const std::string& password = "", const std::string& ca_file = "-",
         std::chrono::milliseconds idle_wait = std::chrono::milliseconds::zero()) {
    intake_options opts;
    opts.ingest_queue = queue_name;
    opts.unpack_queue = "ingestd-unpack";
    auto intake = std::make_shared<intake_service>(
        std::make_shared<pg_intake_repository>(db->url()), store, opts);
    mailbox box;
    box.tenant_id = tenant;
    box.imap.url = server->url("INBOX");
    box.imap.user = server->user();
    box.imap.password = password.empty() ? server->password() : password;
    box.imap.ca_file = ca_file == "-" ? server->ca_file() : ca_file;
    box.imap.timeout = std::chrono::seconds{20};
    return std::make_unique<mailbox_intake>(intake, std::vector<mailbox>{box}, batch_size,
                                            idle_wait);
  }

  int64_t count(const std::string& sql) { return std::stoll(db->scalar(sql)); }
  int64_t ingestions() { return count("SELECT count(*) FROM ingestion"); }

  std::unique_ptr<test::pg_schema> db;
  std::string root, queue_name;
  std::shared_ptr<filesystem_store> store;
  std::unique_ptr<test::dovecot_server> server;
  uuid tenant = uuid::v7();
};

TEST_F(mailbox_test, messages_become_email_documents_and_move_once_taken_in) {
  server->append("INBOX", mail("a1@supplier.example", "Invoice 1",
                               test::corpus_bytes("inv01_en_classic.pdf")));
  server->append("INBOX", mail("a2@supplier.example", "No attachment"));
  auto r = reader();
  auto report = r->read();
  EXPECT_EQ(report.taken, 2);
  EXPECT_EQ(report.duplicates + report.refused + report.failed, 0);
  EXPECT_FALSE(report.more);
  EXPECT_TRUE(server->search("INBOX").empty());
  EXPECT_EQ(server->search("Processed").size(), 2u);
  // Each an e-mail container of the tenant's, for the unpack stage, with where it came from.
  EXPECT_EQ(count("SELECT count(*) FROM ingestion AS i JOIN document AS d ON d.id = i.document_id"
                  " WHERE d.tenant_id = '"
                  + tenant.str()
                  + "' AND d.mime_type = 'message/rfc822'"
                    " AND i.source_metadata->>'channel' = 'imap'"),
            2);
  EXPECT_EQ(db->scalar("SELECT source_metadata->'metadata'->>'mailbox' FROM ingestion LIMIT 1"),
            server->url("INBOX"));
  EXPECT_EQ(count("SELECT count(*) FROM ingestion WHERE source_metadata->>'source_key'"
                  " IN ('message-id:a1@supplier.example', 'message-id:a2@supplier.example')"),
            2);
  EXPECT_EQ(count("SELECT count(*) FROM queue_message WHERE queue_name = 'ingestd-unpack'"), 2);
  // Nothing is waiting: the next pass does nothing.
  auto again = r->read();
  EXPECT_EQ(again.taken + again.duplicates + again.refused + again.failed, 0);
}

TEST_F(mailbox_test, a_message_that_is_no_email_is_flagged_and_stays_while_the_others_go_in) {
  server->append("INBOX", mail("b1@supplier.example", "Before"));
  server->append("INBOX", std::string("\x01\x02 not a message at all \xff\xfe\r\n", 28));
  server->append("INBOX", mail("b3@supplier.example", "After"));
  auto r = reader();
  auto report = r->read();
  EXPECT_EQ(report.taken, 2);
  EXPECT_EQ(report.refused, 1);
  EXPECT_EQ(ingestions(), 2);
  auto flagged = server->search("INBOX", "KEYWORD $IngestdRejected");
  ASSERT_EQ(flagged.size(), 1u);
  EXPECT_EQ(server->search("INBOX"), flagged);
  // Not read again.
  auto again = r->read();
  EXPECT_EQ(again.taken + again.refused + again.failed, 0);
}

TEST_F(mailbox_test, the_same_message_again_is_taken_once) {
  auto message = mail("c1@supplier.example", "Invoice", test::corpus_bytes("inv02_de_modern.pdf"));
  server->append("INBOX", message);
  auto r = reader();
  EXPECT_EQ(r->read().taken, 1);
  // Read again as after a crash between its rows and its move: the same bytes...
  server->append("INBOX", message);
  // ... and a copy delivered again with another Received line: other bytes, the same Message-ID.
  server->append("INBOX", "Received: from relay2.example by mx.buyer.example; Fri, 27 Nov 2026 "
                          "08:01:00 +0000\r\n"
                              + message);
  auto report = r->read();
  EXPECT_EQ(report.taken, 0);
  EXPECT_EQ(report.duplicates, 2);
  EXPECT_EQ(ingestions(), 1);
  EXPECT_EQ(count("SELECT count(*) FROM document"), 1);
  EXPECT_TRUE(server->search("INBOX").empty());
  EXPECT_EQ(server->search("Processed").size(), 3u);
}

TEST_F(mailbox_test, the_server_going_away_in_the_middle_of_a_pass_loses_nothing) {
  for (int i = 1; i <= 4; ++i)
    server->append("INBOX", mail("d" + std::to_string(i) + "@supplier.example",
                                 "Invoice " + std::to_string(i)));
  auto r = reader();
  int seen = 0;
  r->after_message = [&](uint64_t) {
    if (++seen == 2)
      server->stop();
  };
  auto cut = r->read();
  EXPECT_EQ(cut.taken, 2);
  EXPECT_EQ(cut.failed, 1);
  EXPECT_EQ(ingestions(), 2);
  // Down: the pass fails, naming the mailbox; nothing changes.
  auto down = r->read();
  EXPECT_EQ(down.failed, 1);
  EXPECT_EQ(ingestions(), 2);
  server->start();
  auto back = r->read();
  EXPECT_EQ(back.taken, 2);
  EXPECT_EQ(back.failed, 0);
  EXPECT_EQ(ingestions(), 4);
  EXPECT_EQ(count("SELECT count(DISTINCT source_metadata->>'source_key') FROM ingestion"), 4);
  EXPECT_TRUE(server->search("INBOX").empty());
  EXPECT_EQ(server->search("Processed").size(), 4u);
}

TEST_F(mailbox_test, two_readers_of_one_mailbox_take_each_message_once) {
  constexpr int messages = 12;
  for (int i = 1; i <= messages; ++i)
    server->append("INBOX", mail("e" + std::to_string(i) + "@supplier.example",
                                 "Invoice " + std::to_string(i)));
  auto a = reader(5);
  auto b = reader(5);
  std::atomic<int64_t> taken{0};
  auto drain = [&](mailbox_intake& r) {
    for (int pass = 0; pass < 10 && !server->search("INBOX").empty(); ++pass) {
      auto report = r.read();
      EXPECT_EQ(report.failed, 0);
      taken += report.taken;
    }
  };
  std::thread other{[&] { drain(*b); }};
  drain(*a);
  other.join();
  EXPECT_EQ(taken.load(), messages);
  EXPECT_EQ(ingestions(), messages);
  EXPECT_EQ(count("SELECT count(DISTINCT source_metadata->>'source_key') FROM ingestion"),
            messages);
  EXPECT_TRUE(server->search("INBOX").empty());
  EXPECT_EQ(server->search("Processed").size(), static_cast<size_t>(messages));
}

TEST_F(mailbox_test, a_stopping_node_ends_its_pass_after_the_message_in_hand) {
  for (int i = 1; i <= 3; ++i)
    server->append("INBOX", mail("s" + std::to_string(i) + "@supplier.example", "Invoice"));
  auto r = reader();
  r->after_message = [&](uint64_t) { r->stop(); };
  auto report = r->read();
  EXPECT_EQ(report.taken, 1);
  EXPECT_FALSE(report.more);
  EXPECT_EQ(server->search("INBOX").size(), 2u) << "the rest stays for the next node";
  auto later = r->read();
  EXPECT_EQ(later.taken + later.failed, 0);
  EXPECT_EQ(ingestions(), 1);
}

TEST_F(mailbox_test, a_batch_larger_than_a_pass_says_more_is_due) {
  for (int i = 1; i <= 3; ++i)
    server->append("INBOX", mail("f" + std::to_string(i) + "@supplier.example", "Invoice"));
  auto r = reader(2);
  auto first = r->read();
  EXPECT_EQ(first.taken, 2);
  EXPECT_TRUE(first.more);
  auto second = r->read();
  EXPECT_EQ(second.taken, 1);
  EXPECT_FALSE(second.more);
}

TEST_F(mailbox_test, with_idle_a_message_is_read_when_it_arrives_and_stop_ends_the_wait) {
  // Waits of ten minutes: a message gets in only because the server says it came.
  auto r = reader(100, "", "-", std::chrono::minutes{10});
  std::atomic<bool> done{false};
  std::atomic<int> passes{0};
  auto loop = std::async(std::launch::async, [&] {
    for (;;) {
      auto more = r->pass();
      ++passes;
      // `done` is set before stop(): a pass that stop() cut short is seen with it.
      if (done)
        return true;
      if (!more || !*more)
        return false; // the server would have been polled: no IDLE
    }
  });
  // The first pass found nothing and returned at once (its IDLE connection was new); the next
  // waits in IDLE. Whenever the message comes, the server says so, or the pass reads it.
  ASSERT_TRUE(test::wait_until([&] { return passes >= 1; }, std::chrono::seconds{60}));
  server->append("INBOX", mail("idle1@supplier.example", "Invoice", test::pdf_bytes("i1")));
  ASSERT_TRUE(test::wait_until([&] { return ingestions() == 1; }, std::chrono::seconds{60}));
  server->append("INBOX", mail("idle2@supplier.example", "Invoice", test::pdf_bytes("i2")));
  ASSERT_TRUE(test::wait_until([&] { return ingestions() == 2; }, std::chrono::seconds{60}));
  // The pass moves a message out of the inbox after its ingestion is committed, on its thread.
  EXPECT_TRUE(
      test::wait_until([&] { return server->search("INBOX").empty(); }, std::chrono::seconds{60}));
  // Stopping ends the wait at once, not after its ten minutes.
  done = true;
  r->stop();
  ASSERT_EQ(loop.wait_for(std::chrono::seconds{60}), std::future_status::ready);
  EXPECT_TRUE(loop.get());
}

TEST_F(mailbox_test, wrong_credentials_and_an_unknown_certificate_are_named_and_touch_nothing) {
  server->append("INBOX", mail("g1@supplier.example", "Invoice"));
  // The system's authorities do not know the test's certificate.
  auto untrusted = reader(100, "", "");
  auto refused_tls = untrusted->read();
  EXPECT_EQ(refused_tls.failed, 1);
  auto wrong = reader(100, "not-the-password");
  auto refused_login = wrong->read();
  EXPECT_EQ(refused_login.failed, 1);
  EXPECT_EQ(ingestions(), 0);
  EXPECT_EQ(server->search("INBOX").size(), 1u);
  // The error each names, through the mailbox itself.
  imap_settings s;
  s.url = server->url("INBOX");
  s.user = server->user();
  s.password = "not-the-password";
  s.ca_file = server->ca_file();
  imap_mailbox wrong_box{s};
  auto login = wrong_box.waiting();
  ASSERT_FALSE(login);
  EXPECT_EQ(login.error().code, "mailbox.login");
  s.password = server->password();
  s.ca_file = "";
  imap_mailbox untrusted_box{s};
  auto tls = untrusted_box.waiting();
  ASSERT_FALSE(tls);
  EXPECT_EQ(tls.error().code, "mailbox.tls");
}

} // namespace
} // namespace ingestd
