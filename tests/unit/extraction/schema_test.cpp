// The embedded schema is the file in config/, is strict-mode shaped, and validates answers.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "adapters/extraction/extraction_schema.hpp"

using namespace ingestd;

namespace {

std::string valid_invoice() {
  return R"({"invoice_number":"INV-1","invoice_date":"2024-03-15","due_date":null,
    "supplier_name":"Acme","supplier_address":null,"supplier_vat_id":null,"customer_name":null,
    "currency":"EUR","line_items":[{"description":"Widget","quantity":2,"unit_price":5,"amount":10}],
    "subtotal":10,"vat_amount":1.9,"total":11.9,"extraction_successful":true,"confidence":"medium",
    "missing_fields":["due_date","supplier_address","supplier_vat_id","customer_name"]})";
}

} // namespace

TEST(extraction_schema, embedded_text_equals_config_file) {
  const char* src = std::getenv("INGESTD_SOURCE_DIR");
  ASSERT_NE(src, nullptr) << "INGESTD_SOURCE_DIR is not set (run through ctest)";
  std::ifstream in{std::string{src} + "/config/extraction_schema.json"};
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), std::string{extraction_schema_json()});
}

TEST(extraction_schema, is_strict_mode_shaped) {
  auto s = std::string{extraction_schema_json()};
  // Every object refuses unknown properties; spot-check the parts strict mode needs.
  EXPECT_NE(s.find("\"additionalProperties\": false"), std::string::npos);
  EXPECT_NE(s.find("\"enum\": [\"high\", \"medium\", \"low\"]"), std::string::npos);
  EXPECT_TRUE(validate_extraction_json(valid_invoice()).ok());
}

TEST(extraction_schema, reads_a_valid_answer) {
  auto r = extraction_from_json(valid_invoice());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_TRUE(r->extraction_successful);
  EXPECT_EQ(r->confidence, "medium");
  EXPECT_EQ(r->missing_fields.size(), 4u);
  EXPECT_NE(r->structured_data.find("\"total\":11.9"), std::string::npos);
}

TEST(extraction_schema, invalid_json_is_transient) {
  auto r = validate_extraction_json("{\"invoice_number\": ");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "llm.invalid_json");
  EXPECT_TRUE(r.error().transient());
}

TEST(extraction_schema, malformed_utf8_and_deep_nesting_are_invalid_json) {
  // A member name ending inside a UTF-8 sequence made RapidJSON's URI-fragment pointer read past
  // the name's end (heap over-read, found by fuzzing); such text is not JSON at all.
  auto bad_key = validate_extraction_json("{\"exceeds the context\xF2\":\"medium\"}");
  ASSERT_FALSE(bad_key.ok());
  EXPECT_EQ(bad_key.error().code, "llm.invalid_json");
  auto deep = std::string(100'000, '[') + std::string(100'000, ']');
  auto nested = validate_extraction_json("{\"line_items\":" + deep + "}");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code, "llm.invalid_json");
  EXPECT_EQ(validate_extraction_json(std::string(1 << 20, '[')).error().code, "llm.invalid_json");
}

TEST(extraction_schema, a_violation_at_a_non_ascii_member_is_reported) {
  auto extra = valid_invoice();
  extra.insert(1, "\"r\xC3\xA9"
                  "f/~x\":1,");
  auto r = validate_extraction_json(extra);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "llm.schema_invalid");
  EXPECT_NE(r.error().message.find("' at #"), std::string::npos) << r.error().message;
}

TEST(extraction_schema, violations_are_transient_and_named) {
  auto missing_total = valid_invoice();
  missing_total.replace(missing_total.find("\"total\":11.9,"), 13, "");
  auto r = validate_extraction_json(missing_total);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "llm.schema_invalid");
  EXPECT_TRUE(r.error().transient());
  EXPECT_NE(r.error().message.find("required"), std::string::npos) << r.error().message;

  auto extra = valid_invoice();
  extra.insert(1, "\"notes\":\"x\",");
  EXPECT_EQ(validate_extraction_json(extra).error().code, "llm.schema_invalid");

  auto bad_conf = valid_invoice();
  bad_conf.replace(bad_conf.find("\"medium\""), 8, "\"very high\"");
  EXPECT_EQ(validate_extraction_json(bad_conf).error().code, "llm.schema_invalid");

  auto bad_type = valid_invoice();
  bad_type.replace(bad_type.find("\"total\":11.9"), 12, "\"total\":\"11.9\"");
  EXPECT_EQ(validate_extraction_json(bad_type).error().code, "llm.schema_invalid");

  EXPECT_EQ(validate_extraction_json("[1,2]").error().code, "llm.schema_invalid");
}
