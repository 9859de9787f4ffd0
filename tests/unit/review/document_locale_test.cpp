// The locale the review desk shows a document's amounts and dates in (document_locale): the
// transcription's language, with the country its currency names.
#include <gtest/gtest.h>

#include "review/review_pages.hpp"

namespace ingestd {
namespace {

TEST(document_locale, the_language_of_the_transcription_with_the_country_of_its_currency) {
  const char* german = "Rechnung Nr. 17\nDatum 01.03.2024\nNetto 100,00\nMwSt 19,00\nGesamt 119,00";
  EXPECT_EQ(document_locale(german, "EUR"), "de-DE");
  EXPECT_EQ(document_locale(german, "CHF"), "de-CH");
  const char* english = "Invoice number 17\nThank you for your order\nTotal due 119.00";
  EXPECT_EQ(document_locale(english, "USD"), "en-US");
  EXPECT_EQ(document_locale(english, "GBP"), "en-GB");
  EXPECT_EQ(document_locale(english, ""), "en-GB");
  EXPECT_EQ(document_locale("Facture n° 17\nMontant TTC 119,00\nTVA 19,00\nMerci pour votre "
                            "commande",
                            "EUR"),
            "fr-FR");
  EXPECT_EQ(
      document_locale("Factuur 17\nTotaal 119,00\nBTW 19,00\nBedankt voor uw bestelling", "EUR"),
      "nl-NL");
  EXPECT_EQ(document_locale("Faktura VAT 17\nRazem do zapłaty 119,00 zł\nDziękujemy", "PLN"),
            "pl-PL");
}

TEST(document_locale, none_when_the_language_is_not_clear) {
  EXPECT_EQ(document_locale("", "EUR"), "");
  EXPECT_EQ(document_locale("INV-1 119.00 EUR", "EUR"), "");
}

} // namespace
} // namespace ingestd
