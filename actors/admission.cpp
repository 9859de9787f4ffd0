// The node's admission decisions.
#include "actors/admission.hpp"

#include <algorithm>
#include <limits>

namespace ingestd {

int64_t node_admission::jobs_that_fit(int weight) const {
  int64_t cap = limits_.capacity_slots;
  int64_t w = weight;
  auto used = slots_in_use_.load();
  if (cap <= 0 || w == 0)
    return std::numeric_limits<int>::max();
  return w > cap ? (used == 0 ? 1 : 0) : (cap - used) / w;
}

int64_t node_admission::jobs_left_in_lifetime(int weight) const {
  auto life = limits_.lifetime_units;
  if (life <= 0)
    return std::numeric_limits<int>::max();
  int64_t w = std::max(weight, 1);
  auto done = units_admitted_.load();
  return done >= life ? 0 : (life - done + w - 1) / w;
}

bool node_admission::cpu_saturated() const {
  auto backlog = cpu_backlog_.load();
  auto item_us = cpu_item_us_.load();
  if (backlog <= 0 || item_us <= 0)
    return false;
  auto wait_us = backlog * item_us / std::max(limits_.cpu_workers, 1);
  return wait_us
         > std::chrono::duration_cast<std::chrono::microseconds>(limits_.cpu_deadline).count() / 2;
}

bool node_admission::admit(int weight) {
  int64_t w = weight;
  int64_t units = std::max<int64_t>(w, 1);
  auto life = limits_.lifetime_units;
  auto done = units_admitted_.load();
  do {
    if (life > 0 && done >= life)
      return false;
  } while (!units_admitted_.compare_exchange_weak(done, done + units));
  int64_t cap = limits_.capacity_slots;
  auto used = slots_in_use_.load();
  do {
    if (cap > 0 && w > 0 && (w > cap ? used != 0 : used + w > cap)) {
      units_admitted_ -= units;
      return false;
    }
  } while (!slots_in_use_.compare_exchange_weak(used, used + w));
  auto peak = peak_slots_.load();
  while (used + w > peak && !peak_slots_.compare_exchange_weak(peak, used + w)) {
  }
  return true;
}

void node_admission::release(int weight, std::chrono::milliseconds ran) {
  slot_ms_used_ += ran.count() * weight;
  slots_in_use_ -= weight;
}

void node_admission::cpu_item_ran(std::chrono::microseconds took) {
  auto us = std::max<int64_t>(took.count(), 1);
  auto avg = cpu_item_us_.load();
  cpu_item_us_ = avg == 0 ? us : avg + (us - avg) / 8;
}

double node_admission::usage_ratio() const {
  int64_t cap = limits_.capacity_slots;
  auto used = cap > 0 ? slots_in_use_.load() : in_flight_.load();
  auto of = cap > 0 ? cap : int64_t{limits_.max_in_flight};
  return of > 0 ? static_cast<double>(used) / static_cast<double>(of) : 0.0;
}

} // namespace ingestd
