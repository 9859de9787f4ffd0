#include "intake/acquisition.hpp"

#include "adapters/support/log.hpp"

namespace ingestd {

void log_pass(std::string_view what, const acquisition_report& r) {
  if (r.taken + r.duplicates + r.refused == 0)
    return;
  log::info(what, {{"taken", r.taken},
                   {"duplicates", r.duplicates},
                   {"refused", r.refused},
                   {"ignored", r.ignored},
                   {"failed", r.failed}});
}

} // namespace ingestd
