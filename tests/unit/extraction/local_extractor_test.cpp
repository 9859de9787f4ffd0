// The local rule-based extractor: number, date and currency rules, honest confidence, and the
// per-field accuracy on the fixture corpus's text layer and on the texts in
// tests/unit/extraction/texts/.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <gtest/gtest.h>

#include "adapters/extraction/extraction_schema.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/extraction/quality_gate.hpp"
#include "tests/support/llm/extraction_accuracy.hpp"
#include "tests/support/slow_build.hpp"

using namespace ingestd;
using namespace ingestd::local_rules;

namespace {

std::string source_dir() {
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  return src ? src : "";
}

test::accuracy_report accuracy_on(const std::string& dir) {
  local_extractor ex;
  auto pairs = test::load_truth_pairs(dir);
  return test::measure_accuracy(pairs, [&](const std::string& text) {
    auto x = ex.run(text);
    EXPECT_TRUE(validate_extraction_json(x.structured_data).ok()) << x.structured_data;
    return x.structured_data;
  });
}

void print(const std::string& title, const test::accuracy_report& rep) {
  std::cout << "\n" << title << " (" << rep.documents << " documents)\n" << rep.table();
  for (const auto& m : rep.misses)
    std::cout << "  miss: " << m << "\n";
}

} // namespace

TEST(local_rules, amounts_in_either_convention) {
  EXPECT_DOUBLE_EQ(parse_amount("1,234.56").value(), 1234.56);
  EXPECT_DOUBLE_EQ(parse_amount("1.234,56").value(), 1234.56);
  EXPECT_DOUBLE_EQ(parse_amount("1 234,56").value(), 1234.56);
  EXPECT_DOUBLE_EQ(parse_amount("1'234.50").value(), 1234.50);
  EXPECT_DOUBLE_EQ(parse_amount("19,00").value(), 19.0);
  EXPECT_DOUBLE_EQ(parse_amount("1,234,567.89").value(), 1234567.89);
  EXPECT_DOUBLE_EQ(parse_amount("1.234.567,89").value(), 1234567.89);
  EXPECT_DOUBLE_EQ(parse_amount("$1,249.00").value(), 1249.0);
  EXPECT_DOUBLE_EQ(parse_amount("1.500,00 EUR").value(), 1500.0);
  EXPECT_DOUBLE_EQ(parse_amount("\xE2\x82\xAC 9,268.60").value(), 9268.60);
  EXPECT_DOUBLE_EQ(parse_amount("275,31 \xE2\x82\xAC").value(), 275.31);
  EXPECT_DOUBLE_EQ(parse_amount("CHF 1'050.00").value(), 1050.0);
  EXPECT_DOUBLE_EQ(parse_amount("-50.00").value(), -50.0);
  EXPECT_DOUBLE_EQ(parse_amount("1234").value(), 1234.0);
  EXPECT_DOUBLE_EQ(parse_amount("12,5").value(), 12.5);
  EXPECT_FALSE(parse_amount("15.03.2024"));
  EXPECT_FALSE(parse_amount("DE123456789"));
  EXPECT_FALSE(parse_amount("19%"));
  EXPECT_FALSE(parse_amount("abc"));
  EXPECT_FALSE(parse_amount("1,23,4"));
}

TEST(local_rules, dates_normalised_to_iso) {
  EXPECT_EQ(parse_date("2024-03-15").value(), "2024-03-15");
  EXPECT_EQ(parse_date("15.03.2024").value(), "2024-03-15");
  EXPECT_EQ(parse_date("15.3.24").value(), "2024-03-15");
  EXPECT_EQ(parse_date("03/15/2024").value(), "2024-03-15");
  EXPECT_EQ(parse_date("15/03/2024").value(), "2024-03-15");
  EXPECT_EQ(parse_date("04/02/2024", false).value(), "2024-04-02");
  EXPECT_EQ(parse_date("04/02/2024", true).value(), "2024-02-04");
  EXPECT_EQ(parse_date("15 March 2024").value(), "2024-03-15");
  EXPECT_EQ(parse_date("15th March 2024").value(), "2024-03-15");
  EXPECT_EQ(parse_date("March 15, 2024").value(), "2024-03-15");
  EXPECT_EQ(parse_date("Mar 5, 2024").value(), "2024-03-05");
  EXPECT_EQ(parse_date("15. M\xC3\xA4rz 2024").value(), "2024-03-15");
  EXPECT_EQ(parse_date("1. Dezember 2023").value(), "2023-12-01");
  EXPECT_EQ(parse_date("Datum: 29.02.2024").value(), "2024-02-29");
  EXPECT_FALSE(parse_date("30.02.2024"));
  EXPECT_FALSE(parse_date("1,234.56"));
}

TEST(local_rules, currencies) {
  EXPECT_EQ(find_currency("\xE2\x82\xAC 10").value(), "EUR");
  EXPECT_EQ(find_currency("$10").value(), "USD");
  EXPECT_EQ(find_currency("\xC2\xA3"
                          "10")
                .value(),
            "GBP");
  EXPECT_EQ(find_currency("10 CHF").value(), "CHF");
  EXPECT_EQ(find_currency("Total EUR 10").value(), "EUR");
  EXPECT_FALSE(find_currency("Europe"));
}

TEST(local_extractor, calls_back_exactly_once_inline) {
  local_extractor ex;
  int calls = 0;
  ex.extract("Invoice No. 1\nTotal 10.00 EUR", [&](result<extraction> r) {
    ++calls;
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->model, "local-rules");
    EXPECT_EQ(r->input_tokens, 0);
    EXPECT_EQ(r->output_tokens, 0);
  });
  EXPECT_EQ(calls, 1);
}

TEST(local_extractor, text_that_is_not_utf8_still_gives_valid_json) {
  // Found by fuzzing: a supplier name with a Latin-1 byte was copied into structured_data as is.
  auto x = local_extractor{}.run("Holzwerk Brandt \xF6mbH\nRechnung\nRechnungsnummer: UK-2024-33\n"
                                 "Gesamtbetrag 119,00 EUR\n");
  EXPECT_TRUE(validate_extraction_json(x.structured_data).ok()) << x.structured_data;
  EXPECT_EQ(x.structured_data.find('\xF6'), std::string::npos);
}

TEST(local_extractor, a_clean_invoice_is_high_confidence) {
  local_extractor ex;
  auto x
      = ex.run("Acme Tools GmbH\nIndustriestr. 5\n70565 Stuttgart\nUSt-IdNr.: DE 123 456 789\n\n"
               "Rechnung\nRechnungsnummer: R-2024-117\nRechnungsdatum: 15. M\xC3\xA4rz 2024\n"
               "F\xC3\xA4llig am: 14.04.2024\n\nRechnungsempf\xC3\xA4nger:\nBeispiel AG\n\n"
               "Pos  Bezeichnung        Menge   Einzelpreis     Gesamt\n"
               "1    Schrauben M6       100     0,25 \xE2\x82\xAC        25,00 \xE2\x82\xAC\n"
               "2    Bohrmaschine       1       1.199,00 \xE2\x82\xAC    1.199,00 \xE2\x82\xAC\n\n"
               "Nettobetrag                              1.224,00 \xE2\x82\xAC\n"
               "zzgl. 19 % MwSt.                           232,56 \xE2\x82\xAC\n"
               "Rechnungsbetrag                          1.456,56 \xE2\x82\xAC\n");
  ASSERT_TRUE(validate_extraction_json(x.structured_data).ok()) << x.structured_data;
  EXPECT_TRUE(x.extraction_successful);
  EXPECT_EQ(x.confidence, "high") << x.structured_data;
  auto r = extraction_from_json(x.structured_data);
  ASSERT_TRUE(r.ok());
  const auto& s = x.structured_data;
  EXPECT_NE(s.find("\"invoice_number\":\"R-2024-117\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"invoice_date\":\"2024-03-15\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"due_date\":\"2024-04-14\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"supplier_vat_id\":\"DE123456789\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"supplier_name\":\"Acme Tools GmbH\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"customer_name\":\"Beispiel AG\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"currency\":\"EUR\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"subtotal\":1224.0"), std::string::npos) << s;
  EXPECT_NE(s.find("\"vat_amount\":232.56"), std::string::npos) << s;
  EXPECT_NE(s.find("\"total\":1456.56"), std::string::npos) << s;
  EXPECT_NE(s.find("{\"description\":\"Bohrmaschine\",\"quantity\":1.0,\"unit_price\":1199.0,"
                   "\"amount\":1199.0}"),
            std::string::npos)
      << s;
  EXPECT_TRUE(evaluate(x).passed);
}

TEST(local_extractor, guesses_are_low_confidence) {
  local_extractor ex;
  // No labels at all: a number that might be a total.
  auto x = ex.run("Thanks for shopping\nWidget 12.50\nGadget 7.50\n");
  EXPECT_EQ(x.confidence, "low");
  EXPECT_FALSE(x.extraction_successful);
  EXPECT_FALSE(evaluate(x).passed);
  // Not an invoice.
  auto y = ex.run("Dear Sir or Madam,\nplease find our brochure attached.\n");
  EXPECT_FALSE(y.extraction_successful);
  EXPECT_EQ(y.confidence, "low");
  EXPECT_EQ(y.missing_fields.size(), 12u);
  EXPECT_TRUE(validate_extraction_json(y.structured_data).ok());
  // Empty input.
  auto z = ex.run("");
  EXPECT_FALSE(z.extraction_successful);
  EXPECT_TRUE(validate_extraction_json(z.structured_data).ok());
}

TEST(local_extractor, contradicting_totals_are_low_confidence_and_fail_the_gate) {
  local_extractor ex;
  auto x = ex.run("Invoice No: 42\nDate: 2024-01-10\nSubtotal 100.00 EUR\nVAT 19% 19.00 EUR\n"
                  "Total 120.00 EUR\n");
  EXPECT_EQ(x.confidence, "low");
  auto v = evaluate(x);
  EXPECT_FALSE(v.passed);
}

TEST(local_extractor, labelled_but_unreconciled_is_medium) {
  local_extractor ex;
  auto x = ex.run("Invoice No: 42\nDate: 2024-01-10\nTotal: 120.00 EUR\n");
  EXPECT_TRUE(x.extraction_successful);
  EXPECT_EQ(x.confidence, "medium") << x.structured_data;
}

TEST(local_extractor, corpus_text_layer_accuracy) {
  auto dir = source_dir() + "/tests/fixtures/corpus/truth";
  auto rep = accuracy_on(dir);
  print("local extractor on tests/fixtures/corpus/truth (text layer)", rep);
  ASSERT_GE(rep.documents, 6);
  // Floors below the measured figures (see the report); key fields must be near perfect.
  for (const char* f : {"invoice_number", "invoice_date", "due_date", "currency", "subtotal",
                        "vat_amount", "total", "supplier_vat_id"})
    EXPECT_GE(rep[f].ratio(), 0.99) << f;
  for (const char* f : {"supplier_name", "line_items", "customer_name", "supplier_address"})
    EXPECT_GE(rep[f].ratio(), 0.8) << f;
}

TEST(local_extractor, high_confidence_means_the_key_fields_are_right) {
  local_extractor ex;
  int high = 0;
  for (const auto& dir : {source_dir() + "/tests/fixtures/corpus/truth",
                          source_dir() + "/tests/unit/extraction/texts"})
    for (const auto& p : test::load_truth_pairs(dir)) {
      auto x = ex.run(p.text);
      if (x.confidence != "high")
        continue;
      ++high;
      auto rep = test::measure_accuracy({p}, [&](const std::string&) { return x.structured_data; });
      for (const char* f : {"invoice_number", "invoice_date", "subtotal", "vat_amount", "total"})
        EXPECT_EQ(rep[f].correct, 1) << p.name << "." << f;
      EXPECT_TRUE(evaluate(x).passed) << p.name;
    }
  EXPECT_GE(high, 10);
}

TEST(local_extractor, own_texts_accuracy) {
  auto dir = source_dir() + "/tests/unit/extraction/texts";
  auto rep = accuracy_on(dir);
  print("local extractor on tests/unit/extraction/texts", rep);
  ASSERT_GE(rep.documents, 6);
  for (const char* f : {"invoice_number", "invoice_date", "total", "currency"})
    EXPECT_GE(rep[f].ratio(), 0.85) << f;
  for (const char* f : {"subtotal", "vat_amount", "due_date", "supplier_vat_id"})
    EXPECT_GE(rep[f].ratio(), 0.7) << f;
}

TEST(local_extractor, garbage_input_ends_quickly_with_a_valid_answer) {
  local_extractor ex;
  std::string noise;
  uint32_t x = 12345;
  for (int i = 0; i < 200'000; ++i) {
    x = x * 1103515245u + 12345u;
    noise += static_cast<char>((x >> 16) & 0xFF);
  }
  std::string long_line(100'000, '1');
  for (size_t i = 3; i < long_line.size(); i += 4)
    long_line[i] = (i % 8 == 3) ? ',' : '.';
  std::string labels;
  for (int i = 0; i < 5'000; ++i)
    labels += "Total Subtotal VAT Invoice No. Datum 15.03.2024 1.234,56 EUR\n";
  for (const auto* text : {&noise, &long_line, &labels}) {
    // CPU time, scaled to the build's speed: the three take about a second in the normal build.
    auto start = test::thread_cpu_time();
    auto r = ex.run(*text);
    EXPECT_LT(test::thread_cpu_time() - start, std::chrono::seconds{10} * test::build_slowdown());
    EXPECT_TRUE(validate_extraction_json(r.structured_data).ok())
        << r.structured_data.substr(0, 200);
  }
}
