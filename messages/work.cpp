// The names of claim outcomes, for logs.
#include "messages/work.hpp"

namespace ingestd {

std::string_view to_string(claim_outcome x) {
  switch (x) {
  case claim_outcome::granted:
    return "granted";
  case claim_outcome::held:
    return "held";
  case claim_outcome::finished:
    return "finished";
  case claim_outcome::moved:
    return "moved";
  case claim_outcome::unknown:
    return "unknown";
  }
  return "unknown";
}

} // namespace ingestd
