// The local match rules: each candidate compared with the document, strongest rule first; one
// edge per candidate, sorted for a deterministic answer.
#include "adapters/matching/local_matcher.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "adapters/matching/features.hpp"

namespace ingestd {

namespace {

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
long days_from_civil(long y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long>(doe) - 719468;
}

std::optional<long> day_number(const std::string& s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-')
    return std::nullopt;
  long v[3] = {0, 0, 0};
  size_t part = 0;
  for (char c : s) {
    if (c == '-') {
      ++part;
      continue;
    }
    if (c < '0' || c > '9')
      return std::nullopt;
    v[part] = v[part] * 10 + (c - '0');
  }
  if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31)
    return std::nullopt;
  return days_from_civil(v[0], static_cast<unsigned>(v[1]), static_cast<unsigned>(v[2]));
}

/// Unknown (either side empty), same, or different counterparties.
enum class party { unknown, same, different };

party compare_parties(const match_features& a, const match_features& b, double threshold) {
  if (a.normalized_counterparty.empty() || b.normalized_counterparty.empty())
    return party::unknown;
  if (a.normalized_counterparty == b.normalized_counterparty
      || counterparty_similarity(a.normalized_counterparty, b.normalized_counterparty) >= threshold)
    return party::same;
  return party::different;
}

/// Unknown (a total missing), agree (and currencies do not contradict), or differ.
enum class amount { unknown, agree, differ };

amount compare_totals(const match_features& a, const match_features& b, double tolerance) {
  if (!a.total || !b.total)
    return amount::unknown;
  if (!a.currency.empty() && !b.currency.empty() && a.currency != b.currency)
    return amount::differ;
  return amounts_agree(*a.total, *b.total, tolerance) ? amount::agree : amount::differ;
}

bool refers_to(const match_features& from, const std::string& number) {
  return !number.empty()
         && std::find(from.references.begin(), from.references.end(), number)
                != from.references.end();
}

std::string money(double v, const std::string& currency) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string out{buf};
  if (!currency.empty())
    out += " " + currency;
  return out;
}

match_edge edge(const match_document& other, const char* kind, double confidence,
                std::string reason) {
  return match_edge{other.id, kind, confidence, std::move(reason)};
}

} // namespace

int match_kind_rank(std::string_view kind) {
  if (kind == match_kind::duplicate)
    return 5;
  if (kind == match_kind::same_invoice)
    return 4;
  if (kind == match_kind::credit_note)
    return 3;
  if (kind == match_kind::purchase_order)
    return 2;
  if (kind == match_kind::related)
    return 1;
  return 0;
}

bool amounts_agree(double a, double b, double tolerance) {
  if (!std::isfinite(a) || !std::isfinite(b))
    return false;
  double diff = std::fabs(a - b);
  return diff <= 0.005 || diff <= std::max(tolerance, 0.0) * std::max(std::fabs(a), std::fabs(b));
}

std::optional<long> days_between(const std::string& a, const std::string& b) {
  auto x = day_number(a);
  auto y = day_number(b);
  if (!x || !y)
    return std::nullopt;
  return std::labs(*x - *y);
}

std::optional<match_edge> match_pair(const match_features& d, const match_document& candidate,
                                     const local_matcher_options& opts) {
  const auto& c = candidate.features;
  auto parties = compare_parties(d, c, opts.counterparty_similarity);
  auto totals = compare_totals(d, c, opts.amount_tolerance);

  if (!d.text_hash.empty() && d.text_hash == c.text_hash)
    return edge(candidate, match_kind::duplicate, 1.0,
                "identical content (text hash " + d.text_hash.substr(0, 12) + ")");

  bool credit_vs_other = (d.kind == "credit_note") != (c.kind == "credit_note");
  if (!d.number.empty() && d.number == c.number && !credit_vs_other && parties != party::different
      && totals != amount::differ) {
    int known = (parties == party::same ? 1 : 0) + (totals == amount::agree ? 1 : 0);
    std::string reason = "invoice number " + d.number;
    if (parties == party::same && totals == amount::agree)
      reason += ", counterparty and total " + money(*d.total, d.currency) + " agree";
    else if (parties == party::same)
      reason += " and counterparty agree; total unknown";
    else if (totals == amount::agree)
      reason += " and total " + money(*d.total, d.currency) + " agree; counterparty unknown";
    else
      reason += " agrees; counterparty and total unknown";
    return edge(candidate, match_kind::same_invoice,
                known == 2   ? 0.95
                : known == 1 ? 0.8
                             : 0.6,
                std::move(reason));
  }

  // A credit note and the invoice it corrects, either way round.
  auto credit = [&](const match_features& note,
                    const match_features& invoice) -> std::optional<match_edge> {
    if (note.kind != "credit_note" || invoice.kind == "credit_note"
        || !refers_to(note, invoice.number))
      return std::nullopt;
    if (parties == party::different)
      return std::nullopt;
    std::string reason = "credit note "
                         + (note.number.empty() ? std::string{"(no number)"} : note.number)
                         + " refers to invoice " + invoice.number;
    if (parties == party::same)
      reason += ", same counterparty";
    else
      reason += "; counterparty unknown";
    return edge(candidate, match_kind::credit_note, parties == party::same ? 0.95 : 0.8,
                std::move(reason));
  };
  if (auto e = credit(d, c))
    return e;
  if (auto e = credit(c, d))
    return e;

  // An invoice and the purchase order it fulfils, either way round.
  auto order
      = [&](const match_features& invoice, const match_features& po) -> std::optional<match_edge> {
    if (po.kind != "purchase_order" || invoice.kind == "purchase_order"
        || !refers_to(invoice, po.number))
      return std::nullopt;
    std::string reason = "invoice "
                         + (invoice.number.empty() ? std::string{"(no number)"} : invoice.number)
                         + " refers to purchase order " + po.number;
    if (parties == party::different)
      reason += "; counterparties differ";
    return edge(candidate, match_kind::purchase_order, parties == party::different ? 0.75 : 0.9,
                std::move(reason));
  };
  if (auto e = order(d, c))
    return e;
  if (auto e = order(c, d))
    return e;

  if (!d.normalized_counterparty.empty() && d.normalized_counterparty == c.normalized_counterparty
      && totals == amount::agree) {
    auto days = days_between(d.date, c.date);
    if (days && *days <= opts.date_window_days)
      return edge(candidate, match_kind::related, 0.6,
                  "same counterparty (" + d.normalized_counterparty + "), totals "
                      + money(*d.total, d.currency) + " and " + money(*c.total, c.currency)
                      + ", dates " + std::to_string(*days) + " days apart");
  }
  return std::nullopt;
}

std::vector<match_edge> match_locally(const match_document& doc,
                                      const std::vector<match_document>& candidates,
                                      const local_matcher_options& opts) {
  std::map<uuid, match_edge> best;
  for (const auto& c : candidates) {
    if (c.id == doc.id)
      continue;
    auto e = match_pair(doc.features, c, opts);
    if (!e || e->confidence < opts.min_confidence)
      continue;
    auto [it, inserted] = best.try_emplace(c.id, *e);
    if (!inserted) {
      auto& cur = it->second;
      auto rank = match_kind_rank(e->kind);
      auto cur_rank = match_kind_rank(cur.kind);
      if (rank > cur_rank || (rank == cur_rank && e->confidence > cur.confidence))
        cur = std::move(*e);
    }
  }
  std::vector<match_edge> out;
  out.reserve(best.size());
  for (auto& [id, e] : best)
    out.push_back(std::move(e));
  std::stable_sort(out.begin(), out.end(), [](const match_edge& a, const match_edge& b) {
    if (a.confidence != b.confidence)
      return a.confidence > b.confidence;
    return a.other < b.other;
  });
  return out;
}

local_matcher::local_matcher(const local_matcher_options& opts) : opts_(opts) {}

void local_matcher::decide(match_document doc, std::vector<match_document> candidates,
                           callback<std::vector<match_edge>> done) {
  done(match_locally(doc, candidates, opts_));
}

} // namespace ingestd
