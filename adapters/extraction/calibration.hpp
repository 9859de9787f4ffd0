// Calibrated confidence: how far an extractor's "high" (or "medium", "low") can be trusted, field
// by field, measured on what reviewers did with a tenant's earlier values (the share they left
// unchanged). With review.auto_approve set, a document the quality gate passes goes through
// without a person only when each of its fields reaches the threshold at its confidence over
// enough reviews; otherwise the desk gets it, with the field that fell short as the reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adapters/db/learning_repository.hpp"
#include "adapters/db/tenant_cache.hpp"
#include "messages/extraction.hpp"
#include "messages/uuid.hpp"

namespace ingestd {

/// Whether a document goes through, and why not.
struct calibration_verdict {
  bool through = true;
  /// "calibration: total at confidence high kept in 45 of 50 reviews (0.90 < review.auto_approve
  /// 0.95)"; empty when it goes through.
  std::string reason;
};

/// The fields of `structured_data` (an extraction's JSON object) that hold a value (not null, ""
/// or []), without the extractor's flags (confidence, extraction_successful, missing_fields), in
/// the object's order.
std::vector<std::string> valued_fields(const std::string& structured_data);

/// The verdict on extraction `x` at `threshold` (0 < threshold <= 1) from the tenant's `reviews`:
/// every valued field needs at least `min_reviews` reviews at x's confidence, of which the kept
/// share reaches the threshold. The first field that falls short is the reason.
calibration_verdict judge(const extraction& x, const std::vector<field_reviews>& reviews,
                          double threshold, int64_t min_reviews);

class confidence_calibration : public std::enable_shared_from_this<confidence_calibration> {
public:
  struct settings {
    /// review.auto_approve: every tenant's threshold (0: the gate alone decides).
    double threshold = 0;
    /// review.tenant_auto_approve: a tenant's own.
    std::map<uuid, double> tenants;
    int64_t min_reviews = 20;
    std::chrono::seconds recheck{300};
  };
  using clock_fn = tenant_cache<std::vector<field_reviews>>::clock_fn;

  /// Null when no tenant has a threshold.
  static std::shared_ptr<confidence_calibration>
  make(settings s, std::shared_ptr<learning_repository> db, clock_fn clock = {});

  confidence_calibration(settings s, std::shared_ptr<learning_repository> db, clock_fn clock);

  /// The tenant's threshold (0: none).
  double threshold_of(const uuid& tenant) const;

  /// The verdict on the tenant's extraction (through when the tenant has no threshold), from the
  /// tenant's reviews read within `recheck`. `done` may run on the caller's thread or the
  /// repository's.
  void check(const uuid& tenant, const extraction& x, callback<calibration_verdict> done);

private:
  settings settings_;
  std::shared_ptr<learning_repository> db_;
  tenant_cache<std::vector<field_reviews>> reviews_;
};

} // namespace ingestd
