// Common words per language, chosen so that no word belongs to two of them ("de" is Dutch,
// French and Spanish, so none has it), with the words of invoices and till receipts, and their
// spellings without accents (a first reading without the language's data loses them).
#include "adapters/ocr/language_guess.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

namespace ingestd {

namespace {

struct word_list {
  std::string_view language;
  std::string_view words; // space-separated, lower case
};

constexpr std::array<word_list, 7> lists{{
    {"eng", "the and of to for with your thank you invoice total due date amount paid cash change "
            "receipt tax subtotal please number items from this"},
    {"deu", "der die das und mit für fur von zu rechnung datum summe betrag mwst ust bar "
            "rückgeld ruckgeld gegeben vielen dank ihren einkauf steuer gesamt kasse netto brutto "
            "nicht auf"},
    {"fra", "le les des du et pour une avec sur facture montant ttc tva especes espèces rendu "
            "merci votre caisse ticket payer à au aux numéro numero n°"},
    {"nld", "het een en van voor met op factuur totaal btw betalen bedankt wisselgeld contant "
            "kassa bon tot ziens waarvan bedrag"},
    {"spa", "el los las del y por para con factura importe iva efectivo cambio gracias su visita "
            "caja cliente fecha pagar incluido"},
    {"ita", "il lo di della per con fattura totale iva contanti resto grazie cassa scontrino "
            "documento commerciale importo pagamento di cui arrivederci euro"},
    {"pol", "na do się sie nie jest faktura suma reszta gotówka gotowka paragon fiskalny "
            "kasa ptu razem zapłaty zaplaty dziękujemy dziekujemy nip sprzedaż sprzedaz zł zl"},
}};

const std::unordered_map<std::string_view, std::string_view>& word_languages() {
  static const auto table = [] {
    std::unordered_map<std::string_view, std::string_view> out;
    for (const auto& l : lists) {
      std::string_view ws = l.words;
      while (!ws.empty()) {
        auto sp = ws.find(' ');
        auto w = ws.substr(0, sp);
        if (!w.empty())
          out.emplace(w, l.language);
        ws = sp == std::string_view::npos ? std::string_view{} : ws.substr(sp + 1);
      }
    }
    return out;
  }();
  return table;
}

bool word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}

} // namespace

std::vector<std::string> split_languages(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    auto plus = list.find('+');
    auto part = list.substr(0, plus);
    if (!part.empty())
      out.emplace_back(part);
    list = plus == std::string_view::npos ? std::string_view{} : list.substr(plus + 1);
  }
  return out;
}

std::string guess_language(std::string_view text, const std::vector<std::string>& candidates,
                           int min_words) {
  const auto& words = word_languages();
  std::map<std::string_view, int> counts;
  std::string word;
  auto count = [&] {
    if (word.empty() || word.size() > 24)
      return;
    if (auto it = words.find(word); it != words.end())
      ++counts[it->second];
  };
  for (size_t i = 0; i <= text.size(); ++i) {
    auto c = i < text.size() ? static_cast<unsigned char>(text[i]) : ' ';
    if (word_byte(c)) {
      word += static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
      continue;
    }
    count();
    word.clear();
  }
  std::string_view best;
  int best_count = 0, second = 0;
  for (const auto& [language, n] : counts) {
    if (n > best_count) {
      second = best_count;
      best_count = n;
      best = language;
    } else if (n > second) {
      second = n;
    }
  }
  // Clearly ahead: at least the minimum, and half again the next language's count.
  if (best_count < min_words || best_count * 2 < second * 3)
    return {};
  if (std::find(candidates.begin(), candidates.end(), best) == candidates.end())
    return {};
  return std::string{best};
}

} // namespace ingestd
