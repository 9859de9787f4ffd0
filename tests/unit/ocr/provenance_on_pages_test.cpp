// Where extracted values are on real pages (locate_fields over the transcription's word boxes):
// a native PDF's text boxes (poppler) and a scan's words (Tesseract) put the same fields in the
// same places, and every box is on the page.
#include <chrono>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "adapters/extraction/provenance.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

transcription read_page(const std::string& file, const std::string& mime) {
  test::counting_executor executor{2};
  local_transcriber provider{executor, {}};
  transcription_request req;
  req.bytes = test::read_binary(test::corpus_dir() + "/" + file);
  req.mime_type = mime;
  auto r = test::transcribe_and_wait(provider, std::move(req), 180s);
  if (!r || !r->ok()) {
    ADD_FAILURE() << file << ": " << (r ? r->error().describe() : "no callback");
    return {};
  }
  return std::move(**r);
}

std::map<std::string, field_source> located(const transcription& t, const std::string& invoice) {
  std::map<std::string, field_source> out;
  auto truth = test::read_binary(test::corpus_dir() + "/truth/" + invoice + ".json");
  for (auto& s : locate_fields(truth, t))
    out[s.field] = s;
  return out;
}

void expect_on_the_page(const transcription& t) {
  ASSERT_FALSE(t.pages.empty());
  for (auto& p : t.pages) {
    EXPECT_GT(p.words.size(), 50u) << "page " << p.number;
    for (auto& w : p.words) {
      EXPECT_FALSE(w.text.empty());
      EXPECT_LE(0.0F, w.left);
      EXPECT_LT(w.left, w.right) << w.text;
      EXPECT_LE(w.right, 1.0F);
      EXPECT_LE(0.0F, w.top);
      EXPECT_LT(w.top, w.bottom) << w.text;
      EXPECT_LE(w.bottom, 1.0F);
    }
  }
}

TEST(unit_ocr_provenance, a_text_pdf_and_its_scan_put_each_field_in_the_same_place) {
  auto pdf = read_page("inv01_en_classic.pdf", "application/pdf");
  auto scan = read_page("inv01_en_classic_scan.png", "image/png");
  ASSERT_TRUE(pdf.native_text);
  ASSERT_FALSE(scan.native_text);
  expect_on_the_page(pdf);
  expect_on_the_page(scan);
  auto in_pdf = located(pdf, "inv01");
  auto in_scan = located(scan, "inv01");
  for (auto field : {"invoice_number", "invoice_date", "supplier_name", "customer_name", "subtotal",
                     "vat_amount", "total", "line_items[0].description", "line_items[0].quantity",
                     "line_items[0].unit_price", "line_items[0].amount",
                     "line_items[3].description", "line_items[3].amount"}) {
    ASSERT_TRUE(in_pdf.contains(field)) << field << " not found in the PDF's text boxes";
    ASSERT_TRUE(in_scan.contains(field)) << field << " not found in the scan's words";
    auto& a = in_pdf[field].span;
    auto& b = in_scan[field].span;
    // The same place within 2% of the page (the scan is the page rendered at 300 dpi).
    EXPECT_NEAR(a.left, b.left, 0.02) << field << ": " << a.text << " / " << b.text;
    EXPECT_NEAR(a.top, b.top, 0.02) << field << ": " << a.text << " / " << b.text;
    EXPECT_NEAR(a.right, b.right, 0.02) << field << ": " << a.text << " / " << b.text;
    EXPECT_NEAR(a.bottom, b.bottom, 0.02) << field << ": " << a.text << " / " << b.text;
  }
  // The total is below the invoice number, the VAT between the subtotal and the total.
  EXPECT_GT(in_pdf["total"].span.top, in_pdf["invoice_number"].span.bottom);
  EXPECT_GT(in_pdf["vat_amount"].span.top, in_pdf["subtotal"].span.top);
  EXPECT_GT(in_pdf["total"].span.top, in_pdf["vat_amount"].span.top);
}

TEST(unit_ocr_provenance, the_words_survive_the_stored_form) {
  auto pdf = read_page("inv02_de_modern.pdf", "application/pdf");
  auto back = transcription_from_json(to_json(pdf));
  ASSERT_TRUE(back) << back.error().describe();
  ASSERT_EQ(back->pages.size(), pdf.pages.size());
  ASSERT_EQ(back->pages[0].words.size(), pdf.pages[0].words.size());
  EXPECT_EQ(back->pages[0].words[3].text, pdf.pages[0].words[3].text);
  EXPECT_NEAR(back->pages[0].words[3].left, pdf.pages[0].words[3].left, 0.0001);
  auto in_pdf = located(*back, "inv02");
  ASSERT_TRUE(in_pdf.contains("total"));
  EXPECT_EQ(in_pdf["total"].span.text, "5.519,70");
  ASSERT_TRUE(in_pdf.contains("invoice_number"));
  EXPECT_EQ(in_pdf["invoice_number"].span.text, "RE-24-00891");
}

} // namespace
