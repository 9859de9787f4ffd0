// Structured logging for every layer: one line per event, JSON (the daemon's default) or text,
// with named fields such as ingestion_id, step, duration_ms. Backed by spdlog; never pass a secret.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ingestd::log {

enum class level { trace, debug, info, warn, error };

/// A named field; numbers are written unquoted in JSON.
struct field {
  std::string_view key;
  std::string value;
  bool number = false;

  field(std::string_view k, std::string v) : key(k), value(std::move(v)) {}
  field(std::string_view k, const char* v) : key(k), value(v) {}
  field(std::string_view k, std::string_view v) : key(k), value(v) {}
  field(std::string_view k, int64_t v) : key(k), value(std::to_string(v)), number(true) {}
  field(std::string_view k, int v) : key(k), value(std::to_string(v)), number(true) {}
  field(std::string_view k, double v) : key(k), value(std::to_string(v)), number(true) {}
};

/// Chooses the format ("json" or "text") and the minimum level ("trace" ... "error").
/// Logs go to standard error.
void setup(std::string_view format, std::string_view min_level);

bool enabled(level lvl);

void write(level lvl, std::string_view message, std::initializer_list<field> fields = {});

/// write() with the fields every line about one thing carries (a job's node, stage, step,
/// ingestion, document and tenant) before the line's own `fields`.
void write_with(level lvl, std::string_view message, const std::vector<field>& context,
                std::initializer_list<field> fields = {});

/// A call context's log fields (messages/call_context.hpp; anything with key, value and number
/// members) as fields for write_with(); they refer to `xs`, which must outlive them.
template <class Fields>
std::vector<field> fields_of(const Fields& xs) {
  std::vector<field> out;
  out.reserve(xs.size());
  for (auto& x : xs) {
    out.emplace_back(std::string_view{x.key}, x.value);
    out.back().number = x.number;
  }
  return out;
}

inline void debug(std::string_view m, std::initializer_list<field> f = {}) {
  write(level::debug, m, f);
}
inline void info(std::string_view m, std::initializer_list<field> f = {}) {
  write(level::info, m, f);
}
inline void warn(std::string_view m, std::initializer_list<field> f = {}) {
  write(level::warn, m, f);
}
inline void error(std::string_view m, std::initializer_list<field> f = {}) {
  write(level::error, m, f);
}

/// Test seam: while one is alive, every line (as formatted for standard error) is kept here
/// instead of being written. One at a time; not for production code.
class capture {
public:
  capture();
  ~capture();
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;

  /// The lines written so far, oldest first.
  std::vector<std::string> lines() const;
};

} // namespace ingestd::log
