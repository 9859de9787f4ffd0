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
  EXPECT_EQ(applied[1], "date_order day and month swapped (learned from 1 review)");
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

} // namespace
} // namespace ingestd
