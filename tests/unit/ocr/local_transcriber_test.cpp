// The local provider end to end on the fixture corpus: native PDF text, OCR of scans (PNG, JPEG,
// scanned PDF, multi-page TIFF), every bad input as a named permanent error, limits, the
// per-document deadline, the executor's expiry path, and preprocessing of degraded scans.

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "adapters/ocr/local_transcriber.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

constexpr auto wait_limit = 180s;

/// This process's CPU time so far, all its threads (the executor's included).
std::chrono::duration<double> process_cpu() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return std::chrono::duration<double>(static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9);
}

class unit_ocr_local_transcriber : public ::testing::Test {
protected:
  test::counting_executor executor_{2};

  result<transcription> run(const std::string& file, local_transcriber_options opts = {},
                            transcription_request req = {}) {
    req.bytes = test::read_binary(test::corpus_dir() + "/" + file);
    if (req.mime_type.empty())
      req.mime_type = mime_for(file);
    local_transcriber provider{executor_, std::move(opts)};
    auto r = test::transcribe_and_wait(provider, std::move(req), wait_limit);
    if (!r) {
      ADD_FAILURE() << "no callback within the wait limit for " << file;
      return error::make_transient("test.timeout", "no callback");
    }
    return std::move(*r);
  }

  result<transcription> run_bytes(std::string bytes, local_transcriber_options opts = {}) {
    transcription_request req;
    req.bytes = std::move(bytes);
    req.mime_type = "application/pdf";
    local_transcriber provider{executor_, std::move(opts)};
    auto r = test::transcribe_and_wait(provider, std::move(req), wait_limit);
    if (!r)
      return error::make_transient("test.timeout", "no callback");
    return std::move(*r);
  }

  static std::string mime_for(const std::string& file) {
    auto ext = std::filesystem::path(file).extension().string();
    if (ext == ".pdf")
      return "application/pdf";
    if (ext == ".png")
      return "image/png";
    if (ext == ".jpg")
      return "image/jpeg";
    if (ext == ".tiff")
      return "image/tiff";
    return "text/plain";
  }
};

/// A one-page PDF of `points` x `points` whose text layer is `text` (too short to count as a
/// native page, so the page is rendered for OCR).
std::string pdf_with_text(const std::string& text, int points) {
  std::string content = "BT /F1 14 Tf 72 72 Td (" + text + ") Tj ET";
  auto side = std::to_string(points);
  return "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
         "2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n"
         "3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 "
         + side + " " + side
         + "]/Contents 4 0 R"
           "/Resources<</Font<</F1 5 0 R>>>>>>endobj\n"
           "4 0 obj<</Length "
         + std::to_string(content.size()) + ">>stream\n" + content
         + "\nendstream endobj\n"
           "5 0 obj<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>endobj\n"
           "trailer<</Root 1 0 R>>\n%%EOF\n";
}

} // namespace

TEST_F(unit_ocr_local_transcriber,
       a_pdf_page_that_cannot_be_rendered_is_kept_with_its_text_layer_and_a_warning) {
  // Task-specific recovery: rendering fails (the page is too large for the pixel limit at any
  // usable resolution); the page's text layer is kept instead of failing the document.
  local_transcriber_options opts;
  opts.limits.max_page_pixels = 1'000;
  auto r = run_bytes(pdf_with_text("Total 12.00", 14'400), opts);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_NE(r->text.find("Total 12.00"), std::string::npos) << r->text;
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("page 1: ocr.too_large"), std::string::npos) << r->warnings[0];
  EXPECT_NE(r->warnings[0].find("kept its text layer only"), std::string::npos) << r->warnings[0];
  EXPECT_LT(r->quality_score, 1.0);
  // The same page renders under the default limits: OCR runs, nothing to warn about.
  auto normal = run_bytes(pdf_with_text("Total 12.00", 612));
  ASSERT_TRUE(normal.ok()) << normal.error().describe();
  EXPECT_TRUE(normal->warnings.empty());
}

TEST_F(unit_ocr_local_transcriber, text_pdf_uses_the_text_layer_without_ocr) {
  auto r = run("inv02_de_modern.pdf");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_TRUE(r->native_text);
  EXPECT_FALSE(r->preprocessed);
  EXPECT_EQ(r->provider, "tesseract");
  EXPECT_EQ(r->page_count, 1);
  EXPECT_DOUBLE_EQ(r->quality_score, 1.0);
  EXPECT_NE(r->text.find("RE-24-00891"), std::string::npos);
  EXPECT_NE(r->text.find("Müller & Söhne GmbH"), std::string::npos);
  EXPECT_NE(r->text.find("5.519,70 EUR"), std::string::npos);
  EXPECT_LT(test::char_error_rate(test::truth_text("inv02"), r->text, true), 0.01);
  // What the file says about itself, as it says it (the corpus generator's fixed values).
  EXPECT_EQ(r->metadata,
            (document_metadata{{"title", "Invoice RE-24-00891"},
                               {"author", "anonymous"},
                               {"subject", "unspecified"},
                               {"creator", "ReportLab PDF Library - www.reportlab.com"},
                               {"producer", "ReportLab PDF Library - www.reportlab.com"},
                               {"created", "2000-01-01T00:00:00Z"},
                               {"modified", "2000-01-01T00:00:00Z"}}));
}

TEST_F(unit_ocr_local_transcriber, two_page_text_pdf_gives_two_pages) {
  auto r = run("inv03_en_compact.pdf");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_TRUE(r->native_text);
  ASSERT_EQ(r->page_count, 2);
  ASSERT_EQ(r->pages.size(), 2u);
  EXPECT_EQ(r->pages[1].number, 2);
  EXPECT_NE(r->pages[1].text.find("Terms and conditions"), std::string::npos);
  EXPECT_LT(test::char_error_rate(test::truth_text("inv03"), r->text, true), 0.01);
}

TEST_F(unit_ocr_local_transcriber, clean_png_scan_is_read_accurately) {
  auto r = run("inv01_en_classic_scan.png");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_FALSE(r->native_text);
  EXPECT_EQ(r->page_count, 1);
  EXPECT_GE(r->quality_score, 0.7);
  EXPECT_FALSE(r->preprocessed);
  EXPECT_TRUE(r->metadata.empty()); // an image has none
  auto cer = test::char_error_rate(test::truth_text("inv01"), r->text, true);
  EXPECT_LT(cer, 0.05) << r->text;
  EXPECT_NE(r->text.find("INV-2024-0117"), std::string::npos);
}

TEST_F(unit_ocr_local_transcriber, clean_jpeg_scan_in_german_is_read_accurately) {
  auto r = run("inv04_de_classic_scan.jpg");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  auto cer = test::char_error_rate(test::truth_text("inv04"), r->text, true);
  EXPECT_LT(cer, 0.05) << r->text;
  EXPECT_NE(r->text.find("Schneider Elektrotechnik KG"), std::string::npos);
}

TEST_F(unit_ocr_local_transcriber, scanned_pdf_without_text_layer_is_rendered_and_ocrd) {
  auto r = run("inv05_en_modern_scanned.pdf");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_FALSE(r->native_text);
  EXPECT_EQ(r->page_count, 1);
  EXPECT_LT(r->quality_score, 1.0);
  auto cer = test::char_error_rate(test::truth_text("inv05"), r->text, true);
  EXPECT_LT(cer, 0.08) << r->text;
}

TEST_F(unit_ocr_local_transcriber, multi_page_tiff_gives_every_page) {
  auto r = run("inv03_en_compact_scan.tiff");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->page_count, 2);
  ASSERT_EQ(r->pages.size(), 2u);
  EXPECT_EQ(r->pages[0].number, 1);
  EXPECT_EQ(r->pages[1].number, 2);
  EXPECT_NE(r->pages[1].text.find("Terms and conditions"), std::string::npos) << r->pages[1].text;
  auto cer = test::char_error_rate(test::truth_text("inv03"), r->text, true);
  EXPECT_LT(cer, 0.08) << r->text;
}

TEST_F(unit_ocr_local_transcriber, type_comes_from_the_bytes_not_the_declared_mime_type) {
  transcription_request req;
  req.mime_type = "application/pdf"; // wrong: the bytes are a PNG
  auto r = run("inv06_de_compact_scan.png", {}, req);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_NE(r->text.find("Weber Logistik"), std::string::npos);
}

TEST_F(unit_ocr_local_transcriber, every_bad_file_is_a_named_permanent_error) {
  int seen = 0;
  for (const auto& e : test::corpus_manifest()) {
    if (e.kind != "bad")
      continue;
    auto start = std::chrono::steady_clock::now();
    auto r = run(e.file);
    ASSERT_FALSE(r.ok()) << e.file;
    EXPECT_TRUE(r.error().permanent()) << e.file;
    EXPECT_EQ(r.error().code, e.expected_error) << e.file << ": " << r.error().describe();
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << e.file;
    ++seen;
  }
  EXPECT_EQ(seen, 5);
}

TEST_F(unit_ocr_local_transcriber, corrupt_inputs_never_crash) {
  auto pdf = test::read_binary(test::corpus_dir() + "/inv01_en_classic.pdf");
  auto png = test::read_binary(test::corpus_dir() + "/inv01_en_classic_lowres.png");
  auto tif = test::read_binary(test::corpus_dir() + "/inv03_en_compact_scan.tiff");
  auto jpg = test::read_binary(test::corpus_dir() + "/inv04_de_classic_scan.jpg");
  local_transcriber provider{executor_};
  // Truncations at several points and a flipped middle: an error or a result, never a crash.
  for (const auto* bytes : {&pdf, &png, &tif, &jpg}) {
    for (double cut : {0.05, 0.5, 0.9}) {
      transcription_request req;
      req.bytes = bytes->substr(0, static_cast<size_t>(bytes->size() * cut));
      auto r = test::transcribe_and_wait(provider, req, wait_limit);
      ASSERT_TRUE(r.has_value());
      if (!r->ok()) {
        EXPECT_TRUE(r->error().permanent()) << r->error().describe();
        EXPECT_EQ(r->error().code.rfind("ocr.", 0), 0u) << r->error().describe();
      }
    }
  }
  auto broken = png;
  for (size_t i = broken.size() / 3; i < broken.size() / 3 + 200; ++i)
    broken[i] = static_cast<char>(broken[i] ^ 0x5A);
  transcription_request req;
  req.bytes = broken;
  auto r = test::transcribe_and_wait(provider, req, wait_limit);
  ASSERT_TRUE(r.has_value());
  if (!r->ok()) {
    EXPECT_EQ(r->error().code, "ocr.corrupt_file") << r->error().describe();
  }
}

TEST_F(unit_ocr_local_transcriber, file_size_limit) {
  local_transcriber_options opts;
  opts.limits.max_file_bytes = 1000;
  auto r = run("inv01_en_classic.pdf", opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "ocr.too_large");
  EXPECT_TRUE(r.error().permanent());
}

TEST_F(unit_ocr_local_transcriber, page_count_limit_for_pdf_and_tiff) {
  local_transcriber_options opts;
  opts.limits.max_pages = 1;
  for (const char* file : {"inv03_en_compact.pdf", "inv03_en_compact_scan.tiff"}) {
    auto r = run(file, opts);
    ASSERT_FALSE(r.ok()) << file;
    EXPECT_EQ(r.error().code, "ocr.too_many_pages") << file;
    EXPECT_TRUE(r.error().permanent());
  }
}

TEST_F(unit_ocr_local_transcriber, pixel_limit_stops_decompression_bombs) {
  local_transcriber_options opts;
  opts.limits.max_page_pixels = 1'000'000; // the 200 dpi A4 scans have ~3.9 Mpx
  auto r = run("inv01_en_classic_scan.png", opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "ocr.too_large");
}

TEST_F(unit_ocr_local_transcriber, deadline_stops_ocr_of_a_slow_page) {
  // The page's wait for a thread is not what this is about: on a loaded machine it could outlast
  // the deadline and end the page as ocr.busy before its OCR starts.
  executor_.never_expire(true);
  const char* page = "inv02_de_modern_noise.jpg";
  // What the whole reading costs, in this process's CPU time: the same however loaded the
  // machine is, where the wall time of two runs moments apart is not.
  auto start = process_cpu();
  auto whole = run(page);
  auto full = process_cpu() - start;
  ASSERT_TRUE(whole.ok()) << whole.error().describe();
  local_transcriber_options opts;
  opts.document_timeout = 300ms; // far less than one page of OCR takes
  start = process_cpu();
  auto r = run(page, opts);
  auto took = process_cpu() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "ocr.deadline") << r.error().describe();
  EXPECT_TRUE(r.error().permanent());
  // Cancelled inside Tesseract: it returns soon after the deadline, having done well under half
  // of a whole reading's work (the answer comes once the page's reading has returned).
  EXPECT_LT(took, full / 2) << "the whole reading took " << full.count() << " s of CPU, the "
                            << "one cut short by the deadline " << took.count() << " s";
}

TEST_F(unit_ocr_local_transcriber, job_expired_in_the_pool_is_transient_busy) {
  executor_.expire_everything(true);
  auto r = run("inv01_en_classic_scan.png");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "ocr.busy");
  EXPECT_TRUE(r.error().transient());
  EXPECT_EQ(executor_.ran(), 0);
  EXPECT_GE(executor_.expired(), 1);
}

/// The preprocessing's suite: its degraded scans are read twice each, the suite's longest work.
using unit_ocr_preprocessing = unit_ocr_local_transcriber;

TEST_F(unit_ocr_preprocessing, improves_a_degraded_scan) {
  for (const char* file :
       {"inv01_en_classic_noise.jpg", "inv02_de_modern_blur.png", "inv01_en_classic_lowres.png"}) {
    transcription_request plain;
    plain.allow_preprocessing = false;
    auto before = run(file, {}, plain);
    ASSERT_TRUE(before.ok()) << before.error().describe();
    EXPECT_FALSE(before->preprocessed);
    EXPECT_LT(before->quality_score, 0.7) << file;
    EXPECT_FALSE(before->pages[0].defects.empty()) << file;

    auto after = run(file);
    ASSERT_TRUE(after.ok()) << after.error().describe();
    EXPECT_TRUE(after->preprocessed) << file;
    EXPECT_GT(after->quality_score, before->quality_score) << file;
    auto truth = test::truth_text(std::string{file}.substr(0, 5));
    EXPECT_LT(test::char_error_rate(truth, after->text, true),
              test::char_error_rate(truth, before->text, true))
        << file;
    EXPECT_EQ(after->derived_ext, "png");
    ASSERT_GT(after->derived_file.size(), 8u);
    EXPECT_EQ(after->derived_file.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  }
}

TEST_F(unit_ocr_preprocessing, none_when_the_score_is_good_enough) {
  transcription_request req;
  req.quality_threshold = 0.0;
  auto r = run("inv01_en_classic_noise.jpg", {}, req);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_FALSE(r->preprocessed);
  EXPECT_TRUE(r->derived_file.empty());
}

TEST_F(unit_ocr_local_transcriber, missing_language_data_is_a_permanent_error) {
  local_transcriber_options opts;
  opts.tesseract.languages = "xyz";
  auto r = run("inv01_en_classic_lowres.png", opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "ocr.tesseract_init");
  EXPECT_TRUE(r.error().permanent());
}

TEST(unit_ocr_transcribe_file, reads_a_file_and_waits) {
  local_transcriber_options opts;
  auto r = transcribe_file_blocking(test::corpus_dir() + "/inv06_de_compact.pdf", opts);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_TRUE(r->native_text);
  EXPECT_NE(r->text.find("WL-2024-3318"), std::string::npos);
  auto missing = transcribe_file_blocking(test::corpus_dir() + "/no-such-file.pdf", opts);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "ocr.read_failed");
}
