// The review desk in a real browser (review_browser.py: headless Chromium through Debian's
// python3-selenium) against the desk on a real admin server: sign in, queue, document, correct
// the total, edit the line items in their table, correct the supplier's name, approve; then
// reprocess the next document with the LLM extractor chosen in the reprocess form by keyboard;
// then forget one of the facts the correction taught on the Learned page; the database shows the
// reviewer's version, the choice and the fact left. Screenshots of the pages are written under the
// build directory
// (test-artifacts/review/). Skipped, with the script's message, only when the browser cannot start.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include "tests/integration/review/review_fixture.hpp"

namespace ingestd {
namespace {

class review_browser_test : public test::review_fixture {};

/// Runs `command`, returning its exit status and output.
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p)
    return {-1, "popen failed"};
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_F(review_browser_test, a_reviewer_corrects_a_field_and_approves_in_chromium) {
  // The first document's page: its words where the transcription found them.
  std::vector<page_word> words{
      {"RECHNUNG", 0.08F, 0.06F, 0.3F, 0.09F},    {"Rechnungsnummer:", 0.55F, 0.2F, 0.7F, 0.215F},
      {"INV-1", 0.72F, 0.2F, 0.78F, 0.215F},      {"Rechnungsdatum:", 0.55F, 0.22F, 0.7F, 0.235F},
      {"01.03.2024", 0.72F, 0.22F, 0.8F, 0.235F}, {"Widget", 0.1F, 0.45F, 0.2F, 0.465F},
      {"1", 0.5F, 0.45F, 0.52F, 0.465F},          {"100,00", 0.6F, 0.45F, 0.68F, 0.465F},
      {"100,00", 0.8F, 0.45F, 0.88F, 0.465F},     {"Netto", 0.6F, 0.6F, 0.7F, 0.615F},
      {"100,00", 0.8F, 0.6F, 0.88F, 0.615F},      {"MwSt", 0.6F, 0.62F, 0.66F, 0.635F},
      {"19,00", 0.8F, 0.62F, 0.88F, 0.635F},      {"Gesamtbetrag", 0.6F, 0.64F, 0.72F, 0.655F},
      {"119,00", 0.8F, 0.64F, 0.88F, 0.655F},     {"Vielen", 0.08F, 0.9F, 0.15F, 0.915F},
      {"Dank", 0.16F, 0.9F, 0.22F, 0.915F}};
  std::string text;
  for (auto& w : words)
    text += w.text + (w.text.ends_with(':') ? " " : "\n");
  auto first = add_document(tenant_a, "inv02_de_modern.pdf", "gate", 20, text, {}, words);
  auto second = add_document(tenant_a, "inv01_en_classic.pdf", "gate", 10);
  start_desk();
  const char* artifacts = std::getenv("INGESTD_TEST_ARTIFACTS");
  std::string out = std::string{artifacts ? artifacts : "/tmp/ingestd-test-artifacts"} + "/review";
  std::filesystem::create_directories(out);
  auto script = test::source_dir() + "/tests/integration/review/review_browser.py";
  auto [status, output]
      = run("timeout 120 /usr/bin/python3 " + script + " --url http://127.0.0.1:"
            + std::to_string(admin->port()) + " --token " + token_a + " --name Hana --document "
            + first + " --next " + second + " --total 119,00 --total-at 0.84,0.6475 --out " + out);
  if (status == 77)
    GTEST_SKIP() << output;
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(db->scalar("SELECT structured_data->>'total' FROM document WHERE id = $1", {first}),
            "119");
  EXPECT_EQ(
      db->scalar("SELECT needs_human_review::text || ' ' || review_status || ' ' || reviewed_by "
                 "FROM document WHERE id = $1",
                 {first}),
      "false approved Hana");
  // The date typed as German writes it, saved as the schema's.
  EXPECT_EQ(
      db->scalar("SELECT structured_data->>'invoice_date' FROM document WHERE id = $1", {first}),
      "2024-03-15");
  // The lines as edited in the table, in their new order.
  EXPECT_EQ(db->scalar("SELECT string_agg(concat_ws(' ', x->>'description', x->>'quantity', "
                       "x->>'unit_price', x->>'amount'), '; ' ORDER BY n) FROM document, "
                       "jsonb_array_elements(structured_data->'line_items') WITH ORDINALITY AS "
                       "t(x, n) WHERE id = $1",
                       {first}),
            "Setup 1 20 20; Widget A 2 40 80");
  EXPECT_EQ(
      db->scalar("SELECT (changes->'total')::text || ' ' || (changes->'line_items'->'from')::text "
                 "FROM document_review WHERE document_id = $1",
                 {first}),
      R"({"to": 119, "from": 120} [{"amount": 100, "quantity": 1, "unit_price": 100, "description": "Widget"}])");
  EXPECT_EQ(db->scalar("SELECT needs_human_review::text FROM document WHERE id = $1", {second}),
            "true");
  // The supplier's name the reviewer corrected was learned under two keys; one was forgotten on
  // the Learned page.
  EXPECT_EQ(db->scalar("SELECT count(*)::text || ' ' || min(value) FROM supplier_knowledge WHERE "
                       "tenant_id = $1 AND field = 'supplier_name'",
                       {tenant_a.str()}),
            "1 Acme Widgets GmbH");
  // The second document was reprocessed from its page with the LLM extractor chosen.
  EXPECT_EQ(db->scalar("SELECT reviewer || ' ' || action || ' ' || extraction_provider || ' ' || "
                       "COALESCE(transcription_provider, 'as-configured') FROM document_review "
                       "WHERE document_id = $1",
                       {second}),
            "Hana reprocess llm as-configured");
  EXPECT_EQ(db->scalar("SELECT extraction_provider FROM ingestion WHERE document_id = $1 AND "
                       "status = 'in-progress'",
                       {second}),
            "llm");
  for (auto name : {"review-queue.png", "review-document.png", "review-learned.png"})
    EXPECT_GT(std::filesystem::file_size(out + "/" + name), 10000u) << name;
}

} // namespace
} // namespace ingestd
