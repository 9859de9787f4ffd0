// describe_for_matching and the normalizers: realistic English, German and French documents,
// malformed input, and the extracted samples (the credit note cn01 and the invoice inv01).
#include <cmath>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "adapters/matching/features.hpp"
#include "tests/unit/matching/matching_samples.hpp"

using namespace ingestd;

namespace {

using test::read_sample;

const std::string en_invoice_json
    = R"({"invoice_number":"INV-2024-0117","invoice_date":"2024-03-15","supplier_name":"Acme Office Supplies Inc.",)"
      R"("currency":"USD","total":3529.46})";
const std::string en_invoice_text
    = "Acme Office Supplies Inc.                 INVOICE\n1200 Market Street\n"
      "Invoice number: INV-2024-0117\nInvoice date: 03/15/2024\nPO number: PO-88172\n"
      "Total due $3,529.46\n";

const std::string de_credit_json
    = R"({"invoice_number":"G-2024-017","invoice_date":"2024-04-02","supplier_name":"Müller & Söhne GmbH",)"
      R"("currency":"EUR","total":-238.40})";
const std::string de_credit_text
    = "Müller & Söhne GmbH\nHauptstraße 15, 80331 München\n\nGUTSCHRIFT\n"
      "Gutschriftsnummer: G-2024-017\nDatum: 02.04.2024\n"
      "Bezug: Rechnung Nr. RE-24-00891 vom 29.02.2024\nIhre Bestellnummer: 4500012345\n"
      "Gesamtbetrag -238,40 EUR\n";

const std::string fr_credit_text
    = "Société Dupont S.A.\n12 rue de la Paix, 75002 Paris\n\nAVOIR\nAvoir n° AV-2024-0042\n"
      "Facture d'origine : FA-2024-1187\nDate : 05/04/2024\nTotal TTC -120,00 €\n";

} // namespace

TEST(normalize, numbers_keep_upper_case_letters_and_digits) {
  EXPECT_EQ(normalize_number("inv-2024/0117"), "INV20240117");
  EXPECT_EQ(normalize_number(" RE 24.00891 "), "RE2400891");
  EXPECT_EQ(normalize_number("Nº 17"), "N17");
  EXPECT_EQ(normalize_number(""), "");
}

TEST(normalize, counterparties_lose_punctuation_and_legal_forms) {
  EXPECT_EQ(normalize_counterparty("Acme Office Supplies Inc."), "acme office supplies");
  EXPECT_EQ(normalize_counterparty("ACME  OFFICE SUPPLIES, INC"), "acme office supplies");
  EXPECT_EQ(normalize_counterparty("Müller & Söhne GmbH"), "müller söhne");
  EXPECT_EQ(normalize_counterparty("MÜLLER & SÖHNE GMBH"), "müller söhne");
  EXPECT_EQ(normalize_counterparty("Thames Valley Consulting Ltd"), "thames valley consulting");
  EXPECT_EQ(normalize_counterparty("Thames Valley Consulting Limited"), "thames valley consulting");
  EXPECT_EQ(normalize_counterparty("Nordic Design Studio B.V."), "nordic design studio");
  EXPECT_EQ(normalize_counterparty("Société Dupont S.A."), "société dupont");
  EXPECT_EQ(normalize_counterparty("Dupont SARL"), "dupont");
  EXPECT_EQ(normalize_counterparty("Rossi Costruzioni S.p.A."), "rossi costruzioni");
  EXPECT_EQ(normalize_counterparty("Kowalski Sp. z o.o."), "kowalski");
  EXPECT_EQ(normalize_counterparty("Globex LLC"), "globex");
  EXPECT_EQ(normalize_counterparty("Van Dijk N.V."), "van dijk");
  EXPECT_EQ(normalize_counterparty("García Hermanos S.L."), "garcía hermanos");
  EXPECT_EQ(normalize_counterparty("Schneider Elektrotechnik GmbH & Co. KG"),
            "schneider elektrotechnik");
  EXPECT_EQ(normalize_counterparty("Beispiel AG"), "beispiel");
  // A legal form alone is the name; a title printed beside the name is not part of it.
  EXPECT_EQ(normalize_counterparty("AG"), "ag");
  EXPECT_EQ(normalize_counterparty("Acme Office Supplies Inc. CREDIT NOTE"),
            "acme office supplies");
  EXPECT_EQ(normalize_counterparty(""), "");
}

TEST(normalize, searchable_text_is_lower_case_collapsed_and_bounded) {
  EXPECT_EQ(searchable_text("  Rechnung\tNr.\r\n  ÄÖÜ  ok \n"), "rechnung nr. äöü ok");
  EXPECT_EQ(searchable_text(""), "");
  std::string big;
  while (big.size() < 30'000)
    big += "Größe ";
  auto s = searchable_text(big);
  EXPECT_LE(s.size(), max_searchable_text_bytes);
  EXPECT_GT(s.size(), max_searchable_text_bytes - 8);
  // Cut on a character boundary: the text ends in a whole character.
  auto last = static_cast<unsigned char>(s.back());
  EXPECT_TRUE(last < 0x80 || (last & 0xC0) == 0x80);
  EXPECT_EQ(searchable_text(std::string{"a\0b\xFF", 4}), "ab\xEF\xBF\xBD");
}

TEST(normalize, sha256_and_similarity) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_DOUBLE_EQ(counterparty_similarity("acme office supplies", "acme office supplies"), 1.0);
  EXPECT_GT(counterparty_similarity("acme office supplies", "acme ofice supplies"), 0.6);
  EXPECT_LT(counterparty_similarity("acme office supplies", "weber logistik"), 0.2);
  EXPECT_EQ(counterparty_similarity("", "acme"), 0.0);
}

TEST(features, english_invoice) {
  auto f = describe_for_matching(en_invoice_json, en_invoice_text);
  EXPECT_EQ(f.kind, "invoice");
  EXPECT_EQ(f.number, "INV20240117");
  EXPECT_EQ(f.references, std::vector<std::string>{"PO88172"});
  EXPECT_EQ(f.counterparty, "Acme Office Supplies Inc.");
  EXPECT_EQ(f.normalized_counterparty, "acme office supplies");
  ASSERT_TRUE(f.total);
  EXPECT_DOUBLE_EQ(*f.total, 3529.46);
  EXPECT_EQ(f.currency, "USD");
  EXPECT_EQ(f.date, "2024-03-15");
  EXPECT_EQ(f.searchable_text.substr(0, 33), "acme office supplies inc. invoice");
  EXPECT_EQ(f.text_hash, sha256_hex(f.searchable_text));
  EXPECT_EQ(f.text_hash.size(), 64u);
}

TEST(features, german_credit_note_refers_to_invoice_and_order) {
  auto f = describe_for_matching(de_credit_json, de_credit_text);
  EXPECT_EQ(f.kind, "credit_note");
  EXPECT_EQ(f.number, "G2024017");
  EXPECT_EQ(f.references, (std::vector<std::string>{"RE2400891", "4500012345"}));
  EXPECT_EQ(f.normalized_counterparty, "müller söhne");
  EXPECT_EQ(f.currency, "EUR");
}

TEST(features, french_credit_note_from_text_only) {
  // No extraction: the local rules read the fields from the text.
  auto f = describe_for_matching("", fr_credit_text);
  EXPECT_EQ(f.kind, "credit_note");
  EXPECT_EQ(f.number, "AV20240042");
  EXPECT_EQ(f.references, std::vector<std::string>{"FA20241187"});
}

TEST(features, kinds_from_titles_and_sign) {
  EXPECT_EQ(
      describe_for_matching(R"({"invoice_number":"7781","total":-50})", "Acme\nStatement\n").kind,
      "credit_note");
  EXPECT_EQ(describe_for_matching(R"({"invoice_number":"CM-9"})",
                                  "Acme Corp\nCREDIT MEMO CM-9\nfor invoice 4471-A\n")
                .kind,
            "credit_note");
  auto po = describe_for_matching(
      "{}", "Globex Corporation\nPURCHASE ORDER\nPO number: PO-2024-0042\nTotal 500.00\n");
  EXPECT_EQ(po.kind, "purchase_order");
  EXPECT_EQ(po.number, "PO20240042");
  EXPECT_TRUE(po.references.empty());
  EXPECT_EQ(
      describe_for_matching(R"({"invoice_number":"123"})", "Bäckerei\nQuittung\nSumme 4,20\n").kind,
      "receipt");
  // "Purchase order no." in an invoice's header is a reference, not a title.
  auto inv = describe_for_matching(R"({"invoice_number":"A-100"})",
                                   "Purchase order no.: 4711-22\nInvoice A-100\n");
  EXPECT_EQ(inv.kind, "invoice");
  EXPECT_EQ(inv.references, std::vector<std::string>{"471122"});
  // A sentence that starts with a title word is not a title.
  EXPECT_EQ(describe_for_matching(R"({"invoice_number":"R-7"})",
                                  "Bestellung vom 12.03.2024\nRechnung R-7\n")
                .kind,
            "invoice");
  EXPECT_EQ(describe_for_matching("{}", "Corner Shop\nReceipt #1187\nTotal 4.20\n").kind,
            "receipt");
  EXPECT_EQ(describe_for_matching("{}", "Globex\nBill to: Acme\n").kind, "other");
  EXPECT_EQ(describe_for_matching("{}", "Dear customer, thank you.\n").kind, "other");
  // An explicit document_type wins.
  EXPECT_EQ(describe_for_matching(R"({"document_type":"purchase_order"})", "INVOICE\n").kind,
            "purchase_order");
}

TEST(features, references_skip_dates_addresses_and_the_own_number) {
  auto f = describe_for_matching(R"({"invoice_number":"INV-9"})",
                                 "INVOICE\nInvoice no. INV-9\nPO Box 1234, Springfield\n"
                                 "Order no.: 15.03.2024\nYour order: ORD-77\nRe: invoice INV-8\n");
  EXPECT_EQ(f.number, "INV9");
  EXPECT_EQ(f.references, (std::vector<std::string>{"ORD77", "INV8"}));
}

TEST(features, malformed_input_never_breaks) {
  for (const std::string& json : std::vector<std::string>{
           "", "null", "[1,2]", "{", R"({"total":"abc","invoice_date":"yesterday"})",
           std::string(100'000, '['), R"({"invoice_number":42,"total":1e400})"}) {
    auto f = describe_for_matching(json, std::string{"\xFF\xFE garbage \0 Rechnung", 20});
    EXPECT_FALSE(f.kind.empty());
    EXPECT_FALSE(f.total && !std::isfinite(*f.total));
  }
  auto none = describe_for_matching("", "");
  EXPECT_EQ(none.kind, "other");
  EXPECT_TRUE(none.text_hash.empty()); // empty texts are not duplicates of each other
}

TEST(features, deterministic) {
  auto a = describe_for_matching(de_credit_json, de_credit_text);
  auto b = describe_for_matching(de_credit_json, de_credit_text);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.number, b.number);
  EXPECT_EQ(a.references, b.references);
  EXPECT_EQ(a.text_hash, b.text_hash);
}

TEST(features_samples, the_credit_note_sample_refers_to_inv01) {
  auto cn = describe_for_matching(read_sample("cn01_en_credit_note.json"),
                                  read_sample("cn01_en_credit_note.txt"));
  EXPECT_EQ(cn.kind, "credit_note");
  EXPECT_EQ(cn.number, "CN20240031");
  EXPECT_EQ(cn.references, std::vector<std::string>{"INV20240117"});
  EXPECT_EQ(cn.normalized_counterparty, "acme office supplies");
  auto inv = describe_for_matching(read_sample("inv01_en_classic.json"),
                                   read_sample("inv01_en_classic.txt"));
  EXPECT_EQ(inv.kind, "invoice");
  EXPECT_EQ(inv.number, "INV20240117");
  EXPECT_EQ(inv.normalized_counterparty, "acme office supplies");
  auto scan = describe_for_matching(read_sample("inv01_en_classic_scan.json"),
                                    read_sample("inv01_en_classic_scan.txt"));
  EXPECT_EQ(scan.kind, "invoice");
  EXPECT_EQ(scan.number, "INV20240117");
  EXPECT_NE(scan.text_hash, inv.text_hash);
}
