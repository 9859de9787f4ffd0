// Mailbox intake as an operator runs it: `ingestd run` with acquisition.mailboxes reads a Dovecot
// mailbox (TLS on loopback): a supplier's e-mail with two PDF invoices becomes three documents
// (the e-mail and its attachments, read to completion), a message without an attachment is taken
// in too, a message that is no e-mail is flagged and stays, and a message that arrives while the
// node runs is read when it arrives (IMAP IDLE: the poll interval is ten minutes); each taken
// message moves to the processed folder; a stopping node does not wait out its IDLE. A mailbox
// whose password variable is unset stops the node at start with a message naming it.
#include <gtest/gtest.h>

#include "e2e_checks.hpp"
#include "messages/uuid.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/imap/dovecot_server.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

TEST(e2e_daemon_mailbox, a_mailbox_is_read_into_documents_while_the_node_runs) {
  e2e_setup s;
  dovecot_server mail;
  auto tenant = ingestd::uuid::v7().str();
  mail.append("INBOX", make_email("Invoices March", "Two invoices attached.",
                                  {{"inv01.pdf", corpus_bytes("inv01_en_classic.pdf")},
                                   {"inv02.pdf", corpus_bytes("inv02_de_modern.pdf")}},
                                  "Supplier <billing@supplier.example>", "march@supplier.example"));
  mail.append("INBOX", make_email("Question", "When is the next delivery?", {},
                                  "Supplier <billing@supplier.example>", "q@supplier.example"));
  mail.append("INBOX", "\x01\x02 garbage, not an e-mail \r\n");
  std::map<std::string, std::string> settings{
      {"INGESTD_STAGES__ENABLED", "ingest,unpack"},
      {"INGESTD_ACQUISITION__MAILBOXES",
       tenant + ":imaps://" + mail.user() + "@" + mail.url("INBOX").substr(8)},
      {"INGESTD_ACQUISITION__CA_FILE", mail.ca_file()},
      {"INGESTD_ACQUISITION__POLL_INTERVAL_SECONDS", "600"}};

  // Without the password in the environment the node does not start, and says why.
  std::vector<std::string> env;
  auto base = s.daemon_env();
  for (const auto* m : {&base, &settings})
    for (const auto& [k, v] : *m)
      env.push_back(std::string{k}.append("=").append(v));
  auto refused = run_ingestd({"run"}, env, 60);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_CONTAINS(refused.err + refused.out, "INGESTD_MAILBOX_PASSWORD is not set");

  settings["INGESTD_MAILBOX_PASSWORD"] = mail.password();
  auto node = s.start(settings);
  auto done = [&](int64_t ingestions) {
    return s.count("SELECT count(*) FROM ingestion") == ingestions
           && s.count("SELECT count(*) FROM ingestion WHERE status = 'in-progress'") == 0;
  };
  // The e-mail with two PDFs (1 + 2 documents) and the one without an attachment.
  ASSERT_TRUE(wait_until([&] { return done(4); }, 180s)) << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE status = 'completed'"), 4) << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE tenant_id = $1::uuid AND "
                    "mime_type = 'application/pdf' AND structured_data IS NOT NULL",
                    {tenant}),
            2);
  EXPECT_EQ(mail.search("Processed").size(), 2u);
  EXPECT_EQ(mail.search("INBOX", "KEYWORD $IngestdRejected").size(), 1u);
  EXPECT_EQ(mail.search("INBOX").size(), 1u);

  // A message that arrives while the node runs: the server tells the node, which waits in IDLE.
  mail.append("INBOX", make_email("Invoice April", "Attached.",
                                  {{"inv03.pdf", corpus_bytes("inv03_en_compact.pdf")}},
                                  "Supplier <billing@supplier.example>", "april@supplier.example"));
  ASSERT_TRUE(wait_until([&] { return done(6); }, 180s)) << s.logs();
  EXPECT_EQ(mail.search("Processed").size(), 3u);
  EXPECT_CONTAINS(s.logs(), "mailbox message refused");

  node->signal(SIGTERM);
  auto rc = node->wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << node->log_tail();
  EXPECT_EQ(*rc, 0) << node->log_tail();
}
