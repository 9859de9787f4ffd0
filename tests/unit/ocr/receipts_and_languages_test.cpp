// Photos of till receipts (tests/fixtures/receipts/, made by tests/fixtures/generate_receipts.py
// from seeds of neither of its splits) and scanned invoices in French, Dutch, Spanish, Italian
// and Polish (tests/fixtures/scans_multilingual/, by generate_multilingual_corpus.py, likewise)
// through the local provider and the local rules: each receipt gives its date, payable total,
// currency and merchant, each invoice its number, date, total and currency; a French receipt is
// read again with the French language data when its words are French, which keeps the accents of
// its merchant's name. And the language guess itself.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "adapters/extraction/local/text.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/ocr/language_guess.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace ingestd;

namespace {

const std::string other_languages = "fra+nld+spa+ita+pol";

std::string receipts_dir() {
  return test::source_dir() + "/tests/fixtures/receipts";
}

std::string scans_dir() {
  return test::source_dir() + "/tests/fixtures/scans_multilingual";
}

rapidjson::Document json_of(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.c_str());
  return d;
}

std::string text_of(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

result<transcription> read_file(const std::string& path, const std::string& others) {
  auto opts
      = make_local_transcriber_options("eng+deu", 20u << 20, 5, std::chrono::seconds(120), others);
  return transcribe_file_blocking(path, opts);
}

result<transcription> read_photo(const std::string& file, const std::string& others) {
  return read_file(receipts_dir() + "/" + file, others);
}

/// Lower case without accents: the merchant is found when its letters are (OCR may read an
/// upper-case Ä as A; the accents of a language read again are checked on their own below).
std::string folded(const std::string& s) {
  return local_rules::fold_ascii(local_rules::lower(s));
}

} // namespace

TEST(unit_ocr_receipt_photos, each_gives_its_date_total_currency_and_merchant) {
  int photos = 0;
  for (const auto& e : std::filesystem::directory_iterator(receipts_dir())) {
    if (e.path().extension() != ".json")
      continue;
    ++photos;
    auto truth = json_of(text_of(e.path().string()));
    ASSERT_TRUE(truth.IsObject()) << e.path();
    std::string name = truth["id"].GetString();
    auto t = read_photo(truth["scan"].GetString(), other_languages);
    ASSERT_TRUE(t.ok()) << name << ": " << t.error().describe();
    auto got = json_of(local_extractor{}.run(t->text).structured_data);
    ASSERT_TRUE(got.IsObject()) << name;
    auto str = [&](const char* key) {
      return got[key].IsString() ? std::string{got[key].GetString()} : std::string{"null"};
    };
    EXPECT_EQ(str("invoice_date"), truth["invoice_date"].GetString()) << name << "\n" << t->text;
    ASSERT_TRUE(got["total"].IsNumber()) << name << "\n" << t->text;
    EXPECT_NEAR(got["total"].GetDouble(), truth["total"].GetDouble(), 0.005) << name << "\n"
                                                                             << t->text;
    EXPECT_EQ(str("currency"), truth["currency"].GetString()) << name;
    EXPECT_EQ(folded(str("supplier_name")), folded(truth["supplier_name"].GetString()))
        << name << "\n"
        << t->text;
  }
  EXPECT_EQ(photos, 4);
}

TEST(unit_ocr_scans_in_languages, each_invoice_gives_its_number_date_total_and_currency) {
  int scans = 0;
  int numbers_right = 0;
  for (const auto& e : std::filesystem::directory_iterator(scans_dir())) {
    if (e.path().extension() != ".json")
      continue;
    ++scans;
    auto truth = json_of(text_of(e.path().string()));
    ASSERT_TRUE(truth.IsObject()) << e.path();
    std::string name = truth["id"].GetString();
    auto t = read_file(scans_dir() + "/" + truth["scan"].GetString(), other_languages);
    ASSERT_TRUE(t.ok()) << name << ": " << t.error().describe();
    auto got = json_of(local_extractor{}.run(t->text).structured_data);
    ASSERT_TRUE(got.IsObject()) << name;
    auto str = [&](const char* key) {
      return got[key].IsString() ? std::string{got[key].GetString()} : std::string{"null"};
    };
    numbers_right += str("invoice_number") == truth["invoice_number"].GetString() ? 1 : 0;
    EXPECT_EQ(str("invoice_date"), truth["invoice_date"].GetString()) << name << "\n" << t->text;
    ASSERT_TRUE(got["total"].IsNumber()) << name << "\n" << t->text;
    EXPECT_NEAR(got["total"].GetDouble(), truth["total"].GetDouble(), 0.005) << name;
    EXPECT_EQ(str("currency"), truth["currency"].GetString()) << name;
  }
  EXPECT_EQ(scans, 5);
  // Tesseract reads the Spanish invoice's number FV07-89643 as FVO07-89643; the others right.
  EXPECT_GE(numbers_right, 4);
}

TEST(unit_ocr_receipt_photos, a_french_receipt_is_read_again_in_french_and_keeps_its_accents) {
  auto french = read_photo("fr_gross.jpg", other_languages);
  ASSERT_TRUE(french.ok()) << french.error().describe();
  EXPECT_NE(french->text.find("\xC3\x89PICERIE FINE ET CAVE \xC3\x80 VINS LEF\xC3\x88VRE SARL"),
            std::string::npos)
      << french->text;
  // With the configured languages alone, the accents are lost.
  auto plain = read_photo("fr_gross.jpg", "");
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_EQ(plain->text.find("\xC3\x89PICERIE"), std::string::npos) << plain->text;
  // Language data that is not there leaves the configured reading as it was: a data folder
  // with English and German only.
  const std::string installed = "/usr/share/tesseract-ocr/5/tessdata";
  if (!std::filesystem::exists(installed + "/eng.traineddata"))
    GTEST_SKIP() << "no Tesseract data at " << installed;
  auto only
      = std::filesystem::temp_directory_path() / ("ingestd-tessdata-" + std::to_string(::getpid()));
  std::filesystem::create_directories(only);
  for (const char* l : {"eng", "deu"})
    std::filesystem::create_symlink(installed + "/" + l + ".traineddata",
                                    only / (std::string{l} + ".traineddata"));
  auto opts = make_local_transcriber_options("eng+deu", 20u << 20, 5, std::chrono::seconds(120),
                                             other_languages);
  opts.tesseract.tessdata_path = only.string();
  auto without_french = transcribe_file_blocking(receipts_dir() + "/fr_gross.jpg", opts);
  std::filesystem::remove_all(only);
  ASSERT_TRUE(without_french.ok()) << without_french.error().describe();
  EXPECT_EQ(without_french->text, plain->text);
}

TEST(unit_ocr_language_guess, picks_the_language_whose_words_the_text_holds) {
  std::vector<std::string> others{"fra", "nld", "spa", "ita", "pol"};
  EXPECT_EQ(guess_language("TOTAL TTC\nESPECES 50,00\nRENDU 2,10\nMERCI DE VOTRE VISITE", others),
            "fra");
  EXPECT_EQ(
      guess_language("TOTAAL 12,40\nCONTANT 20,00\nWISSELGELD 7,60\nBedankt en tot ziens", others),
      "nld");
  EXPECT_EQ(
      guess_language("TOTAL EUR 17,50\nTARJETA\nIVA 10% incluido\nGRACIAS POR SU VISITA", others),
      "spa");
  EXPECT_EQ(
      guess_language("TOTALE COMPLESSIVO 7,30\ndi cui IVA\nPAGAMENTO CONTANTE\nRESTO 2,70", others),
      "ita");
  EXPECT_EQ(guess_language("PARAGON FISKALNY\nSUMA PLN 40,20\nGOTOWKA 50,00\nRESZTA 9,80", others),
            "pol");
  // English and German are the configured languages: no other language is chosen for them.
  EXPECT_EQ(guess_language("Thank you for your order. The total amount due is", others), "");
  EXPECT_EQ(guess_language("Rechnung\nSumme 12,40\nVielen Dank fur Ihren Einkauf", others), "");
  // Too few words, or two languages as strong as each other: no choice.
  EXPECT_EQ(guess_language("TOTAAL 12,40", others), "");
  EXPECT_EQ(guess_language("merci votre caisse grazie resto cassa", others), "");
  EXPECT_EQ(split_languages("fra+nld++pol"), (std::vector<std::string>{"fra", "nld", "pol"}));
}
