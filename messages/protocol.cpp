// The protocol's names for what it carries.
#include "messages/protocol.hpp"

namespace ingestd {

std::string_view to_string(job_result x) {
  switch (x) {
  case job_result::completed:
    return "completed";
  case job_result::failed:
    return "failed";
  case job_result::retrying:
    return "retrying";
  case job_result::skipped:
    return "skipped";
  case job_result::invalid:
    return "invalid";
  case job_result::lost:
    return "lost";
  case job_result::released:
    return "released";
  case job_result::abandoned:
    return "abandoned";
  case job_result::cancelled:
    return "cancelled";
  case job_result::moved:
    return "moved";
  }
  return "abandoned";
}

} // namespace ingestd
