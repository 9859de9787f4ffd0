// The review desk's request bodies (parse_review_request) and the merge of a reviewer's fields into
// a document's data (apply_review_fields), without the desk or its services.
#include <gtest/gtest.h>

#include "review/review_request.hpp"

namespace ingestd {
namespace {

const char* invoice
    = R"({"invoice_number":"INV-1","invoice_date":"2024-03-01","due_date":"2024-03-31",)"
      R"("supplier_name":"Acme GmbH","supplier_address":"Main St 1, Berlin",)"
      R"("supplier_vat_id":"DE123456789","customer_name":"Beta Ltd","currency":"EUR",)"
      R"("line_items":[{"description":"Widget","quantity":1,"unit_price":100,"amount":100}],)"
      R"("subtotal":100,"vat_amount":19,"total":120,"extraction_successful":true,)"
      R"("confidence":"medium","missing_fields":[]})";

std::string message_of(std::string_view action, std::string_view body) {
  auto r = parse_review_request(action, body);
  if (r)
    return "accepted";
  EXPECT_EQ(r.error().code, "review.invalid");
  EXPECT_TRUE(r.error().permanent());
  return r.error().message;
}

TEST(parse_review_request, check_takes_the_fields_as_json_text_and_needs_no_version) {
  auto r = parse_review_request("check", R"({"fields": {"total": 119, "line_items": []}})");
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->fields, R"({"total":119,"line_items":[]})");
  EXPECT_FALSE(r->version);
  auto empty = parse_review_request("check", "");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->fields.empty());
  // Whatever "fields" holds is passed on as JSON; the merge refuses what is not an object.
  auto null_fields = parse_review_request("check", R"({"fields":null})");
  ASSERT_TRUE(null_fields);
  EXPECT_EQ(null_fields->fields, "null");
}

TEST(parse_review_request, approve_reject_and_reprocess_read_their_members) {
  auto approve = parse_review_request("approve", R"({"version":3,"fields":{"total":119}})");
  ASSERT_TRUE(approve) << approve.error().describe();
  EXPECT_EQ(approve->version, 3);
  EXPECT_EQ(approve->fields, R"({"total":119})");
  EXPECT_TRUE(approve->reason.empty());

  auto reject = parse_review_request("reject", R"({"version":2,"reason":"not an invoice"})");
  ASSERT_TRUE(reject);
  EXPECT_EQ(reject->version, 2);
  EXPECT_EQ(reject->reason, "not an invoice");
  auto no_reason = parse_review_request("reject", R"({"version":2,"reason":7})");
  ASSERT_TRUE(no_reason);
  EXPECT_TRUE(no_reason->reason.empty());

  auto reprocess = parse_review_request(
      "reprocess",
      R"({"version":4,"transcription_provider":"tesseract","extraction_provider":null})");
  ASSERT_TRUE(reprocess);
  EXPECT_EQ(reprocess->providers.transcription, "tesseract");
  EXPECT_TRUE(reprocess->providers.extraction.empty());
  // Other actions' members are not read.
  auto approve_with_providers
      = parse_review_request("approve", R"({"version":1,"provider":"llm","reason":"x"})");
  ASSERT_TRUE(approve_with_providers);
  EXPECT_TRUE(approve_with_providers->reason.empty());
}

TEST(parse_review_request, fields_that_a_jsonb_column_refuses_are_a_clear_error) {
  // RapidJSON reads a \u0000 escape, a lone surrogate and bytes that are not UTF-8; PostgreSQL
  // would refuse the approval's data with them.
  for (std::string name : {R"(Acme\u0000 GmbH)", R"(Acme \udc00GmbH)", "Acme \xff GmbH"})
    for (auto action : {"check", "approve"})
      EXPECT_EQ(message_of(action, R"({"version":1,"fields":{"supplier_name":")" + name + "\"}}"),
                "the fields hold text that cannot be stored: a \\u0000, a lone surrogate or "
                "bytes that are not UTF-8")
          << name;
  // So is a rejection's reason, which was cut at its first NUL before.
  for (std::string reason : {R"(duplicate\u0000 of 17)", R"(duplicate \udc00)", "dup \xff"})
    EXPECT_EQ(message_of("reject", R"({"version":1,"reason":")" + reason + "\"}"),
              "the reason holds text that cannot be stored: a \\u0000, a lone surrogate or "
              "bytes that are not UTF-8")
        << reason;
  // Text that it stores comes through as it was written, escaped or not.
  auto r = parse_review_request(
      "check", R"({"fields":{"supplier_name":"M\u00fcller & S\u00f6hne","currency":"\ud83d\ude00",)"
               R"("invoice_number":"a\\u0000 \u0001"}})");
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->fields,
            "{\"supplier_name\":\"M\xC3\xBCller & S\xC3\xB6hne\",\"currency\":\"\xF0\x9F\x98\x80\","
            "\"invoice_number\":\"a\\\\u0000 \\u0001\"}");
}

TEST(parse_review_request, a_bad_body_is_a_clear_error) {
  EXPECT_EQ(message_of("check", "[1]"), "the body is not a JSON object");
  EXPECT_EQ(message_of("check", "{\"fields\":"), "the body is not a JSON object");
  std::string deep = "{}";
  for (int i = 0; i < 16; ++i)
    deep.insert(0, "{\"a\":").append("}");
  EXPECT_EQ(message_of("check", deep), "the body nests deeper than 16 levels");
  EXPECT_EQ(message_of("check", deep.substr(5, deep.size() - 6)), "accepted");
  EXPECT_EQ(message_of("check", std::string(100'000, '[')), "the body is not a JSON object");
  for (auto body : {R"({})", R"({"version":"3"})", R"({"version":1.5})", R"({"version":null})"})
    EXPECT_EQ(message_of("approve", body),
              "\"version\" (the document's version you reviewed) is required")
        << body;
  EXPECT_NE(message_of("reprocess", R"({"version":1,"provider":"llm"})").find("not \"provider\""),
            std::string::npos);
  EXPECT_EQ(message_of("reprocess", R"({"version":1,"extraction_provider":["llm"]})"),
            "\"extraction_provider\" must be a provider's name or null");
}

TEST(apply_review_fields, records_the_changes_and_what_the_data_still_lacks) {
  auto r = apply_review_fields(invoice, R"({"total":119,"due_date":null,"currency":"EUR"})");
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->changes,
            R"({"total":{"from":120,"to":119},"due_date":{"from":"2024-03-31","to":null}})");
  EXPECT_NE(r->data.find(R"("total":119)"), std::string::npos) << r->data;
  EXPECT_NE(r->data.find(R"("missing_fields":["due_date"])"), std::string::npos) << r->data;
  // Unchanged: nothing recorded, the data as it was written.
  auto same = apply_review_fields(invoice, R"({"total":120})");
  ASSERT_TRUE(same);
  EXPECT_EQ(same->changes, "{}");
  EXPECT_EQ(same->data, invoice);
  // The reviewer's own list of missing fields stays.
  auto own = apply_review_fields(invoice, R"({"due_date":null,"missing_fields":[]})");
  ASSERT_TRUE(own);
  EXPECT_NE(own->data.find(R"("missing_fields":[])"), std::string::npos) << own->data;
}

TEST(apply_review_fields, starts_from_an_empty_invoice_without_usable_data) {
  for (const char* data : {"", "not json", "[]"}) {
    auto r = apply_review_fields(data, R"({"line_items":[{"description":"Widget","quantity":1,)"
                                       R"("unit_price":100,"amount":100}]})");
    ASSERT_TRUE(r) << r.error().describe();
    EXPECT_EQ(r->data.rfind(R"({"invoice_number":null,)", 0), 0u) << r->data;
    EXPECT_NE(r->data.find(R"("extraction_successful":true,"confidence":"high")"),
              std::string::npos)
        << r->data;
    EXPECT_NE(r->changes.find(R"("line_items":{"from":[],"to":[{"description":"Widget")"),
              std::string::npos)
        << r->changes;
  }
}

TEST(apply_review_fields, refuses_fields_that_are_not_an_object_or_not_in_the_schema) {
  for (const char* fields : {"null", "[]", "\"total\"", "{"}) {
    auto r = apply_review_fields(invoice, fields);
    ASSERT_FALSE(r) << fields;
    EXPECT_EQ(r.error().code, "review.invalid");
    EXPECT_EQ(r.error().message, "\"fields\" must be a JSON object");
  }
  auto unknown = apply_review_fields(invoice, R"({"total":1,"colour":"red"})");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown field 'colour'");
}

} // namespace
} // namespace ingestd
