// Containers end to end: `ingestd submit` takes a ZIP and an e-mail whose attachments
// include a nested 7z, the HTTP intake a .tar.gz; the daemon's unpack stage makes a child document
// of every member and attachment, each child is ingested to completion, the e-mail's body is kept
// on its document, and `ingestd status --documents --json` shows each child's parent. Office
// documents (a DOCX, an ODT inside a ZIP) are read through the PDFs LibreOffice makes of them.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>

#include "adapters/queue/postgres_queue.hpp"
#include "e2e_checks.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/containers/outlook_maker.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

TEST(e2e_daemon_containers, a_zip_and_an_email_become_child_documents_that_all_complete) {
  e2e_setup s;
  std::map<std::string, std::string> extra{{"INGESTD_STAGES__ENABLED", "ingest,unpack"}};

  // Stored, not deflated: "%PDF-" is within the first KiB, and the archive is still a ZIP.
  auto zip
      = make_archive("zip-stored", {{"march/inv01.pdf", corpus_bytes("inv01_en_classic.pdf")},
                                    {"march/inv02.pdf", corpus_bytes("inv02_de_modern.pdf")},
                                    {"readme.txt", "not a document"},
                                    {"march/scan.png", corpus_bytes("inv01_en_classic_scan.png")}});
  ASSERT_NE(zip.substr(0, 1024).find("%PDF-"), std::string::npos);
  auto nested = make_archive("7z", {{"inv04.pdf", corpus_bytes("inv04_de_classic.pdf")}});
  auto eml = make_email("Invoices for March", "Hello, the invoices are attached.",
                        {{"inv03.pdf", corpus_bytes("inv03_en_compact.pdf")}, {"more.7z", nested}});
  auto in = s.root() + "/in";
  std::filesystem::create_directories(in);
  write_file(in + "/march.zip", zip);
  write_file(in + "/mail.eml", eml);
  // A RAR archive (from libarchive's tests: no Debian tool writes RAR) holds two text files, a
  // link and directories: nothing to ingest, each file named as skipped.
  std::filesystem::copy_file(source_dir() + "/tests/fixtures/rar/rar4_basic.rar", in + "/old.rar");

  auto env = s.daemon_env();
  env.insert(extra.begin(), extra.end());
  {
    daemon_process submit{env,
                          s.root() + "/submit.log",
                          {"submit", in + "/march.zip", in + "/mail.eml", in + "/old.rar"}};
    ASSERT_EQ(submit.wait_exit(60s), 0) << submit.log_tail();
  }
  // Intake wrote each container's ingestion with an unpack work item.
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion AS i JOIN work_item AS w ON w.id = i.id "
                    "WHERE w.stage = 'unpack'"),
            3);

  // The HTTP intake of the daemon takes a .tar.gz too.
  auto port = free_tcp_port();
  extra["INGESTD_INTAKE__PORT"] = std::to_string(port);
  extra["INGESTD_INTAKE__BIND"] = "127.0.0.1";
  auto d = s.start(extra);
  httplib::Client http{"127.0.0.1", port};
  http.set_connection_timeout(5);
  auto tgz = make_archive("tar", {{"april/inv05.pdf", corpus_bytes("inv05_en_modern.pdf")}}, true);
  std::string tgz_document;
  ASSERT_TRUE(wait_until(
      [&] {
        auto res = http.Post("/v1/documents", httplib::Headers{{"X-File-Name", "april.tar.gz"}},
                             tgz, "application/octet-stream");
        if (!res || res->status != 202)
          return false;
        rapidjson::Document body;
        body.Parse(res->body.c_str());
        tgz_document = body["document_id"].GetString();
        return true;
      },
      60s))
      << s.logs();
  // The four containers, five documents of theirs (a scan among them), the nested 7z and its
  // document: 11 ingestions.
  ASSERT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM ingestion WHERE status = 'completed'") == 11; },
      180s))
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE status <> 'completed'"), 0) << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion"), 11);
  EXPECT_EQ(s.db().scalar("SELECT mime_type FROM document WHERE member_name = 'march/scan.png'"),
            "image/png");
  // Five containers unpacked (the nested 7z included) and five documents ingested, each work
  // item completed once with its claim cleared; each child's was written by its parent's
  // completion.
  EXPECT_EQ(s.db().scalar("SELECT string_agg(stage || ':' || n, ' ' ORDER BY stage) FROM "
                          "(SELECT stage, count(*) AS n FROM work_item WHERE status = 'completed' "
                          "AND claim_token IS NULL GROUP BY stage) x"),
            "ingest:6 unpack:5");
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE status <> 'completed'"), 0);
  // GET /v1/documents/{id} lists the children, each ready.
  auto got = http.Get("/v1/documents/" + tgz_document);
  ASSERT_TRUE(got && got->status == 200);
  rapidjson::Document doc;
  doc.Parse(got->body.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("children") && doc["children"].IsArray())
      << got->body;
  ASSERT_EQ(doc["children"].Size(), 1u) << got->body;
  EXPECT_STREQ(doc["children"][0]["member_name"].GetString(), "april/inv05.pdf");
  EXPECT_STREQ(doc["children"][0]["state"].GetString(), "ready") << got->body;

  auto parent_of = [&](const std::string& member) {
    return s.db().scalar("SELECT coalesce(p.member_name, p.file_path) FROM document d JOIN "
                         "document p ON p.id = d.parent_id "
                         "WHERE d.member_name = $1",
                         {member});
  };
  EXPECT_NE(parent_of("march/inv01.pdf").find(".zip"), std::string::npos);
  EXPECT_NE(parent_of("inv03.pdf").find(".eml"), std::string::npos);
  EXPECT_EQ(parent_of("inv04.pdf"), "more.7z");
  EXPECT_EQ(s.db().scalar("SELECT mime_type FROM document WHERE member_name = 'more.7z'"),
            "application/x-7z-compressed");
  EXPECT_EQ(
      s.count(
          "SELECT count(*) FROM document WHERE member_name = 'inv04.pdf' AND container_depth = 2"),
      1);
  // Every child is extracted (a completed ingestion with structured data), none for review.
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE parent_id IS NOT NULL AND mime_type = "
                    "'application/pdf' "
                    "AND structured_data ? 'invoice_number'"),
            5);
  EXPECT_NE(s.db()
                .scalar("SELECT body_text FROM document WHERE mime_type = 'message/rfc822'")
                .find("the invoices are attached"),
            std::string::npos);
  // The skipped member is named on its parent.
  EXPECT_NE(
      s.db()
          .scalar("SELECT structured_data::text FROM document WHERE mime_type = 'application/zip' "
                  "AND parent_id IS NULL")
          .find("readme.txt"),
      std::string::npos);
  auto rar = s.db().scalar("SELECT structured_data::text FROM document WHERE mime_type = "
                           "'application/vnd.rar'");
  EXPECT_NE(rar.find("testdir/test.txt"), std::string::npos) << rar;

  daemon_process status{env, s.root() + "/status.log", {"status", "--documents", "--json"}};
  ASSERT_EQ(status.wait_exit(60s), 0) << status.log_tail();
  auto out = status.log();
  EXPECT_NE(out.find("\"parent_id\""), std::string::npos) << out;
  EXPECT_NE(out.find("march/inv02.pdf"), std::string::npos) << out;
}

TEST(e2e_daemon_containers, an_outlook_message_becomes_its_attachments_and_keeps_its_body) {
  e2e_setup s;
  auto msg = make_outlook_message("Invoice March", "Dear customer, our invoice is attached.",
                                  {{"inv01.pdf", corpus_bytes("inv01_en_classic.pdf")}},
                                  "Supplier <billing@supplier.example>");
  auto in = s.root() + "/in";
  std::filesystem::create_directories(in);
  write_file(in + "/march.msg", msg);
  std::map<std::string, std::string> extra{{"INGESTD_STAGES__ENABLED", "ingest,unpack"}};
  auto env = s.daemon_env();
  env.insert(extra.begin(), extra.end());
  {
    daemon_process submit{env, s.root() + "/submit.log", {"submit", in + "/march.msg"}};
    ASSERT_EQ(submit.wait_exit(60s), 0) << submit.log_tail();
  }
  auto d = s.start(extra);
  ASSERT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM ingestion WHERE status = 'completed'") == 2; },
      180s))
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion"), 2);
  EXPECT_NE(s.db()
                .scalar("SELECT body_text FROM document WHERE mime_type = "
                        "'application/vnd.ms-outlook'")
                .find("our invoice is attached"),
            std::string::npos);
  EXPECT_EQ(s.count("SELECT count(*) FROM document AS d JOIN document AS p ON p.id = d.parent_id "
                    "WHERE d.member_name = 'inv01.pdf' AND p.mime_type = "
                    "'application/vnd.ms-outlook' AND d.structured_data ? 'invoice_number'"),
            1);
}

TEST(e2e_daemon_containers, an_outlook_data_file_becomes_its_messages_and_their_attachments) {
  // An Outlook.com offline cache (.ost, 4 KiB pages; tests/fixtures/outlook/): two messages, one
  // with a PDF, one with eleven PNG images, besides contacts and calendar items.
  auto ost = source_dir() + "/tests/fixtures/outlook/node_modules/pst-extractor/example/testdata/"
             + "pstextractortestpdf@outlook.com.ost";
  ASSERT_TRUE(std::filesystem::exists(ost)) << ost << ": run deploy/install-deps.sh";
  e2e_setup s;
  auto in = s.root() + "/in";
  std::filesystem::create_directories(in);
  std::filesystem::copy_file(ost, in + "/mailbox.ost");
  std::map<std::string, std::string> extra{{"INGESTD_STAGES__ENABLED", "ingest,unpack"}};
  auto env = s.daemon_env();
  env.insert(extra.begin(), extra.end());
  {
    daemon_process submit{env, s.root() + "/submit.log", {"submit", in + "/mailbox.ost"}};
    ASSERT_EQ(submit.wait_exit(60s), 0) << submit.log_tail();
  }
  auto d = s.start(extra);
  // The data file, its two messages and their twelve attachments.
  ASSERT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM ingestion WHERE status <> 'in-progress'") == 15; },
      180s))
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion"), 15);
  EXPECT_EQ(s.db().scalar("SELECT mime_type FROM document WHERE parent_id IS NULL"),
            "application/vnd.ms-outlook-pst");
  EXPECT_EQ(s.db().scalar("SELECT string_agg(d.member_name, ' ' ORDER BY d.member_name) FROM "
                          "document d JOIN document p ON p.id = d.parent_id "
                          "WHERE p.parent_id IS NULL"),
            "Inbox/message-1.eml Inbox/message-2.eml");
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'unpack' AND status = "
                    "'completed'"),
            3);
  // The PDF came out whole, through the message it was attached to, and was read (a manual, not
  // an invoice: for review, like the images).
  EXPECT_EQ(s.db().scalar("SELECT p.member_name FROM document d JOIN document p ON p.id = "
                          "d.parent_id WHERE d.member_name = 'Clinometer Usage.pdf'"),
            "Inbox/message-1.eml");
  EXPECT_NE(s.db()
                .scalar("SELECT string_agg(e.detail, ' ') FROM ingestion_event e JOIN ingestion i "
                        "ON i.id = e.ingestion_id JOIN document d ON d.id = i.document_id WHERE "
                        "d.member_name = 'Clinometer Usage.pdf' AND e.step = 'transcribe' AND "
                        "e.outcome = 'ok'")
                .find("native text"),
            std::string::npos)
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE mime_type = 'image/png'"), 11);
  EXPECT_NE(s.db()
                .scalar("SELECT body_text FROM document WHERE member_name = 'Inbox/message-2.eml'")
                .find("Outlook"),
            std::string::npos);
}

TEST(e2e_daemon_containers, a_zip_bomb_and_a_traversal_fail_for_review_and_leave_no_child_behind) {
  e2e_setup s;
  std::map<std::string, std::string> extra{{"INGESTD_STAGES__ENABLED", "ingest,unpack"}};
  auto pdf = corpus_bytes("inv01_en_classic.pdf");
  auto bomb = make_archive("zip", {{"ok.pdf", pdf}, {"zeros.pdf", std::string(32u << 20, '\0')}});
  auto escape = make_archive("zip", {{"ok.pdf", pdf}, {"../../etc/cron.d/x.pdf", pdf}});
  auto in = s.root() + "/in";
  std::filesystem::create_directories(in);
  write_file(in + "/bomb.zip", bomb);
  write_file(in + "/escape.zip", escape);
  auto env = s.daemon_env();
  env.insert(extra.begin(), extra.end());
  {
    daemon_process submit{
        env, s.root() + "/submit.log", {"submit", in + "/bomb.zip", in + "/escape.zip"}};
    ASSERT_EQ(submit.wait_exit(60s), 0) << submit.log_tail();
  }
  auto d = s.start(extra);
  ASSERT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM ingestion WHERE status = 'failed'") == 2; }, 120s))
      << s.logs();
  // A permanent failure at the first attempt, named, for review; nothing of either was kept.
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'unpack' AND status = 'failed' "
                    "AND attempt_count = 1 AND error_class = 'permanent' "
                    "AND last_error LIKE '%container.ratio%'"),
            1)
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item WHERE stage = 'unpack' AND status = 'failed' "
                    "AND attempt_count = 1 AND error_class = 'permanent' "
                    "AND last_error LIKE '%container.unsafe_path%' AND last_error LIKE "
                    "'%../../etc/cron.d/x.pdf%'"),
            1);
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE needs_human_review"), 2);
  EXPECT_EQ(s.count("SELECT count(*) FROM document WHERE parent_id IS NOT NULL"), 0);
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion"), 2);
  EXPECT_EQ(s.count("SELECT count(*) FROM work_item"), 2);
  size_t stored = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(s.root()))
    stored += e.is_regular_file() && e.path().parent_path().filename() == "documents" ? 1 : 0;
  EXPECT_EQ(stored, 2u) << "only the two containers themselves are stored";
}

namespace {

/// An office document LibreOffice writes from `text` (the test's tool, unconfined), as `format`.
std::string office_document(const std::string& dir, const std::string& name,
                            const std::string& text, const std::string& format) {
  write_file(dir + "/" + name + ".txt", text);
  auto command = "timeout 120 soffice --headless --norestore -env:UserInstallation=file://" + dir
                 + "/profile --convert-to " + format + " --outdir " + dir + " " + dir + "/" + name
                 + ".txt >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0)
    return {};
  std::ifstream in{dir + "/" + name + "." + format, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, {}};
}

/// A corpus PDF's text as laid out (pdftotext), without its page breaks.
std::string layout_text(const std::string& corpus_name) {
  auto command
      = "pdftotext -layout " + source_dir() + "/tests/fixtures/corpus/" + corpus_name + " -";
  std::string text;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0)
      text.append(buffer, n);
    ::pclose(p);
  }
  std::erase(text, '\f');
  return text;
}

} // namespace

TEST(e2e_daemon_containers, office_documents_are_read_through_their_pdf) {
  e2e_setup s;
  auto in = s.root() + "/in";
  std::filesystem::create_directories(in);
  auto docx = office_document(in, "acme", layout_text("inv01_en_classic.pdf"), "docx");
  auto odt = office_document(in, "compact", layout_text("inv03_en_compact.pdf"), "odt");
  if (docx.empty() || odt.empty())
    GTEST_SKIP() << "LibreOffice (soffice) could not write the test's documents";
  // The DOCX on its own, the ODT inside a ZIP (a child document of the unpack stage).
  write_file(in + "/march.zip", make_archive("zip", {{"compact.odt", odt}}));
  auto env = s.daemon_env();
  env["INGESTD_STAGES__ENABLED"] = "ingest,unpack";
  {
    daemon_process submit{
        env, s.root() + "/submit.log", {"submit", in + "/acme.docx", in + "/march.zip"}};
    ASSERT_EQ(submit.wait_exit(60s), 0) << submit.log_tail();
  }
  auto d = s.start({{"INGESTD_STAGES__ENABLED", "ingest,unpack"}});
  ASSERT_TRUE(wait_until(
      [&] { return s.count("SELECT count(*) FROM ingestion WHERE status = 'completed'") == 3; },
      180s))
      << s.logs();
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion WHERE status <> 'completed'"), 0) << s.logs();
  // The originals stay the documents; each one's PDF is kept beside it.
  EXPECT_EQ(s.db().scalar("SELECT mime_type FROM document WHERE file_path LIKE '%.docx'"),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
  EXPECT_EQ(s.db().scalar("SELECT mime_type FROM document WHERE member_name = 'compact.odt'"),
            "application/vnd.oasis.opendocument.text");
  for (auto* path : {"%.docx", "%.odt"}) {
    auto pdf = s.db().scalar("SELECT i.preprocessed_file_path FROM ingestion i JOIN document d ON "
                             "d.id = i.document_id WHERE d.file_path LIKE $1",
                             {std::string{path}});
    ASSERT_TRUE(pdf.ends_with(".pdf")) << path << ": " << pdf;
    std::ifstream stored{s.root() + "/" + pdf, std::ios::binary};
    std::string head(5, '\0');
    stored.read(head.data(), 5);
    EXPECT_EQ(head, "%PDF-") << pdf;
  }
  // Both read and extracted like their PDFs, without a person.
  EXPECT_EQ(s.db().scalar("SELECT structured_data->>'invoice_number' FROM document WHERE "
                          "file_path LIKE '%.docx'"),
            "INV-2024-0117");
  EXPECT_EQ(s.db().scalar("SELECT structured_data->>'invoice_number' FROM document WHERE "
                          "member_name = 'compact.odt'"),
            "TVC/2024/031");
  EXPECT_EQ(s.count("SELECT count(*) FROM ingestion_event WHERE step = 'transcribe' AND detail "
                    "LIKE '%converted to PDF%'"),
            2);
}
