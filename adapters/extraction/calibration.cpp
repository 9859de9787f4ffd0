#include "adapters/extraction/calibration.hpp"

#include <cstdio>
#include <string_view>
#include <utility>

#include <rapidjson/document.h>

namespace ingestd {

namespace {

bool is_flag(std::string_view name) {
  return name == "confidence" || name == "extraction_successful" || name == "missing_fields";
}

std::string share(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

} // namespace

std::vector<std::string> valued_fields(const std::string& structured_data) {
  std::vector<std::string> out;
  rapidjson::Document d;
  d.Parse(structured_data.c_str(), structured_data.size());
  if (d.HasParseError() || !d.IsObject())
    return out;
  for (auto& m : d.GetObject()) {
    std::string_view name{m.name.GetString(), m.name.GetStringLength()};
    auto& v = m.value;
    if (is_flag(name) || v.IsNull() || (v.IsString() && v.GetStringLength() == 0)
        || (v.IsArray() && v.Empty()))
      continue;
    out.emplace_back(name);
  }
  return out;
}

calibration_verdict judge(const extraction& x, const std::vector<field_reviews>& reviews,
                          double threshold, int64_t min_reviews) {
  auto fields = valued_fields(x.structured_data);
  if (fields.empty())
    return {false, "calibration: the extraction holds no values to judge"};
  for (auto& f : fields) {
    const field_reviews* found = nullptr;
    for (auto& r : reviews)
      if (r.field == f && r.confidence == x.confidence) {
        found = &r;
        break;
      }
    int64_t reviewed = found ? found->reviewed : 0;
    int64_t kept = found ? found->kept : 0;
    auto at = f + " at confidence " + (x.confidence.empty() ? "(none)" : x.confidence);
    if (reviewed < min_reviews)
      return {false, "calibration: " + at + " has " + std::to_string(reviewed)
                         + " reviews, fewer than review.calibration_min_reviews "
                         + std::to_string(min_reviews)};
    auto kept_share = static_cast<double>(kept) / static_cast<double>(reviewed);
    if (kept_share < threshold)
      return {false, "calibration: " + at + " kept in " + std::to_string(kept) + " of "
                         + std::to_string(reviewed) + " reviews (" + share(kept_share)
                         + " < review.auto_approve " + share(threshold) + ")"};
  }
  return {};
}

std::shared_ptr<confidence_calibration>
confidence_calibration::make(settings s, std::shared_ptr<learning_repository> db, clock_fn clock) {
  bool any = s.threshold > 0;
  for (auto& [tenant, t] : s.tenants)
    any = any || t > 0;
  if (!any)
    return nullptr;
  return std::make_shared<confidence_calibration>(std::move(s), std::move(db), std::move(clock));
}

confidence_calibration::confidence_calibration(settings s, std::shared_ptr<learning_repository> db,
                                               clock_fn clock)
    : settings_(std::move(s)), db_(std::move(db)),
      reviews_(
          settings_.recheck,
          [db = db_](const uuid& tenant, callback<std::vector<field_reviews>> done) {
            db->reviews_of(tenant, std::move(done));
          },
          std::move(clock)) {}

double confidence_calibration::threshold_of(const uuid& tenant) const {
  auto it = settings_.tenants.find(tenant);
  return it == settings_.tenants.end() ? settings_.threshold : it->second;
}

void confidence_calibration::check(const uuid& tenant, const extraction& x,
                                   callback<calibration_verdict> done) {
  auto threshold = threshold_of(tenant);
  if (threshold <= 0)
    return done(calibration_verdict{});
  reviews_.get(tenant, [x, threshold, min = settings_.min_reviews,
                        done = std::move(done)](result<std::vector<field_reviews>> r) {
    if (!r)
      return done(r.error());
    done(judge(x, *r, threshold, min));
  });
}

} // namespace ingestd
