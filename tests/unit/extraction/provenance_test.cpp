// Where each extracted value came from (locate_fields): values found again among a page's words.
#include <gtest/gtest.h>

#include <rapidjson/document.h>

#include "adapters/extraction/provenance.hpp"

namespace ingestd {
namespace {

/// A page whose words stand on lines of their own height, one after the other.
transcription_page page_of(int number, const std::vector<std::vector<std::string>>& lines) {
  transcription_page p;
  p.number = number;
  float top = 0.05F;
  for (const auto& line : lines) {
    float left = 0.05F;
    for (const auto& w : line) {
      float width = 0.012F * static_cast<float>(w.size());
      p.words.push_back(page_word{w, left, top, left + width, top + 0.02F});
      p.text += w + ' ';
      left += width + 0.01F;
    }
    p.text += '\n';
    top += 0.03F;
  }
  return p;
}

const field_source* source_of(const std::vector<field_source>& all, std::string_view field) {
  for (auto& s : all)
    if (s.field == field)
      return &s;
  return nullptr;
}

TEST(locate_fields, finds_each_value_in_its_printed_form_with_its_box) {
  transcription t;
  t.pages.push_back(page_of(1, {{"Müller", "&", "Söhne", "GmbH"},
                                {"Hauptstraße", "15,", "80331", "München"},
                                {"USt-IdNr.", "DE", "123", "456", "789"},
                                {"RECHNUNG"},
                                {"Rechnungsnummer:", "RE-24-00891"},
                                {"Rechnungsdatum:", "29.02.2024"},
                                {"Fällig", "am:", "14.", "März", "2024"},
                                {"Beratung", "12,5", "120,00", "1.500,00", "EUR"}}));
  t.pages.push_back(page_of(2, {{"Zwischensumme", "4.638,40", "EUR"},
                                {"MwSt.", "19%", "881,30", "EUR"},
                                {"Gesamtbetrag", "5", "519,70", "EUR"}}));
  auto all = locate_fields(
      R"({"invoice_number":"RE-24-00891","invoice_date":"2024-02-29","due_date":"2024-03-14",)"
      R"("supplier_name":"Müller & Söhne GmbH","supplier_address":"Hauptstraße 15, 80331 München",)"
      R"("supplier_vat_id":"DE123456789","customer_name":null,"currency":"EUR",)"
      R"("subtotal":4638.4,"vat_amount":881.3,"total":5519.7,"line_items":[]})",
      t);
  auto* number = source_of(all, "invoice_number");
  ASSERT_NE(number, nullptr);
  EXPECT_EQ(number->page, 1);
  EXPECT_EQ(number->span.text, "RE-24-00891");
  // The box is the word's own: right of its label, on the label's line.
  auto& label = t.pages[0].words[14];
  ASSERT_EQ(label.text, "Rechnungsnummer:");
  EXPECT_GT(number->span.left, label.right);
  EXPECT_FLOAT_EQ(number->span.top, label.top);
  ASSERT_NE(source_of(all, "invoice_date"), nullptr);
  EXPECT_EQ(source_of(all, "invoice_date")->span.text, "29.02.2024");
  ASSERT_NE(source_of(all, "due_date"), nullptr);
  EXPECT_EQ(source_of(all, "due_date")->span.text, "14. März 2024");
  ASSERT_NE(source_of(all, "supplier_name"), nullptr);
  EXPECT_EQ(source_of(all, "supplier_name")->span.text, "Müller & Söhne GmbH");
  // Spacing and punctuation aside.
  ASSERT_NE(source_of(all, "supplier_vat_id"), nullptr);
  EXPECT_EQ(source_of(all, "supplier_vat_id")->span.text, "DE 123 456 789");
  ASSERT_NE(source_of(all, "supplier_address"), nullptr);
  EXPECT_EQ(source_of(all, "supplier_address")->span.text, "Hauptstraße 15, 80331 München");
  // The first EUR on the document.
  ASSERT_NE(source_of(all, "currency"), nullptr);
  EXPECT_EQ(source_of(all, "currency")->span.text, "EUR");
  EXPECT_EQ(source_of(all, "currency")->page, 1);
  // Amounts by value, on the second page; the total's thousands grouped by a space.
  ASSERT_NE(source_of(all, "subtotal"), nullptr);
  EXPECT_EQ(source_of(all, "subtotal")->span.text, "4.638,40");
  EXPECT_EQ(source_of(all, "subtotal")->page, 2);
  ASSERT_NE(source_of(all, "vat_amount"), nullptr);
  EXPECT_EQ(source_of(all, "vat_amount")->span.text, "881,30");
  ASSERT_NE(source_of(all, "total"), nullptr);
  EXPECT_EQ(source_of(all, "total")->span.text, "5 519,70");
  // Null values are not looked for.
  EXPECT_EQ(source_of(all, "customer_name"), nullptr);
}

TEST(locate_fields, an_amount_is_the_last_of_its_value_and_never_part_of_another_number) {
  transcription t;
  t.pages.push_back(page_of(1, {{"Widget", "1", "100.00", "100.00"},
                                {"Subtotal", "100.00"},
                                {"Total", "$100.00"},
                                {"Invoice", "1100.00"}}));
  auto all = locate_fields(R"({"total":100,"subtotal":100,"vat_amount":1100.5})", t);
  ASSERT_NE(source_of(all, "total"), nullptr);
  EXPECT_EQ(source_of(all, "total")->span.text, "$100.00");
  EXPECT_EQ(source_of(all, "subtotal")->span.text, "$100.00");
  EXPECT_EQ(source_of(all, "vat_amount"), nullptr);
}

TEST(locate_fields, nothing_for_values_not_on_the_page_words_without_boxes_or_bad_json) {
  transcription t;
  t.pages.push_back(page_of(1, {{"Invoice", "INV-1"}, {"Total", "119.00"}}));
  EXPECT_TRUE(locate_fields(R"({"invoice_number":"INV-2","total":120})", t).empty());
  EXPECT_TRUE(locate_fields("not json", t).empty());
  transcription text_only;
  text_only.pages.push_back(transcription_page{1, "Invoice INV-1\nTotal 119.00", 1, {}, {}});
  EXPECT_TRUE(locate_fields(R"({"invoice_number":"INV-1","total":119})", text_only).empty());
}

TEST(locate_fields, a_currency_printed_as_its_sign_is_found_by_it) {
  transcription t;
  t.pages.push_back(page_of(1, {{"Zwischensumme", "€", "44.507,04"}, {"Total", "₹1,435.35"}}));
  auto euro = locate_fields(R"({"currency":"EUR"})", t);
  ASSERT_EQ(euro.size(), 1u);
  EXPECT_EQ(euro[0].span.text, "€");
  auto rupee = locate_fields(R"({"currency":"INR"})", t);
  ASSERT_EQ(rupee.size(), 1u);
  EXPECT_EQ(rupee[0].span.text, "₹1,435.35");
  EXPECT_TRUE(locate_fields(R"({"currency":"CHF"})", t).empty());
}

TEST(locate_fields, line_items_are_their_description_and_the_numbers_on_its_line) {
  transcription t;
  t.pages.push_back(page_of(1, {{"Description", "Qty", "Unit", "price", "Amount"},
                                {"Paper", "A4", "10", "5.00", "50.00"},
                                {"Toner", "1", "50.00", "50.00"},
                                {"Paper", "A4", "2", "5.00", "10.00"},
                                {"Total", "110.00"}}));
  auto all = locate_fields(
      R"({"line_items":[{"description":"Paper A4","quantity":10,"unit_price":5,"amount":50},)"
      R"({"description":"Toner","quantity":1,"unit_price":50,"amount":50},)"
      R"({"description":"Paper A4","quantity":2,"unit_price":5,"amount":10},)"
      R"({"description":"Not on the page","quantity":1,"unit_price":1,"amount":1}]})",
      t);
  auto line = [&](int row, const char* column) {
    return source_of(all, "line_items[" + std::to_string(row) + "]." + column);
  };
  ASSERT_NE(line(0, "description"), nullptr);
  EXPECT_EQ(line(0, "description")->span.text, "Paper A4");
  EXPECT_EQ(line(0, "quantity")->span.text, "10");
  EXPECT_EQ(line(0, "amount")->span.text, "50.00");
  // The same value twice on a line: the unit price the left one, the amount the right one.
  ASSERT_NE(line(1, "unit_price"), nullptr);
  ASSERT_NE(line(1, "amount"), nullptr);
  EXPECT_LT(line(1, "unit_price")->span.left, line(1, "amount")->span.left);
  EXPECT_EQ(line(1, "quantity")->span.text, "1");
  // A description printed twice: the second line is the one after the first.
  ASSERT_NE(line(2, "description"), nullptr);
  EXPECT_GT(line(2, "description")->span.top, line(1, "description")->span.top);
  EXPECT_EQ(line(2, "amount")->span.text, "10.00");
  EXPECT_EQ(line(3, "description"), nullptr);
  EXPECT_EQ(line(3, "amount"), nullptr);
}

TEST(locate_fields, the_json_names_page_box_and_text) {
  transcription t;
  t.pages.push_back(page_of(1, {{"Total", "119.00"}}));
  rapidjson::Document doc;
  auto json = to_json(locate_fields(R"({"total":119})", t));
  doc.Parse(json.c_str());
  ASSERT_FALSE(doc.HasParseError()) << json;
  ASSERT_TRUE(doc.HasMember("total")) << json;
  EXPECT_EQ(doc["total"]["page"].GetInt(), 1);
  EXPECT_EQ(std::string{doc["total"]["text"].GetString()}, "119.00");
  ASSERT_EQ(doc["total"]["box"].Size(), 4u);
  EXPECT_GT(doc["total"]["box"][2].GetDouble(), doc["total"]["box"][0].GetDouble());
}

} // namespace
} // namespace ingestd
