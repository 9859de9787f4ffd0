// The rule-based match decision (the embedded default, matching.provider = local): compares the
// document's features with each candidate's, no network, deterministic.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adapters/matching/matcher.hpp"

namespace ingestd {

struct local_matcher_options {
  /// Two totals agree when they differ by at most this fraction of the larger (0.01: 1%), or by
  /// at most one cent.
  double amount_tolerance = 0.01;
  /// "related": the two document dates at most this many days apart.
  int date_window_days = 14;
  /// Two counterparties are the same when their trigram similarity (pg_trgm's) is at least
  /// this (equal normalized names are 1).
  double counterparty_similarity = 0.5;
  /// Edges below this confidence are not returned.
  double min_confidence = 0.5;
};

/// The rules, strongest first; a candidate gets at most one edge, of the strongest kind that
/// holds:
///   duplicate (1.0)       equal text hashes (the same content).
///   same_invoice (0.95)   equal numbers, counterparties the same, totals (and currencies) agree;
///                         0.8 when the counterparty or the total is unknown, 0.6 when both are.
///   credit_note (0.95)    one side a credit note whose references hold the other's number
///                         (either direction); 0.8 when a counterparty is unknown; none when the
///                         counterparties are known and differ.
///   purchase_order (0.9)  an invoice whose references hold a purchase order's number (either
///                         direction); 0.75 when the counterparties are known and differ.
///   related (0.6)         same normalized counterparty, totals agree, dates within the window.
/// Edges come sorted by confidence (highest first), then by candidate id.
std::vector<match_edge> match_locally(const match_document& doc,
                                      const std::vector<match_document>& candidates,
                                      const local_matcher_options& opts = {});

/// The edge between `doc` and one candidate under the rules above, or nullopt.
std::optional<match_edge> match_pair(const match_features& doc, const match_document& candidate,
                                     const local_matcher_options& opts = {});

/// The rank of an edge kind: duplicate 5, same_invoice 4, credit_note 3, purchase_order 2,
/// related 1, anything else 0.
int match_kind_rank(std::string_view kind);

/// Whether two totals agree within the tolerance (a fraction of the larger).
bool amounts_agree(double a, double b, double tolerance);

/// Days between two YYYY-MM-DD dates, or nullopt when either is not one.
std::optional<long> days_between(const std::string& a, const std::string& b);

/// Answers inside decide(), before it returns.
class local_matcher final : public matcher {
public:
  explicit local_matcher(const local_matcher_options& opts = {});
  void decide(match_document doc, std::vector<match_document> candidates,
              callback<std::vector<match_edge>> done) override;
  std::string name() const override { return "local"; }
  bool runs_inline() const override { return true; }

private:
  local_matcher_options opts_;
};

} // namespace ingestd
