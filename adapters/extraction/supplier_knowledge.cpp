#include "adapters/extraction/supplier_knowledge.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace ingestd {

namespace {

constexpr std::string_view day_month_swapped = "day_month_swapped";

rapidjson::Document parse(const std::string& json) {
  rapidjson::Document d;
  d.Parse(json.c_str(), json.size());
  if (d.HasParseError() || !d.IsObject())
    d.SetObject();
  return d;
}

std::string string_of(const rapidjson::Document& d, const char* name) {
  auto it = d.FindMember(name);
  if (it == d.MemberEnd() || !it->value.IsString())
    return {};
  return {it->value.GetString(), it->value.GetStringLength()};
}

/// Letters and digits only (ASCII lowered or raised; other bytes, such as UTF-8's, kept).
std::string folded(std::string_view s, bool upper) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x80)
      out += c;
    else if (std::isalnum(u) != 0)
      out += static_cast<char>(upper ? std::toupper(u) : std::tolower(u));
  }
  return out;
}

/// The supplier's keys, its VAT id's first: either may be read the same way on its next document.
std::vector<std::string> keys_of(const rapidjson::Document& d) {
  std::vector<std::string> out;
  auto vat = folded(string_of(d, "supplier_vat_id"), true);
  if (vat.size() >= 4)
    out.push_back("vat:" + vat);
  auto name = folded(string_of(d, "supplier_name"), false);
  if (name.size() >= 3)
    out.push_back("name:" + name);
  return out;
}

/// "2024-03-05" → "2024-05-03"; empty when it is not a date or swapping makes none.
std::string swapped(const std::string& date) {
  if (date.size() != 10 || date[4] != '-' || date[7] != '-')
    return {};
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (std::isdigit(static_cast<unsigned char>(date[i])) == 0)
      return {};
  int month = std::stoi(date.substr(5, 2));
  int day = std::stoi(date.substr(8, 2));
  if (day < 1 || day > 12 || month < 1 || month > 12 || day == month)
    return {};
  return date.substr(0, 5) + date.substr(8, 2) + "-" + date.substr(5, 2);
}

} // namespace

std::vector<std::string> supplier_keys(const std::string& structured_data) {
  return keys_of(parse(structured_data));
}

std::vector<supplier_fact> learn(const std::string& machine_data,
                                 const std::string& reviewed_data) {
  std::vector<supplier_fact> out;
  auto machine = parse(machine_data);
  auto reviewed = parse(reviewed_data);
  for (auto& key : keys_of(machine)) {
    for (const char* field : {"supplier_name", "supplier_vat_id"}) {
      auto before = string_of(machine, field);
      auto after = string_of(reviewed, field);
      if (!after.empty() && after != before)
        out.push_back({key, field, after, 1});
    }
    auto date = string_of(machine, "invoice_date");
    if (auto s = swapped(date); !s.empty() && s == string_of(reviewed, "invoice_date"))
      out.push_back({key, "date_order", std::string{day_month_swapped}, 1});
  }
  return out;
}

std::string facts_json(const std::vector<supplier_fact>& facts) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  w.StartArray();
  for (auto& f : facts) {
    w.StartObject();
    w.Key("supplier");
    w.String(f.supplier.c_str(), static_cast<rapidjson::SizeType>(f.supplier.size()));
    w.Key("field");
    w.String(f.field.c_str(), static_cast<rapidjson::SizeType>(f.field.size()));
    w.Key("value");
    w.String(f.value.c_str(), static_cast<rapidjson::SizeType>(f.value.size()));
    w.EndObject();
  }
  w.EndArray();
  return {buf.GetString(), buf.GetSize()};
}

std::vector<std::string> apply_knowledge(const std::vector<supplier_fact>& facts, extraction& x) {
  std::vector<std::string> applied;
  if (facts.empty())
    return applied;
  auto d = parse(x.structured_data);
  auto keys = keys_of(d);
  // One fact per field: the one under the first key that has it (the VAT id's).
  std::vector<const supplier_fact*> chosen;
  for (auto& key : keys)
    for (auto& f : facts)
      if (f.supplier == key
          && std::none_of(chosen.begin(), chosen.end(),
                          [&](const supplier_fact* c) { return c->field == f.field; }))
        chosen.push_back(&f);
  auto& a = d.GetAllocator();
  auto set = [&](const char* field, const std::string& value) {
    auto it = d.FindMember(field);
    if (it == d.MemberEnd())
      d.AddMember(rapidjson::Value{field, a}, rapidjson::Value{value.c_str(), a}, a);
    else
      it->value.SetString(value.c_str(), static_cast<rapidjson::SizeType>(value.size()), a);
  };
  auto said = [](const supplier_fact& f, const std::string& what) {
    return f.field + " " + what + " (learned from " + std::to_string(f.reviews)
           + (f.reviews == 1 ? " review)" : " reviews)");
  };
  for (const auto* fact : chosen) {
    const auto& f = *fact;
    if (f.field == "supplier_name" || f.field == "supplier_vat_id") {
      if (string_of(d, f.field.c_str()) == f.value)
        continue;
      set(f.field.c_str(), f.value);
      applied.push_back(said(f, "'" + f.value + "'"));
    } else if (f.field == "date_order" && f.value == day_month_swapped) {
      bool any = false;
      for (const char* field : {"invoice_date", "due_date"})
        if (auto s = swapped(string_of(d, field)); !s.empty()) {
          set(field, s);
          any = true;
        }
      if (any)
        applied.push_back(said(f, "day and month swapped"));
    }
  }
  if (applied.empty())
    return applied;
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w{buf};
  d.Accept(w);
  x.structured_data.assign(buf.GetString(), buf.GetSize());
  return applied;
}

} // namespace ingestd
