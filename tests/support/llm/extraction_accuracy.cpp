// Field comparison rules for the accuracy report; see extraction_accuracy.hpp.
#include "tests/support/llm/extraction_accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <rapidjson/document.h>

namespace ingestd::test {

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in{p, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fold(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z')
      out += static_cast<char>(c - 'A' + 'a');
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
             || static_cast<unsigned char>(c) >= 0x80)
      out += c;
  }
  return out;
}

std::string show(const rapidjson::Value* v) {
  if (!v || v->IsNull())
    return "null";
  if (v->IsString())
    return std::string{"\""} + v->GetString() + "\"";
  if (v->IsNumber()) {
    std::ostringstream ss;
    ss << v->GetDouble();
    return ss.str();
  }
  if (v->IsArray())
    return "[" + std::to_string(v->Size()) + " items]";
  return "?";
}

const rapidjson::Value* member(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject())
    return nullptr;
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

bool null_or_absent(const rapidjson::Value* v) {
  return !v || v->IsNull() || (v->IsString() && v->GetStringLength() == 0)
         || (v->IsArray() && v->Empty());
}

bool same_scalar(const rapidjson::Value* got, const rapidjson::Value* want) {
  if (null_or_absent(want))
    return null_or_absent(got);
  if (null_or_absent(got))
    return false;
  if (want->IsNumber())
    return got->IsNumber() && std::fabs(got->GetDouble() - want->GetDouble()) <= 0.005;
  if (want->IsString() && got->IsString())
    return fold(got->GetString()) == fold(want->GetString());
  return false;
}

bool same_items(const rapidjson::Value* got, const rapidjson::Value* want) {
  if (null_or_absent(want))
    return null_or_absent(got);
  if (!got || !got->IsArray() || !want->IsArray() || got->Size() != want->Size())
    return false;
  for (rapidjson::SizeType i = 0; i < want->Size(); ++i)
    for (const char* key : {"description", "quantity", "unit_price", "amount"})
      if (!same_scalar(member((*got)[i], key), member((*want)[i], key)))
        return false;
  return true;
}

constexpr const char* scalar_fields[]
    = {"invoice_number",   "invoice_date",    "due_date",      "supplier_name",
       "supplier_address", "supplier_vat_id", "customer_name", "currency",
       "subtotal",         "vat_amount",      "total"};

} // namespace

std::vector<truth_pair> load_truth_pairs(const std::string& dir) {
  std::vector<truth_pair> out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    truth_pair p;
    p.name = f.stem().string();
    p.truth_json = read_file(f);
    auto txt = f;
    txt.replace_extension(".txt");
    if (std::filesystem::exists(txt)) {
      p.text = read_file(txt);
    } else {
      rapidjson::Document doc;
      doc.Parse(p.truth_json.c_str());
      auto t = doc.HasParseError() ? nullptr : member(doc, "text");
      if (!t || !t->IsString())
        continue;
      p.text = t->GetString();
    }
    out.push_back(std::move(p));
  }
  return out;
}

accuracy_report
measure_accuracy(const std::vector<truth_pair>& pairs,
                 const std::function<std::string(const std::string&)>& extract_json) {
  accuracy_report rep;
  for (const char* f : scalar_fields)
    rep.fields.push_back(field_score{f});
  rep.fields.push_back(field_score{"line_items"});
  for (const auto& p : pairs) {
    rapidjson::Document want;
    want.Parse(p.truth_json.c_str());
    if (want.HasParseError() || !want.IsObject())
      throw std::runtime_error("truth for " + p.name + " is not a JSON object");
    auto json = extract_json(p.text);
    rapidjson::Document got;
    got.Parse(json.c_str());
    if (got.HasParseError() || !got.IsObject())
      got.SetObject();
    ++rep.documents;
    for (auto& score : rep.fields) {
      auto w = member(want, score.field.c_str());
      auto g = member(got, score.field.c_str());
      bool ok = score.field == "line_items" ? same_items(g, w) : same_scalar(g, w);
      ++score.total;
      if (ok)
        ++score.correct;
      else
        rep.misses.push_back(p.name + "." + score.field + ": got " + show(g) + ", want " + show(w));
    }
  }
  return rep;
}

std::string accuracy_report::table() const {
  std::ostringstream ss;
  ss << "| field | correct | accuracy |\n| --- | --- | --- |\n";
  int correct = 0, total = 0;
  for (const auto& f : fields) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", 100 * f.ratio());
    ss << "| " << f.field << " | " << f.correct << "/" << f.total << " | " << pct << " |\n";
    correct += f.correct;
    total += f.total;
  }
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", total ? 100.0 * correct / total : 0.0);
  ss << "| all fields | " << correct << "/" << total << " | " << pct << " |\n";
  return ss.str();
}

const field_score& accuracy_report::operator[](const std::string& field) const {
  for (const auto& f : fields)
    if (f.field == field)
      return f;
  throw std::out_of_range("no field " + field);
}

} // namespace ingestd::test
