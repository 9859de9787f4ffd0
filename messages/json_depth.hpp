// How deep a parsed JSON value nests: parsers of outside input refuse a value nested deeper than
// the code that walks it recursively can follow.
#pragma once

#include <rapidjson/document.h>

namespace ingestd {

/// Whether `v` nests deeper than `limit` levels (the recursion stops at the limit).
inline bool json_deeper_than(const rapidjson::Value& v, int limit) {
  if (!v.IsArray() && !v.IsObject())
    return false;
  if (limit == 0)
    return true;
  if (v.IsArray()) {
    for (const auto& x : v.GetArray())
      if (json_deeper_than(x, limit - 1))
        return true;
  } else {
    for (const auto& m : v.GetObject())
      if (json_deeper_than(m.value, limit - 1))
        return true;
  }
  return false;
}

} // namespace ingestd
