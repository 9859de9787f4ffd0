// The local extractor's rule families one by one (adapters/extraction/local/): text folding, labels
// per language, month names and day orders, amount styles, currency markers, stacked columns; and a
// small invoice per language through the whole extractor.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/extraction/local/amounts.hpp"
#include "adapters/extraction/local/currency.hpp"
#include "adapters/extraction/local/dates.hpp"
#include "adapters/extraction/local/labels.hpp"
#include "adapters/extraction/local/text.hpp"
#include "adapters/extraction/local_extractor.hpp"

using namespace ingestd;
using namespace ingestd::local_rules;

namespace {

std::optional<kind> first_label(const std::string& line) {
  auto hs = find_labels(lower(line));
  if (hs.empty())
    return std::nullopt;
  return hs.front().k;
}

rapidjson::Document fields_of(const std::string& text) {
  rapidjson::Document d;
  auto x = local_extractor{}.run(text);
  d.Parse(x.structured_data.c_str());
  return d;
}

std::string str(const rapidjson::Document& d, const char* key) {
  return d[key].IsString() ? d[key].GetString() : std::string{"null"};
}

double num(const rapidjson::Document& d, const char* key) {
  return d[key].IsNumber() ? d[key].GetDouble() : -1;
}

} // namespace

TEST(local_rules_text, lower_case_keeps_offsets_for_latin_letters) {
  EXPECT_EQ(lower("NUMÉRO ÉCHÉANCE"), "numéro échéance");
  EXPECT_EQ(lower("ŁÓDŹ ŚWIĘTO ŻABA"), "łódź święto żaba");
  EXPECT_EQ(lower("RECHNUNGSEMPFÄNGER"), "rechnungsempfänger");
  EXPECT_EQ(lower("Straße"), "straße");
  EXPECT_EQ(fold_ascii("échéance n° zł"), "echeance no zl");
}

TEST(local_rules_text, labels_match_with_or_without_accents) {
  std::string low = "numero de factura";
  EXPECT_NE(match_folded(low, 0, "n\xC3\xBAmero de factura"), std::string_view::npos);
  low = lower("Date d'échéance");
  EXPECT_NE(match_folded(low, 0, "date d'echeance"), std::string_view::npos);
  EXPECT_EQ(match_folded("facture", 0, "facturation"), std::string_view::npos);
  // OCR puts the wrong accent, or reads Polish ł as t without Polish language data.
  EXPECT_NE(match_folded(lower("Numer zamöwienia"), 0, "numer zam\xC3\xB3wienia"),
            std::string_view::npos);
  EXPECT_EQ(first_label("Zaptacono PLN 6 756,96"), kind::total);
}

TEST(local_rules_labels, invoice_number_spellings_per_language) {
  for (const char* line :
       {"Invoice No. 123", "Invoice # 123", "Bill No. 123", "Rechnungsnummer 123", "Facture n° 123",
        "N° de facture 123", "Numéro de facture 123", "NUMERO DE FACTURE 123", "Factuurnummer 123",
        "Factuur nr. 123", "Número de factura 123", "Nº factura 123", "Numero fattura 123",
        "Fattura n. 123", "Faktura nr 123", "Nr faktury 123", "Receipt No. 123",
        "Tax Invoice No. 123"})
    EXPECT_EQ(first_label(line), kind::invoice_number) << line;
  for (const char* line :
       {"Order ID 123", "Booking reference 123", "N° de commande 123", "Bestelnummer 123",
        "Número de reserva 123", "Numero ordine 123", "Nr zamówienia 123"})
    EXPECT_EQ(first_label(line), kind::order_number) << line;
}

TEST(local_rules_labels, totals_subtotals_and_vat_per_language) {
  for (const char* line : {"Total TTC", "Net à payer", "Montant payé", "Totaal incl. btw",
                           "Te betalen", "Total a pagar", "Totale fattura", "Razem do zapłaty",
                           "Amount paid", "Grand Total", "Bezahlt"})
    EXPECT_EQ(first_label(line), kind::total) << line;
  for (const char* line :
       {"Total HT", "Subtotaal", "Base imponible", "Imponibile", "Wartość netto", "Taxable Value"})
    EXPECT_EQ(first_label(line), kind::subtotal) << line;
  for (const char* line :
       {"TVA 20 %", "BTW 21%", "IVA 21%", "Totale IVA", "Kwota VAT", "IGST @ 18%", "CGST 9%"})
    EXPECT_EQ(first_label(line), kind::vat) << line;
  // "Te betalen vóór" is a due date, not the total.
  EXPECT_EQ(first_label("Te betalen vóór 01-04-2024"), kind::due_date);
  EXPECT_EQ(first_label("Date de livraison"), kind::other_date);
  // Overlapping labels: "Date Due Date" is "Date" and "Due Date"; "Invoice Date Due Date" keeps
  // "Invoice Date".
  auto hs = find_labels("date due date");
  ASSERT_EQ(hs.size(), 2U);
  EXPECT_EQ(hs[0].k, kind::invoice_date);
  EXPECT_EQ(hs[1].k, kind::due_date);
  hs = find_labels("invoice date due date");
  ASSERT_EQ(hs.size(), 2U);
  EXPECT_EQ(hs[0].k, kind::invoice_date);
  EXPECT_EQ(hs[1].k, kind::due_date);
}

TEST(local_rules_labels, every_language_has_a_table) {
  std::vector<std::string> languages;
  for (const auto* t : label_tables())
    languages.emplace_back(t->language);
  EXPECT_EQ(languages, (std::vector<std::string>{"en", "de", "fr", "nl", "es", "it", "pl"}));
}

TEST(local_rules_dates, month_names_per_language) {
  EXPECT_EQ(parse_date("15 March 2024"), "2024-03-15");
  EXPECT_EQ(parse_date("March 15, 2024"), "2024-03-15");
  EXPECT_EQ(parse_date("15-Mar-2024"), "2024-03-15");
  EXPECT_EQ(parse_date("15. März 2024"), "2024-03-15");
  EXPECT_EQ(parse_date("1er février 2024"), "2024-02-01");
  EXPECT_EQ(parse_date("15 fevrier 2024"), "2024-02-15");
  EXPECT_EQ(parse_date("3 août 2024"), "2024-08-03");
  EXPECT_EQ(parse_date("15 maart 2024"), "2024-03-15");
  EXPECT_EQ(parse_date("15 de marzo de 2024"), "2024-03-15");
  EXPECT_EQ(parse_date("15 dicembre 2024"), "2024-12-15");
  EXPECT_EQ(parse_date("15 października 2024"), "2024-10-15");
  EXPECT_EQ(parse_date("15 wrzesnia 2024"), "2024-09-15");
  EXPECT_EQ(parse_date("15.03.2024 r."), "2024-03-15");
  EXPECT_EQ(parse_date("28 aoüt 2024"), "2024-08-28"); // OCR's accent on the wrong letter
}

TEST(local_rules_dates, day_order_follows_the_document_language) {
  // 03/04/2024 alone is ambiguous: French, Spanish, Italian, Dutch and Polish documents put the day
  // first, a US document the month.
  auto fr
      = fields_of("FACTURE\nFacture n° F-1\nDate de facture : 03/04/2024\nTotal TTC : 120,00 €\n");
  EXPECT_EQ(str(fr, "invoice_date"), "2024-04-03");
  auto us = fields_of("INVOICE\nInvoice # A-1\nInvoice Date: 03/04/2024\nTotal Due: $120.00\n");
  EXPECT_EQ(str(us, "invoice_date"), "2024-03-04");
}

TEST(local_rules_amounts, every_grouping_style) {
  EXPECT_EQ(parse_amount("1,234.56"), 1234.56);
  EXPECT_EQ(parse_amount("1.234,56"), 1234.56);
  EXPECT_EQ(parse_amount("1 234,56"), 1234.56);
  EXPECT_EQ(parse_amount("1,23,456.78"), 123456.78);     // India: lakh
  EXPECT_EQ(parse_amount("1,00,00,000.00"), 10000000.0); // crore
  EXPECT_EQ(parse_amount("₹1,23,456.78"), 123456.78);
  EXPECT_EQ(parse_amount("1 234,56 zł"), 1234.56);
  EXPECT_EQ(parse_amount("Rs. 1,250.00"), 1250.0);
  EXPECT_FALSE(parse_amount("1,2,3"));
}

TEST(local_rules_currency, codes_symbols_and_words) {
  EXPECT_EQ(find_currency("₹ 1,200.00"), "INR");
  EXPECT_EQ(find_currency("Rs. 1,200.00"), "INR");
  EXPECT_EQ(find_currency("1 200,00 zł"), "PLN");
  EXPECT_EQ(find_currency("1 200,00 zt"), "PLN"); // zł as English OCR reads it
  EXPECT_EQ(find_currency("1.200,00 euros"), "EUR");
  EXPECT_EQ(find_currency("€ 1.200,00"), "EUR");
  EXPECT_EQ(find_currency("US$1,200.00"), "USD");
  // A symbol glued to letters is a misread letter ("$wiatłowód").
  EXPECT_FALSE(find_currency("$wiattowod 500 Mbit"));
  EXPECT_FALSE(find_currency("hours 12"));
}

TEST(local_rules_languages, a_small_invoice_in_each_language) {
  struct sample {
    const char* text;
    const char* number;
    const char* date;
    double total;
    const char* currency;
  };
  const sample samples[] = {
      {"FACTURE\nHébergement Lumière SAS\nN° de facture : F2024-00123\nDate de livraison : "
       "02/03/2024\n"
       "Date de facture : 05/03/2024\nTotal HT  1 000,00 €\nTVA 20 %  200,00 €\nTotal TTC  1 "
       "200,00 €\n",
       "F2024-00123", "2024-03-05", 1200.0, "EUR"},
      {"FACTUUR\nFactuurnummer: 2024-0123\nFactuurdatum: 5 maart 2024\nVervaldatum: 19-03-2024\n"
       "Subtotaal € 100,00\nBTW 21% € 21,00\nTotaal € 121,00\n",
       "2024-0123", "2024-03-05", 121.0, "EUR"},
      {"FACTURA\nNº factura: A-2024/0123\nFecha de emisión: 5 de marzo de 2024\nBase imponible "
       "100,00 €\n"
       "IVA 21% 21,00 €\nTotal a pagar 121,00 €\n",
       "A-2024/0123", "2024-03-05", 121.0, "EUR"},
      {"FATTURA\nFattura n. 123/2024\nData fattura: 05/03/2024\nImponibile € 100,00\nIVA 22% € "
       "22,00\n"
       "Totale fattura € 122,00\n",
       "123/2024", "2024-03-05", 122.0, "EUR"},
      {"FAKTURA VAT\nFaktura nr FS 45/2024\nData sprzedaży: 01.03.2024\nData wystawienia: "
       "05.03.2024\n"
       "Wartość netto 100,00 zł\nVAT 23% 23,00 zł\nRazem do zapłaty 123,00 zł\n",
       "FS 45/2024", "2024-03-05", 123.0, "PLN"},
      {"TAX INVOICE\nInvoice No: INV/2024-25/0456\nDate: 05-03-2024\nTaxable Value Rs. "
       "1,00,000.00\n"
       "CGST @ 9% Rs. 9,000.00\nSGST @ 9% Rs. 9,000.00\nGrand Total Rs. 1,18,000.00\n",
       "INV/2024-25/0456", "2024-03-05", 118000.0, "INR"},
      {"Bayview Marketplace LLC\nOrder ID: 112-4471-9920\nOrder placed: March 1, 2024\nDate: March "
       "5, 2024\n"
       "Amount paid: $45.90\n",
       "112-4471-9920", "2024-03-05", 45.90, "USD"},
  };
  for (const auto& s : samples) {
    auto d = fields_of(s.text);
    EXPECT_EQ(str(d, "invoice_number"), s.number) << s.text;
    EXPECT_EQ(str(d, "invoice_date"), s.date) << s.text;
    EXPECT_DOUBLE_EQ(num(d, "total"), s.total) << s.text;
    EXPECT_EQ(str(d, "currency"), s.currency) << s.text;
  }
}

TEST(local_rules_stacked, labels_and_values_in_separate_columns_are_paired) {
  // Tesseract reads a two-column block as all labels, then all values.
  auto d = fields_of(
      "Thames Valley Hosting Ltd\n\nInvoice no:\nOrder date\nDate of issue\nDue Date\n\n"
      "Qty Unit price\n12 1,530.70\n\nTotal excl. VAT\nVAT @ 20%\nTotal\n\nInvoice\n\n"
      "INV-2025-3306\n31 March 2025\n5 April 2025\n19 April 2025\n\nAmount\n£18,368.40\n"
      "£1,855.58\n\n£20,223.98\n£4,044.80\n£24,268.78\n");
  EXPECT_EQ(str(d, "invoice_number"), "INV-2025-3306");
  EXPECT_EQ(str(d, "invoice_date"), "2025-04-05");
  EXPECT_EQ(str(d, "due_date"), "2025-04-19");
  EXPECT_DOUBLE_EQ(num(d, "subtotal"), 20223.98);
  EXPECT_DOUBLE_EQ(num(d, "vat_amount"), 4044.80);
  EXPECT_DOUBLE_EQ(num(d, "total"), 24268.78);
}

/// The hand-made texts of tests/unit/extraction/<folder>/ (NAME.txt, with its truth in
/// NAME.json): `check(name, the fields found, the truth)` for each. Returns how many there are.
template <class Check>
int for_each_text(const char* folder, Check check) {
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  EXPECT_NE(src, nullptr) << "INGESTD_SOURCE_DIR is not set (run through ctest)";
  if (src == nullptr)
    return 0;
  auto read = [](const std::filesystem::path& p) {
    std::ifstream in{p};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  int documents = 0;
  auto dir = std::filesystem::path{src} / "tests/unit/extraction" / folder;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".txt")
      continue;
    ++documents;
    auto json_path = e.path();
    json_path.replace_extension(".json");
    rapidjson::Document truth;
    truth.Parse(read(json_path).c_str());
    EXPECT_TRUE(truth.IsObject()) << json_path;
    if (truth.IsObject())
      check(e.path().filename().string(), fields_of(read(e.path())), truth);
  }
  return documents;
}

// Hand-made invoices in the layouts real vendors use (tests/unit/extraction/texts_multilingual/):
// each must give its invoice number, date, total and currency.
TEST(local_rules_languages, hand_made_invoices_give_their_key_fields) {
  auto documents = for_each_text("texts_multilingual", [](const std::string& name,
                                                          const rapidjson::Document& got,
                                                          const rapidjson::Document& truth) {
    EXPECT_EQ(str(got, "invoice_number"), truth["invoice_number"].GetString()) << name;
    EXPECT_EQ(str(got, "invoice_date"), truth["invoice_date"].GetString()) << name;
    EXPECT_NEAR(num(got, "total"), truth["total"].GetDouble(), 0.005) << name;
    EXPECT_EQ(str(got, "currency"), truth["currency"].GetString()) << name;
  });
  EXPECT_GE(documents, 8);
}

TEST(local_rules_stacked, a_row_of_headings_over_a_row_of_values_is_paired_in_order) {
  auto d = fields_of("Invoice The Grand Harrow Hotel\nInvoice Number Invoice Date Due Date\n"
                     "2025/980 12 September 2025 26/09/2025\n\nNet amount 100.00\nVAT 20% 20.00\n"
                     "Balance due £120.00\n");
  EXPECT_EQ(str(d, "invoice_number"), "2025/980");
  EXPECT_EQ(str(d, "invoice_date"), "2025-09-12");
  EXPECT_EQ(str(d, "due_date"), "2025-09-26");
}

// Hand-made till receipts as OCR reads them (tests/unit/extraction/texts_receipts/): cash with
// change, a card, a cash rounding, tax added or included, a name wrapped over two lines, a
// misread TOTAL label. Each must give its date, payable total, currency and merchant, and its tax
// id where the truth has one.
TEST(local_rules_receipts, hand_made_receipts_give_their_date_total_and_merchant) {
  auto documents = for_each_text("texts_receipts", [](const std::string& name,
                                                      const rapidjson::Document& got,
                                                      const rapidjson::Document& truth) {
    EXPECT_EQ(str(got, "invoice_date"), truth["invoice_date"].GetString()) << name;
    EXPECT_NEAR(num(got, "total"), truth["total"].GetDouble(), 0.005) << name;
    EXPECT_EQ(str(got, "currency"), truth["currency"].GetString()) << name;
    EXPECT_EQ(lower(str(got, "supplier_name")), lower(truth["supplier_name"].GetString())) << name;
    if (truth.HasMember("supplier_vat_id")) {
      EXPECT_EQ(str(got, "supplier_vat_id"), truth["supplier_vat_id"].GetString()) << name;
    }
  });
  EXPECT_GE(documents, 9);
}
