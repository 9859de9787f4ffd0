// A document the local rules cannot read (a one-line letter, no invoice fields) goes to human
// review at its first attempt, within seconds, instead of waiting out the queue's back-off for the
// same answer; the other documents of the run complete.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "e2e_checks.hpp"

using namespace std::chrono_literals;
using namespace ingestd::test;

namespace {

/// A valid one-page PDF whose text layer reads "Dear customer, thank you for your letter."
std::string letter_pdf() {
  std::string content = "BT /F1 14 Tf 72 700 Td (Dear customer, thank you for your letter.) Tj ET";
  return "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
         "2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
         "3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R"
         "/Resources<</Font<</F1 5 0 R>>>>>>endobj\n"
         "4 0 obj<</Length "
         + std::to_string(content.size()) + ">>stream\n" + content
         + "\nendstream endobj\n"
           "5 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj\n"
           "trailer<</Root 1 0 R>>\n%%EOF\n";
}

} // namespace

TEST(e2e_daemon_review,
     a_document_the_local_rules_cannot_read_goes_to_review_at_its_first_attempt) {
  e2e_setup s;
  auto letter = s.add_document_bytes(letter_pdf(), "pdf", "application/pdf");
  auto invoices = s.add_documents(3, doc_kind::text_pdf);
  auto ids = invoices;
  ids.push_back(letter);
  auto start = std::chrono::steady_clock::now();
  s.enqueue(ids);
  auto d = s.start();
  ASSERT_TRUE(wait_until(
      [&] {
        return s.count("SELECT count(*) FROM ingestion WHERE id = $1 AND status = 'failed'",
                       {letter})
               == 1;
      },
      120s))
      << s.logs();
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("time to review: %.1f s (daemon start included)\n", took);
  EXPECT_LT(took, 60.0) << "waited out a back-off";
  EXPECT_EQ(s.db().scalar("SELECT attempt_count || ' ' || error_class FROM work_item WHERE id = $1",
                          {letter}),
            "1 permanent");
  EXPECT_EQ(s.db().scalar("SELECT d.needs_human_review::text FROM ingestion i JOIN document d ON "
                          "d.id = i.document_id "
                          "WHERE i.id = $1",
                          {letter}),
            "true");
  auto why = s.db().scalar("SELECT last_error FROM work_item WHERE id = $1", {letter});
  EXPECT_NE(why.find("critical fields missing"), std::string::npos) << why;
  // The reviewer reads what was read: the transcription was recorded before the failure.
  auto transcription = s.db().scalar(
      "SELECT COALESCE(transcription_file_path, '') FROM ingestion WHERE id = $1", {letter});
  ASSERT_FALSE(transcription.empty()) << s.logs();
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path{s.root()} / transcription))
      << transcription;
  ASSERT_TRUE(await_completed(s, 3, 120s));
}
