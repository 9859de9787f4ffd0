// Error classes and their rendering.
#include "messages/error.hpp"

namespace ingestd {

std::string_view to_string(error_class x) {
  switch (x) {
  case error_class::transient:
    return "transient";
  case error_class::permanent:
    return "permanent";
  case error_class::claim_lost:
    return "claim_lost";
  }
  return "transient";
}

std::string error::describe() const {
  if (message.empty())
    return code;
  return code + ": " + message;
}

std::string exception_text(const std::exception_ptr& eptr) {
  try {
    std::rethrow_exception(eptr);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception of unknown type";
  }
}

} // namespace ingestd
