// End-to-end tests of the command line: the built ingestd binary run as a child process on the
// invoice corpus, checking exit codes, stdout and stderr like a user would.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "tests/support/environment.hpp"
#include "tests/support/llm/chat_stub.hpp"
#include "tests/support/ocr/ocr_support.hpp"

namespace {

namespace fs = std::filesystem;

using run_result = ingestd::test::cli_result;

/// Runs the binary with `args` (and `env` assignments, "KEY=value") under a timeout, with the
/// configuration coming only from the built-in defaults.
run_result run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return ingestd::test::run_ingestd(args, env);
}

std::string corpus(const std::string& file) {
  return ingestd::test::corpus_dir() + "/" + file;
}

/// truth/<invoice>.json parsed.
rapidjson::Document truth(const std::string& invoice) {
  rapidjson::Document d;
  d.Parse(ingestd::test::read_binary(corpus("truth/" + invoice + ".json")).c_str());
  return d;
}

std::string truth_string(const std::string& invoice, const char* field) {
  auto d = truth(invoice);
  return d[field].GetString();
}

#define EXPECT_CONTAINS(haystack, needle)                                                          \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n"  \
                                                        << (haystack)

} // namespace

TEST(e2e_cli, help_lists_the_commands) {
  auto r = run({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (auto* c : {"run", "migrate", "config check", "transcribe FILE", "extract FILE",
                  "matches DOCUMENT_ID", "version"})
    EXPECT_CONTAINS(r.out, c);
}

TEST(e2e_cli, version_prints_the_version) {
  auto r = run({"version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("ingestd ", 0), 0u) << r.out;
}

TEST(e2e_cli, the_binary_allocates_with_jemalloc) {
  if (!INGESTD_JEMALLOC)
    GTEST_SKIP() << "built with INGESTD_JEMALLOC=OFF: glibc's allocator";
  // jemalloc prints its statistics at exit when asked to: only if it is the allocator in use.
  auto r = run({"version"}, {"MALLOC_CONF=stats_print:true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.err, "jemalloc statistics");
}

TEST(e2e_cli, config_check_with_a_bad_value_names_the_key) {
  auto r = run({"config", "check"}, {"INGESTD_WORKER__MAX_IN_FLIGHT=-5"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "worker.max_in_flight");
  EXPECT_CONTAINS(r.err, "INGESTD_WORKER__MAX_IN_FLIGHT");
}

TEST(e2e_cli, config_check_with_defaults_succeeds) {
  auto r = run({"config", "check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(e2e_cli, run_refuses_an_intake_on_a_non_loopback_bind_without_a_token) {
  // Without INGESTD_INTAKE_TOKEN only the database's tenant tokens could open the intake: a
  // database that cannot be reached cannot, so the node does not start (integration_intake covers
  // a reachable database without tokens).
  for (const char* bind : {"0.0.0.0", "::", "192.0.2.10"}) {
    auto r = run({"run"}, {"INGESTD_INTAKE__PORT=" + std::to_string(ingestd::test::unused_port()),
                           std::string{"INGESTD_INTAKE__BIND="} + bind, "INGESTD_INTAKE_TOKEN=",
                           "INGESTD_DATABASE__URL=postgresql://nobody@127.0.0.1:"
                               + std::to_string(ingestd::test::unused_port()) + "/none"});
    EXPECT_EQ(r.exit_code, 1) << bind << "\n" << r.out << r.err;
    EXPECT_CONTAINS(r.err, "intake.bind is " + std::string{bind});
    EXPECT_CONTAINS(r.err, "INGESTD_INTAKE_TOKEN");
    EXPECT_CONTAINS(r.err, "intake.unauthenticated");
  }
}

TEST(e2e_cli, an_unknown_command_is_a_usage_error) {
  auto r = run({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "unknown command 'frobnicate'");
}

TEST(e2e_cli, matches_without_one_valid_document_id_is_a_usage_error) {
  auto none = run({"matches"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_CONTAINS(none.err, "expected one DOCUMENT_ID");
  auto bad = run({"matches", "INV-001"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_CONTAINS(bad.err, "'INV-001' is not a document id");
  auto help = run({"matches", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_CONTAINS(help.out, "Usage: ingestd matches DOCUMENT_ID [--json]");
}

TEST(e2e_cli, transcribe_without_a_file_is_a_usage_error) {
  auto r = run({"transcribe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.err, "usage: ingestd transcribe FILE");
}

TEST(e2e_cli, transcribe_a_text_pdf_uses_its_native_text) {
  auto r = run({"transcribe", corpus("inv01_en_classic.pdf")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, truth_string("inv01", "invoice_number"));
  EXPECT_CONTAINS(r.out, "native PDF text");
  EXPECT_CONTAINS(r.out, "quality: 1.00");
  EXPECT_CONTAINS(r.out, "page 1: quality 1.00, defects: none");
  EXPECT_CONTAINS(r.out, "file metadata: title=\"Invoice INV-2024-0117\" author=\"anonymous\"");
  EXPECT_CONTAINS(r.out, "created=\"2000-01-01T00:00:00Z\"");
  auto json = run({"transcribe", "--json", corpus("inv01_en_classic.pdf")});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  rapidjson::Document d;
  d.Parse(json.out.c_str());
  ASSERT_TRUE(d.IsObject() && d.HasMember("metadata") && d["metadata"].IsObject()) << json.out;
  EXPECT_STREQ(d["metadata"]["title"].GetString(), "Invoice INV-2024-0117");
  EXPECT_STREQ(d["metadata"]["producer"].GetString(), "ReportLab PDF Library - www.reportlab.com");
}

TEST(e2e_cli, transcribe_a_clean_scan_with_ocr) {
  auto r = run({"transcribe", corpus("inv02_de_modern_scan.png")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, truth_string("inv02", "invoice_number"));
  EXPECT_CONTAINS(r.out, "OCR");
  EXPECT_CONTAINS(r.out, "page 1: quality ");
}

TEST(e2e_cli, transcribe_json_parses_and_carries_the_quality_per_page) {
  auto r = run({"transcribe", "--json", corpus("inv01_en_classic_blur.png")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.out;
  ASSERT_TRUE(d.IsObject());
  EXPECT_STREQ(d["provider"].GetString(), "tesseract");
  EXPECT_EQ(d["page_count"].GetInt(), 1);
  EXPECT_FALSE(d["native_text"].GetBool());
  ASSERT_TRUE(d["pages"].IsArray());
  ASSERT_EQ(d["pages"].Size(), 1u);
  auto q = d["quality_score"].GetDouble();
  EXPECT_GE(q, 0.0);
  EXPECT_LE(q, 1.0);
  EXPECT_TRUE(d["pages"][0].HasMember("defects"));
  EXPECT_CONTAINS(std::string{d["text"].GetString()}, "Acme");
  // An image says nothing about itself.
  ASSERT_TRUE(d["metadata"].IsObject());
  EXPECT_EQ(d["metadata"].MemberCount(), 0u);
}

TEST(e2e_cli, every_bad_file_exits_1_with_its_named_error) {
  int checked = 0;
  for (auto& e : ingestd::test::corpus_manifest()) {
    if (e.kind != "bad")
      continue;
    SCOPED_TRACE(e.file);
    ASSERT_FALSE(e.expected_error.empty());
    for (auto* command : {"transcribe", "extract"}) {
      auto r = run({command, corpus(e.file)});
      EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.out;
      EXPECT_CONTAINS(r.err, e.expected_error);
      EXPECT_CONTAINS(r.err, e.file.substr(e.file.rfind('/') + 1));
    }
    ++checked;
  }
  EXPECT_EQ(checked, 5);
  auto missing = run({"transcribe", corpus("does-not-exist.pdf")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.err, "ocr.read_failed");
}

TEST(e2e_cli, extract_a_text_pdf_prints_the_fields_and_the_gate) {
  for (auto* inv : {"inv01_en_classic", "inv02_de_modern"}) {
    SCOPED_TRACE(inv);
    std::string invoice{inv, 5};
    auto r = run({"extract", corpus(std::string{inv} + ".pdf")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto t = truth(invoice);
    EXPECT_CONTAINS(r.out, std::string{"invoice_number:   "} + t["invoice_number"].GetString());
    char total[64];
    std::snprintf(total, sizeof total, "total:            %.2f", t["total"].GetDouble());
    EXPECT_CONTAINS(r.out, total);
    EXPECT_CONTAINS(r.out, "confidence: high");
    EXPECT_CONTAINS(r.out, "gate: passed");
  }
}

TEST(e2e_cli, extract_json_parses) {
  auto r = run({"extract", "--json", corpus("inv04_de_classic.pdf")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rapidjson::Document d;
  d.Parse(r.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << r.out;
  auto t = truth("inv04");
  EXPECT_STREQ(d["extraction"]["structured_data"]["invoice_number"].GetString(),
               t["invoice_number"].GetString());
  EXPECT_NEAR(d["extraction"]["structured_data"]["total"].GetDouble(), t["total"].GetDouble(),
              0.005);
  EXPECT_TRUE(d["gate"]["passed"].GetBool());
  EXPECT_TRUE(d["transcription"]["native_text"].GetBool());
  // Where the values are on the page: the total's printed text, below the invoice number.
  auto& where = d["extraction"]["provenance"];
  ASSERT_TRUE(where.IsObject() && where.HasMember("total") && where.HasMember("invoice_number"))
      << r.out;
  EXPECT_EQ(where["total"]["page"].GetInt(), 1);
  EXPECT_EQ(where["invoice_number"]["text"].GetString(),
            std::string{t["invoice_number"].GetString()});
  ASSERT_EQ(where["total"]["box"].Size(), 4u);
  EXPECT_GT(where["total"]["box"][1].GetDouble(), where["invoice_number"]["box"][3].GetDouble());
}

// A photo of a till receipt: its payable total (not the cash handed over) and its date, and a
// verdict that says what the pipeline does with a document the local rules' gate refuses.
TEST(e2e_cli, extract_a_receipt_photo_prints_its_total_and_what_the_pipeline_would_do) {
  auto photo = ingestd::test::source_dir() + "/tests/fixtures/receipts/en_gb_rounded.jpg";
  auto r = run({"extract", photo});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "invoice_date:     2025-01-01");
  EXPECT_CONTAINS(r.out, "total:            123.30");
  EXPECT_CONTAINS(r.out, "currency:         GBP");
  auto json = run({"extract", "--json", photo});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  rapidjson::Document d;
  d.Parse(json.out.c_str());
  ASSERT_FALSE(d.HasParseError()) << json.out;
  EXPECT_STREQ(d["gate"]["refused_goes_to"].GetString(), "review");
  if (!d["gate"]["passed"].GetBool()) {
    EXPECT_CONTAINS(r.out, "would send this document to human review at once");
  }
}

TEST(e2e_cli, extract_with_the_llm_provider_uses_the_configured_server) {
  ingestd::test::chat_stub stub;
  auto r = run(
      {"extract", corpus("inv01_en_classic.pdf")},
      {"INGESTD_EXTRACTION__PROVIDER=llm", "INGESTD_EXTRACTION__LLM_BASE_URL=" + stub.base_url(),
       "INGESTD_EXTRACTION__LLM_MODEL=success:e2e", "INGESTD_LLM_API_KEY=sk-e2e-secret-9876"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The stub's canned invoice, not the PDF's: the answer came from the server.
  EXPECT_CONTAINS(r.out, "invoice_number:   INV-1\n");
  EXPECT_CONTAINS(r.out, "321 input + 54 output tokens");
  EXPECT_CONTAINS(r.out, "gate: passed");
  EXPECT_EQ(r.out.find("sk-e2e-secret-9876"), std::string::npos);
  EXPECT_EQ(r.err.find("sk-e2e-secret-9876"), std::string::npos);
}

TEST(e2e_cli, extract_with_a_permanent_llm_error_exits_1_with_the_classified_error) {
  ingestd::test::chat_stub stub;
  auto r = run({"extract", corpus("inv01_en_classic.pdf")},
               {"INGESTD_EXTRACTION__PROVIDER=llm",
                "INGESTD_EXTRACTION__LLM_BASE_URL=" + stub.base_url(),
                "INGESTD_EXTRACTION__LLM_MODEL=unauthorized:e2e"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_CONTAINS(r.err, "extraction failed: llm.unauthorized");
}

TEST(e2e_cli, extract_of_a_text_too_long_for_the_llm_falls_back_to_the_local_rules_for_review) {
  ingestd::test::chat_stub stub;
  auto r = run({"extract", corpus("inv01_en_classic.pdf")},
               {"INGESTD_EXTRACTION__PROVIDER=llm",
                "INGESTD_EXTRACTION__LLM_BASE_URL=" + stub.base_url(),
                "INGESTD_EXTRACTION__LLM_MODEL=context_vllm:e2e"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "extractor: local-rules");
  EXPECT_CONTAINS(r.out, "review: extracted by the local extractor");
  EXPECT_CONTAINS(r.out, "llm.context_exceeded");
}

TEST(e2e_cli, extract_with_an_unreachable_llm_exits_1) {
  auto r = run({"extract", corpus("inv01_en_classic.pdf")},
               {"INGESTD_EXTRACTION__PROVIDER=llm",
                "INGESTD_EXTRACTION__LLM_BASE_URL=http://127.0.0.1:"
                    + std::to_string(ingestd::test::unused_port()),
                "INGESTD_EXTRACTION__MAX_ATTEMPTS=1"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_CONTAINS(r.err, "extraction failed: llm.connect");
}
