// Learning from corrections (adapters/extraction/supplier_knowledge): the supplier as the machine
// reads it, what an approval that corrected the machine teaches, and how the facts correct the
// same supplier's next extraction.
#include <gtest/gtest.h>

#include "adapters/extraction/supplier_knowledge.hpp"

namespace ingestd {
namespace {

const char* machine
    = R"({"invoice_number":"R-1","invoice_date":"2024-03-05","due_date":"2024-04-04",)"
      R"("supplier_name":"ACME  GMBH.","supplier_vat_id":null,"total":119})";

TEST(supplier_knowledge, the_supplier_is_its_vat_id_and_its_name_in_letters_and_digits) {
  EXPECT_EQ(supplier_keys(machine), std::vector<std::string>{"name:acmegmbh"});
  EXPECT_EQ(supplier_keys(R"({"supplier_name":"Acme","supplier_vat_id":"de 123.456.789"})"),
            (std::vector<std::string>{"vat:DE123456789", "name:acme"}));
  EXPECT_TRUE(supplier_keys(R"({"supplier_name":"A"})").empty());
  EXPECT_TRUE(supplier_keys("not json").empty());
}

TEST(supplier_knowledge, an_approval_teaches_the_name_the_vat_id_and_the_date_order) {
  auto facts = learn(machine, R"({"invoice_date":"2024-05-03","supplier_name":"ACME GmbH",)"
                              R"("supplier_vat_id":"DE123456789","total":119})");
  ASSERT_EQ(facts.size(), 3U);
  EXPECT_EQ(facts[0].supplier, "name:acmegmbh");
  EXPECT_EQ(facts[0].field, "supplier_name");
  EXPECT_EQ(facts[0].value, "ACME GmbH");
  EXPECT_EQ(facts[1].field, "supplier_vat_id");
  EXPECT_EQ(facts[1].value, "DE123456789");
  EXPECT_EQ(facts[2].field, "date_order");
  EXPECT_EQ(facts[2].value, "day_month_swapped");
  EXPECT_EQ(facts_json(facts).substr(0, 74),
            R"([{"supplier":"name:acmegmbh","field":"supplier_name","value":"ACME GmbH"},)");
  // Unchanged data, another date (not a swap), or a supplier the machine did not read: nothing.
  EXPECT_TRUE(learn(machine, machine).empty());
  EXPECT_TRUE(
      learn(machine, R"({"invoice_date":"2024-03-06","supplier_name":"ACME  GMBH."})").empty());
  EXPECT_TRUE(learn(R"({"supplier_name":null})", R"({"supplier_name":"ACME GmbH"})").empty());
}

TEST(supplier_knowledge, facts_are_learned_under_both_keys_and_the_vat_ids_decides_first) {
  auto machine_with_vat = R"({"supplier_name":"ACME GMBH","supplier_vat_id":"DE1234567"})";
  auto facts
      = learn(machine_with_vat, R"({"supplier_name":"ACME GmbH","supplier_vat_id":"DE1234567"})");
  ASSERT_EQ(facts.size(), 2U);
  EXPECT_EQ(facts[0].supplier, "vat:DE1234567");
  EXPECT_EQ(facts[1].supplier, "name:acmegmbh");
  // A later document with another VAT id (a misread) is found by its name, and one with another
  // name by its VAT id; with both known, the VAT id's fact decides.
  extraction by_name;
  by_name.structured_data = R"({"supplier_name":"ACME GMBH","supplier_vat_id":"DE7654321"})";
  EXPECT_EQ(apply_knowledge(facts, by_name).size(), 1U);
  EXPECT_NE(by_name.structured_data.find("ACME GmbH"), std::string::npos);
  std::vector<supplier_fact> both{{"name:acmegmbh", "supplier_name", "By Name", 1},
                                  {"vat:DE1234567", "supplier_name", "By VAT", 1}};
  extraction x;
  x.structured_data = machine_with_vat;
  auto applied = apply_knowledge(both, x);
  ASSERT_EQ(applied.size(), 1U);
  EXPECT_NE(x.structured_data.find("By VAT"), std::string::npos);
}

TEST(supplier_knowledge, the_facts_correct_the_same_suppliers_next_extraction_and_say_so) {
  std::vector<supplier_fact> facts{{"name:acmegmbh", "supplier_name", "ACME GmbH", 3},
                                   {"name:acmegmbh", "date_order", "day_month_swapped", 1},
                                   {"name:other", "supplier_vat_id", "DE999999999", 5}};
  extraction x;
  x.structured_data = machine;
  auto applied = apply_knowledge(facts, x);
  ASSERT_EQ(applied.size(), 2U);
  EXPECT_EQ(applied[0], "supplier_name 'ACME GmbH' (learned from 3 reviews)");
  EXPECT_EQ(applied[1], "invoice_date day and month swapped (learned from 1 review)");
  EXPECT_NE(x.structured_data.find(R"("supplier_name":"ACME GmbH")"), std::string::npos);
  EXPECT_NE(x.structured_data.find(R"("invoice_date":"2024-05-03")"), std::string::npos);
  EXPECT_NE(x.structured_data.find(R"("due_date":"2024-04-04")"), std::string::npos)
      << "a day past 12 is not swapped";
  EXPECT_NE(x.structured_data.find(R"("supplier_vat_id":null)"), std::string::npos)
      << "another supplier's fact";
  // Applied again: the name is already right; nothing else changes the data.
  extraction y;
  y.structured_data = R"({"supplier_name":"ACME GmbH","invoice_date":"2024-03-25"})";
  EXPECT_TRUE(apply_knowledge({{"name:acmegmbh", "supplier_name", "ACME GmbH", 3}}, y).empty());
  EXPECT_EQ(y.structured_data, R"({"supplier_name":"ACME GmbH","invoice_date":"2024-03-25"})");
}

TEST(supplier_knowledge, a_learned_vat_id_corrects_a_misread_one_but_not_another_printed_one) {
  std::vector<supplier_fact> facts{{"name:acmegmbh", "supplier_vat_id", "DE123456789", 2}};
  auto vat_after = [&](const std::string& read) {
    extraction x;
    x.structured_data = R"({"supplier_name":"ACME GmbH","supplier_vat_id":)" + read + "}";
    apply_knowledge(facts, x);
    return x.structured_data.substr(x.structured_data.find("supplier_vat_id") + 17);
  };
  EXPECT_EQ(vat_after("null"), R"("DE123456789"})") << "missed";
  EXPECT_EQ(vat_after(R"("DE 123 456 780")"), R"("DE123456789"})") << "misread";
  EXPECT_EQ(vat_after(R"("DE1234")"), R"("DE123456789"})") << "cut short";
  EXPECT_EQ(vat_after(R"("DE987654321")"), R"("DE987654321"})")
      << "another VAT id printed: the document's own";
}

// A supplier whose invoice number the rules miss: printed after its own label, beside another
// number the rules take.
const char* bill_1 = "ACME GmbH\nAuftrag 2024-88\nBeleg-Nr.: RG/4711/A  Datum: 05.03.2024\n"
                     "Summe 1.250\n";
const char* bill_2 = "ACME GmbH\nAuftrag 2024-93\nBeleg-Nr.: RG/4790/B  Datum: 12.04.2024\n"
                     "Summe 2.075 EUR\n";

TEST(supplier_knowledge, a_corrected_invoice_number_teaches_its_label_which_reads_the_next_one) {
  auto m1 = R"({"supplier_name":"ACME GmbH","invoice_number":"2024-88","total":1250})";
  auto facts = learn(m1,
                     R"({"supplier_name":"ACME GmbH","invoice_number":"RG/4711/A",)"
                     R"("total":1250})",
                     bill_1);
  ASSERT_EQ(facts.size(), 1U);
  EXPECT_EQ(facts[0].field, "invoice_number_label");
  EXPECT_EQ(facts[0].value, "Beleg-Nr");
  // Without the transcription nothing is learned about the number.
  EXPECT_TRUE(learn(m1, R"({"supplier_name":"ACME GmbH","invoice_number":"RG/4711/A"})").empty());

  extraction x;
  x.structured_data = R"({"supplier_name":"ACME GmbH","invoice_number":"2024-93"})";
  auto applied = apply_knowledge(facts, x, bill_2);
  ASSERT_EQ(applied.size(), 1U);
  EXPECT_EQ(applied[0], "invoice_number 'RG/4790/B' printed after 'Beleg-Nr' (learned from 1 "
                        "review)");
  EXPECT_NE(x.structured_data.find(R"("invoice_number":"RG/4790/B")"), std::string::npos);
  // A document without the label keeps the rules' number.
  extraction y;
  y.structured_data = R"({"supplier_name":"ACME GmbH","invoice_number":"2024-93"})";
  EXPECT_TRUE(apply_knowledge(facts, y, "ACME GmbH\nRechnung 2024-93\n").empty());
}

TEST(supplier_knowledge, the_label_is_the_words_before_the_value_or_the_line_above_it) {
  EXPECT_EQ(label_before("Invoice No. INV-7\n", "INV-7"), "Invoice No");
  EXPECT_EQ(label_before("Kunde 17   Our ref: Q-9\n", "Q-9"), "Our ref");
  EXPECT_EQ(label_before("Rechnungsnummer\nR-77-1\n", "R-77-1"), "Rechnungsnummer");
  EXPECT_EQ(label_before("Numéro de facture\nF-2024-3\n", "F-2024-3"), "Numéro de facture");
  EXPECT_EQ(label_before("Total 12 F-2024-3\n", "F-2024-3"), "") << "digits are no label";
  EXPECT_EQ(label_before("F-2024-3\n", "F-2024-3"), "");
  EXPECT_EQ(label_before("Ref X-F-2024-3\n", "F-2024-3"), "") << "inside another value";
  EXPECT_EQ(value_after("Numéro de facture\nF-2024-4 \n", "Numéro de facture"), "F-2024-4");
  EXPECT_EQ(value_after("our REF # Q-10, thanks", "Our ref"), "Q-10");
  EXPECT_EQ(value_after("Your ref: none\nOur ref: Q-11", "Our ref"), "Q-11");
  EXPECT_EQ(value_after("Kunden-Nr 5", "Nr"), "") << "a label starts at a blank";
}

TEST(supplier_knowledge, a_corrected_amount_teaches_the_suppliers_decimal_separator) {
  auto m1 = R"({"supplier_name":"ACME GmbH","total":1250})";
  auto facts = learn(m1, R"({"supplier_name":"ACME GmbH","total":1.25})", bill_1);
  ASSERT_EQ(facts.size(), 1U);
  EXPECT_EQ(facts[0].field, "decimal_separator");
  EXPECT_EQ(facts[0].value, ".");
  // A correction the printed digits do not explain teaches nothing.
  EXPECT_TRUE(learn(m1, R"({"supplier_name":"ACME GmbH","total":125})", bill_1).empty());

  extraction x;
  x.structured_data = R"({"supplier_name":"ACME GmbH","total":2075,"vat_amount":null})";
  auto applied = apply_knowledge(facts, x, bill_2);
  ASSERT_EQ(applied.size(), 1U);
  EXPECT_EQ(applied[0], "total 2.075 with '.' as the decimal separator (learned from 1 review)");
  EXPECT_NE(x.structured_data.find(R"("total":2.075)"), std::string::npos);
}

TEST(supplier_knowledge, numbers_read_with_a_given_decimal_separator) {
  EXPECT_EQ(number_with("1.250", '.'), 1.25);
  EXPECT_EQ(number_with("1.250", ','), 1250.0);
  EXPECT_EQ(number_with("1.234,56", ','), 1234.56);
  EXPECT_EQ(number_with("1'234.5", '.'), 1234.5);
  EXPECT_EQ(number_with("12", ','), 12.0);
  EXPECT_FALSE(number_with("1.234,56", '.'));
  EXPECT_FALSE(number_with("1.23.4", ','));
  EXPECT_FALSE(number_with("15.03.2024", ','));
  EXPECT_FALSE(number_with("1,2,3", ','));
  EXPECT_FALSE(number_with("", '.'));
  EXPECT_FALSE(number_with(",5", ','));
}

TEST(supplier_knowledge, the_audit_detail_names_each_changed_field) {
  std::vector<std::string> applied{"supplier_name 'A; B' (learned from 2 reviews)",
                                   "invoice_date day and month swapped (learned from 1 review)"};
  auto detail = learned_detail(applied);
  EXPECT_EQ(detail, "supplier_name 'A; B' (learned from 2 reviews); invoice_date day and month "
                    "swapped (learned from 1 review)");
  auto fields = learned_fields(detail);
  ASSERT_EQ(fields.size(), 2U);
  EXPECT_EQ(fields[0].first, "supplier_name");
  EXPECT_EQ(fields[0].second, applied[0]);
  EXPECT_EQ(fields[1].first, "invoice_date");
  EXPECT_EQ(fields[1].second, applied[1]);
  EXPECT_TRUE(learned_fields("").empty());
  EXPECT_TRUE(learned_fields("no such entry").empty());
}

} // namespace
} // namespace ingestd
