// The configuration's key table, as config.cpp (the loader) and config_keys.cpp (the keys) share
// it: what a key is, and how a section's keys are added to the table. Not for other code.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/config.hpp"

namespace ingestd::config_table {

enum class kind { integer, number, boolean, string, choice, integer_list };

/// A key's value as parsed and printed; integers of any width are int64_t here.
using value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

/// A rule over the loaded configuration for one key's value: what was expected when it fails.
using rule = std::function<std::optional<std::string>(const config&, const value&)>;

/// One configuration key: the only place its name, field, default and rules are written.
struct key_spec {
  std::string section;
  std::string key;
  kind type;
  value fallback;
  double min = 0;
  double max = 0;
  std::vector<std::string> choices;
  rule check;
  /// A URL whose password is replaced by "****" wherever the value is shown.
  bool masked = false;
  /// An integer key whose 0 means "derived": its value from the other keys.
  std::function<int64_t(const config&)> derive;
  /// An older name of the key `alias_for` (full name), never printed: when it is given and the
  /// newer key is not, `adopt` sets the newer key from it.
  std::string alias_for;
  std::function<void(config&)> adopt;
  std::function<value(const config&)> get;
  std::function<void(config&, const value&)> set;
};

/// Appends the keys of one section of `config` to a table, each bound to its field.
template <class Section>
class section_keys {
public:
  section_keys(std::vector<key_spec>& table, std::string name, Section config::*section)
      : table_(table), name_(std::move(name)), section_(section) {}

  template <class T>
  section_keys& integer(const char* key, T Section::*field, int64_t fallback, int64_t min,
                        int64_t max, rule check = {}) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
    return add(key, field, kind::integer, fallback, double(min), double(max), {}, std::move(check));
  }

  section_keys& number(const char* key, double Section::*field, double fallback, double min,
                       double max) {
    return add(key, field, kind::number, fallback, min, max, {}, {});
  }

  section_keys& boolean(const char* key, bool Section::*field, bool fallback) {
    return add(key, field, kind::boolean, fallback, 0, 0, {}, {});
  }

  section_keys& text(const char* key, std::string Section::*field, std::string fallback,
                     rule check = {}) {
    return add(key, field, kind::string, std::move(fallback), 0, 0, {}, std::move(check));
  }

  section_keys& choice(const char* key, std::string Section::*field, std::string fallback,
                       std::vector<std::string> choices) {
    return add(key, field, kind::choice, std::move(fallback), 0, 0, std::move(choices), {});
  }

  /// A non-empty list, each item in [min, max].
  section_keys& integer_list(const char* key, std::vector<int64_t> Section::*field,
                             std::vector<int64_t> fallback, int64_t min, int64_t max,
                             rule check = {}) {
    return add(key, field, kind::integer_list, std::move(fallback), double(min), double(max), {},
               std::move(check));
  }

  /// The last key holds a URL whose password must never be shown.
  section_keys& masked() {
    table_.back().masked = true;
    return *this;
  }

  /// The last (integer) key's 0 means "derived by `derive` from the other keys".
  section_keys& derived(std::function<int64_t(const config&)> derive) {
    table_.back().derive = std::move(derive);
    return *this;
  }

  /// The last key is an older name of `newer` (full name), kept working but never printed.
  section_keys& alias_of(std::string newer, std::function<void(config&)> adopt) {
    table_.back().alias_for = std::move(newer);
    table_.back().adopt = std::move(adopt);
    return *this;
  }

private:
  template <class T>
  section_keys& add(const char* key, T Section::*field, kind type, value fallback, double min,
                    double max, std::vector<std::string> choices, rule check) {
    // Every integer field is an int64_t in a `value`.
    using stored
        = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int64_t, T>;
    key_spec spec{name_,           key, type, std::move(fallback), min, max, std::move(choices),
                  std::move(check)};
    spec.get = [section = section_, field](const config& c) -> value {
      return stored((c.*section).*field);
    };
    spec.set = [section = section_, field](config& c, const value& v) {
      (c.*section).*field = static_cast<T>(std::get<stored>(v));
    };
    table_.push_back(std::move(spec));
    return *this;
  }

  std::vector<key_spec>& table_;
  std::string name_;
  Section config::*section_;
};

template <class Section>
section_keys<Section> keys(std::vector<key_spec>& table, std::string name,
                           Section config::*section) {
  return {table, std::move(name), section};
}

/// The whole table, section by section in the order `ingestd config` prints them.
const std::vector<key_spec>& schema();

} // namespace ingestd::config_table
