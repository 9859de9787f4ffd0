// The configuration loader: the table of every key (config/config_keys.cpp: its field, default,
// accepted values and the rules that make it required) drives the defaults, the JSON file, the
// environment overrides, validation that names the key, and printing.
#include "config/config.hpp"
#include "config/config_table.hpp"
#include "messages/priority.hpp"

#include "messages/json_depth.hpp"
#include "messages/text.hpp"
#include "messages/uuid.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <type_traits>
#include <variant>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

extern char** environ;

namespace ingestd {

namespace {

using namespace config_table;

/// Secrets: environment variable and the config key a user might wrongly put in the file.
struct secret_spec {
  const char* env;
  const char* mistaken_key;
  std::string config::secrets_section::*member;
};

const secret_spec secret_specs[] = {
    {"INGESTD_LLM_API_KEY", "llm_api_key", &config::secrets_section::llm_api_key},
    {"INGESTD_DOCUMENT_AI_TOKEN", "document_ai_token", &config::secrets_section::document_ai_token},
    {"INGESTD_NOTIFY_WEBHOOK_URL", "webhook_url", &config::secrets_section::notify_webhook_url},
    {"INGESTD_INTAKE_TOKEN", "token", &config::secrets_section::intake_token},
    {"INGESTD_INTAKE_ADMIN_TOKEN", "intake_admin_token",
     &config::secrets_section::intake_admin_token},
    {"INGESTD_ADMIN_TOKEN", "admin_token", &config::secrets_section::admin_token},
    {"INGESTD_REVIEW_TOKEN", "review_token", &config::secrets_section::review_token},
    {"INGESTD_EVENTS_WEBHOOK_URL", "events_webhook_url",
     &config::secrets_section::events_webhook_url},
    {"INGESTD_EVENTS_WEBHOOK_SECRET", "events_webhook_secret",
     &config::secrets_section::events_webhook_secret},
};

std::string upper(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string env_name(const key_spec& spec) {
  return "INGESTD_" + upper(spec.section) + "__" + upper(spec.key);
}

std::string full_name(const key_spec& spec) {
  return spec.section + "." + spec.key;
}

/// A list key whose default is empty may be given empty (e.g. queue.priority_classes: none).
bool may_be_empty(const key_spec& spec) {
  auto* list = std::get_if<std::vector<int64_t>>(&spec.fallback);
  return list != nullptr && list->empty();
}

std::string expected_text(const key_spec& spec) {
  auto range = [&](const char* what) {
    std::ostringstream out;
    out << what << " from " << static_cast<int64_t>(spec.min) << " to "
        << static_cast<int64_t>(spec.max);
    return out.str();
  };
  switch (spec.type) {
  case kind::integer:
    return range("an integer");
  case kind::integer_list:
    return range(may_be_empty(spec) ? "a list of integers, each"
                                    : "a non-empty list of integers, each");
  case kind::number: {
    std::ostringstream out;
    out << "a number from " << spec.min << " to " << spec.max;
    return out.str();
  }
  case kind::boolean:
    return "true or false";
  case kind::string:
    return "a string";
  case kind::choice: {
    std::string out = "one of";
    for (size_t i = 0; i < spec.choices.size(); ++i)
      out += (i == 0 ? " " : ", ") + spec.choices[i];
    return out;
  }
  }
  return "";
}

void put_value(rapidjson::Writer<rapidjson::StringBuffer>& w, const value& v) {
  std::visit(
      [&](auto& x) {
        using t = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<t, int64_t>)
          w.Int64(x);
        else if constexpr (std::is_same_v<t, double>)
          w.Double(x);
        else if constexpr (std::is_same_v<t, bool>)
          w.Bool(x);
        else if constexpr (std::is_same_v<t, std::string>)
          w.String(x.c_str(), static_cast<rapidjson::SizeType>(x.size()));
        else {
          w.StartArray();
          for (auto i : x)
            w.Int64(i);
          w.EndArray();
        }
      },
      v);
}

/// The key's value as it may be shown: a URL's password masked.
value shown_value(const key_spec& spec, const config& c) {
  auto v = spec.get(c);
  if (spec.masked)
    v = mask_url_password(std::get<std::string>(v));
  return v;
}

/// A value in a problem: strings quoted as given, everything else as JSON.
std::string shown_text(const value& v) {
  if (auto s = std::get_if<std::string>(&v))
    return "\"" + *s + "\"";
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer{buf};
  put_value(writer, v);
  return buf.GetString();
}

std::string json_text(const rapidjson::Value& v) {
  // The writer recurses: a value nested without end is named, not printed.
  if (json_deeper_than(v, 16))
    return std::string{v.IsArray() ? "an array" : "an object"} + " nested deeper than 16 levels";
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer{buf};
  v.Accept(writer);
  return buf.GetString();
}

bool in_range(const key_spec& spec, double x) {
  return x >= spec.min && x <= spec.max;
}

bool is_choice(const key_spec& spec, const std::string& s) {
  for (auto& c : spec.choices)
    if (c == s)
      return true;
  return false;
}

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty())
    return std::nullopt;
  errno = 0;
  char* end = nullptr;
  auto x = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size())
    return std::nullopt;
  return x;
}

/// The value of a key in the config file, when it is of the key's type and in its range.
std::optional<value> from_json(const key_spec& spec, const rapidjson::Value& v) {
  switch (spec.type) {
  case kind::integer:
    if (v.IsInt64() && in_range(spec, static_cast<double>(v.GetInt64())))
      return v.GetInt64();
    return std::nullopt;
  case kind::number:
    if (v.IsNumber() && std::isfinite(v.GetDouble()) && in_range(spec, v.GetDouble()))
      return v.GetDouble();
    return std::nullopt;
  case kind::boolean:
    if (v.IsBool())
      return v.GetBool();
    return std::nullopt;
  case kind::string:
    if (v.IsString())
      return std::string{v.GetString(), v.GetStringLength()};
    return std::nullopt;
  case kind::choice:
    if (v.IsString() && is_choice(spec, v.GetString()))
      return std::string{v.GetString()};
    return std::nullopt;
  case kind::integer_list: {
    if (!v.IsArray() || (v.Empty() && !may_be_empty(spec)))
      return std::nullopt;
    std::vector<int64_t> list;
    for (auto& item : v.GetArray()) {
      if (!item.IsInt64() || !in_range(spec, static_cast<double>(item.GetInt64())))
        return std::nullopt;
      list.push_back(item.GetInt64());
    }
    return list;
  }
  }
  return std::nullopt;
}

/// The value of a key in an environment variable (lists comma-separated), when valid.
std::optional<value> from_env(const key_spec& spec, const std::string& text) {
  switch (spec.type) {
  case kind::integer: {
    auto x = parse_int(text);
    if (x && in_range(spec, static_cast<double>(*x)))
      return *x;
    return std::nullopt;
  }
  case kind::number: {
    errno = 0;
    char* end = nullptr;
    auto x = std::strtod(text.c_str(), &end);
    if (!text.empty() && errno == 0 && end == text.c_str() + text.size() && std::isfinite(x)
        && in_range(spec, x))
      return x;
    return std::nullopt;
  }
  case kind::boolean:
    if (text == "true" || text == "1")
      return true;
    if (text == "false" || text == "0")
      return false;
    return std::nullopt;
  case kind::string:
    return text;
  case kind::choice:
    if (is_choice(spec, text))
      return text;
    return std::nullopt;
  case kind::integer_list: {
    std::vector<int64_t> list;
    std::stringstream in{text};
    std::string item;
    while (std::getline(in, item, ',')) {
      auto x = parse_int(item);
      if (!x || !in_range(spec, static_cast<double>(*x)))
        return std::nullopt;
      list.push_back(*x);
    }
    if (list.empty() && !may_be_empty(spec))
      return std::nullopt;
    return list;
  }
  }
  return std::nullopt;
}

const key_spec* find_key(const std::string& section, const std::string& key) {
  for (auto& spec : schema())
    if (spec.section == section && spec.key == key)
      return &spec;
  return nullptr;
}

/// The table's defaults as written: derived keys still 0, aliases unset.
config written_defaults() {
  config c;
  for (auto& spec : schema())
    spec.set(c, spec.fallback);
  return c;
}

/// Applies the aliases given without their newer key, then gives every derived key left at 0
/// its value. `given` holds the full names of the keys the file or the environment set.
void resolve(config& c, const std::set<std::string>& given) {
  for (auto& spec : schema())
    if (!spec.alias_for.empty() && given.contains(full_name(spec))
        && !given.contains(spec.alias_for))
      spec.adopt(c);
  for (auto& spec : schema())
    if (spec.derive && std::get<int64_t>(spec.get(c)) == 0)
      spec.set(c, spec.derive(c));
}

/// The defaults, then the file, then the environment, collecting every problem.
class loader {
public:
  config values = written_defaults();
  std::vector<std::string> problems;
  /// Full names of the keys the file or the environment set.
  std::set<std::string> given;

  void load_file(const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    if (!in) {
      problems.push_back("cannot read config file " + path);
      return;
    }
    std::stringstream buf;
    buf << in.rdbuf();
    auto text = buf.str();
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseIterativeFlag>(text.c_str(), text.size());
    if (doc.HasParseError()) {
      problems.push_back("config file " + path + " is not valid JSON at offset "
                         + std::to_string(doc.GetErrorOffset()) + ": "
                         + rapidjson::GetParseError_En(doc.GetParseError()));
      return;
    }
    if (!doc.IsObject()) {
      problems.push_back("config file " + path + ": expected a JSON object of sections");
      return;
    }
    for (auto& section : doc.GetObject()) {
      std::string section_name = section.name.GetString();
      if (!section.value.IsObject()) {
        if (section_name.rfind('$', 0) == 0 || section_name.rfind('_', 0) == 0)
          continue; // "$comment"-style annotations
        problems.push_back(section_name + " (config file): expected an object of keys");
        continue;
      }
      for (auto& entry : section.value.GetObject()) {
        std::string key = entry.name.GetString();
        if (key.rfind('_', 0) == 0)
          continue; // "_comment"-style annotations
        if (auto spec = find_key(section_name, key)) {
          if (auto v = from_json(*spec, entry.value)) {
            spec->set(values, *v);
            given.insert(full_name(*spec));
          } else
            problem(*spec, json_text(entry.value), "config file");
          continue;
        }
        std::string why = "unknown key";
        for (auto& secret : secret_specs)
          if (key == secret.mistaken_key)
            why = std::string{"a secret: set it in the environment as "} + secret.env
                  + ", never in the file";
        problems.push_back(section_name);
        problems.back().append(".").append(key).append(" (config file): ").append(why);
      }
    }
  }

  void load_env(const environment& env) {
    for (auto& [name, text] : env) {
      if (name.rfind("INGESTD_", 0) != 0 || name.find("__") == std::string::npos)
        continue;
      bool known = false;
      for (auto& spec : schema()) {
        if (env_name(spec) == name) {
          if (auto v = from_env(spec, text)) {
            spec.set(values, *v);
            given.insert(full_name(spec));
          } else
            problem(spec, "\"" + text + "\"", "environment " + name);
          known = true;
          break;
        }
      }
      if (!known)
        problems.push_back(name + " (environment): unknown configuration key");
    }
    for (auto& secret : secret_specs)
      if (auto i = env.find(secret.env); i != env.end())
        values.secrets.*secret.member = i->second;
  }

  /// The rules that need more than a type and a range ("must be given", across keys).
  void check_rules() {
    for (auto& spec : schema()) {
      if (!spec.check)
        continue;
      if (auto expected = spec.check(values, spec.get(values)))
        problems.push_back(full_name(spec) + " = " + shown_text(shown_value(spec, values))
                           + ": expected " + *expected);
    }
  }

private:
  void problem(const key_spec& spec, const std::string& shown, const std::string& origin) {
    problems.push_back(full_name(spec) + " = " + shown + " (" + origin + "): expected "
                       + expected_text(spec));
  }
};

/// The configuration as pretty JSON, section by section; with the secrets' set/unset state when
/// `secrets` is given.
std::string render(const config& c, const config::secrets_section* secrets) {
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w{buf};
  w.SetIndent(' ', 2);
  w.StartObject();
  std::string section;
  for (auto& spec : schema()) {
    if (!spec.alias_for.empty())
      continue; // an older name: accepted, never advertised
    if (spec.section != section) {
      if (!section.empty())
        w.EndObject();
      section = spec.section;
      w.Key(section.c_str());
      w.StartObject();
    }
    w.Key(spec.key.c_str());
    // Through the base writer: each value compact on its key's line, as config/ingestd.json has it.
    put_value(w, shown_value(spec, c));
  }
  w.EndObject();
  if (secrets != nullptr) {
    w.Key("secrets (environment only)");
    w.StartObject();
    for (auto& secret : secret_specs) {
      w.Key(secret.env);
      w.String((secrets->*secret.member).empty() ? "(unset)" : "(set)");
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string{buf.GetString()} + "\n";
}

} // namespace

environment process_environment() {
  environment env;
  for (auto p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string entry{*p};
    auto eq = entry.find('=');
    if (eq != std::string::npos)
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

config default_config() {
  auto c = written_defaults();
  resolve(c, {});
  return c;
}

result<config> load_config(const std::optional<std::string>& path, const environment& env) {
  loader l;
  if (path)
    l.load_file(*path);
  l.load_env(env);
  if (l.problems.empty()) {
    resolve(l.values, l.given);
    l.check_rules();
    if (l.problems.empty())
      return std::move(l.values);
  }
  std::string text;
  for (auto& p : l.problems)
    text += (text.empty() ? "" : "\n") + p;
  return error::make_permanent("config.invalid", text);
}

std::vector<std::string> name_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    auto item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto first = item.find_first_not_of(" \t");
    auto last = item.find_last_not_of(" \t");
    if (first != std::string::npos)
      out.push_back(item.substr(first, last - first + 1));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

namespace {

/// The pieces of `text` between `sep`s.
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    auto at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? at : at - start));
    if (at == std::string::npos)
      return out;
    start = at + 1;
  }
}

/// The number `text` holds (all of it), when it lies from `lo` to `hi`.
std::optional<double> number_in(const std::string& text, double lo, double hi) {
  char* end = nullptr;
  errno = 0;
  auto x = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !(x >= lo && x <= hi))
    return std::nullopt;
  return x;
}

} // namespace

namespace {

/// "TENANT_ID:NUMBER,..." with each number from `low` to `high`, each tenant once; `expected` and
/// `out_of_range` say what is wrong with an entry.
result<std::vector<std::pair<std::string, double>>>
tenant_numbers_of(const std::string& text, double low, double high, const char* expected,
                  const char* out_of_range, const char* code) {
  std::vector<std::pair<std::string, double>> out;
  std::set<std::string> seen;
  for (auto& pair : name_list(text)) {
    auto colon = pair.rfind(':');
    auto bad = [&](const std::string& why) {
      std::string message = "\"";
      message.append(pair).append("\": ").append(why);
      return error::make_permanent(code, std::move(message));
    };
    if (colon == std::string::npos)
      return bad(expected);
    auto id = uuid::parse(pair.substr(0, colon));
    if (!id)
      return bad("the tenant must be a tenant id (a UUID)");
    auto number = number_in(pair.substr(colon + 1), low, high);
    if (!number)
      return bad(out_of_range);
    if (!seen.insert(id->str()).second)
      return bad("the tenant is listed twice");
    out.emplace_back(id->str(), *number);
  }
  return out;
}

} // namespace

result<std::vector<tenant_weight>> tenant_weights_of(const std::string& text) {
  auto pairs = tenant_numbers_of(text, 0.01, 1000, "expected TENANT_ID:WEIGHT",
                                 "the weight must be a number from 0.01 to 1000",
                                 "config.bad_tenant_weight");
  if (!pairs)
    return pairs.error();
  std::vector<tenant_weight> out;
  for (auto& [tenant, weight] : *pairs)
    out.push_back(tenant_weight{tenant, weight});
  return out;
}

result<std::vector<tenant_threshold>> tenant_auto_approve_of(const std::string& text) {
  auto pairs = tenant_numbers_of(text, 0, 1, "expected TENANT_ID:THRESHOLD",
                                 "the threshold must be a number from 0 to 1",
                                 "config.bad_tenant_auto_approve");
  if (!pairs)
    return pairs.error();
  std::vector<tenant_threshold> out;
  for (auto& [tenant, threshold] : *pairs)
    out.push_back(tenant_threshold{tenant, threshold});
  return out;
}

result<std::vector<tenant_budget>> tenant_budgets_of(const std::string& text) {
  std::vector<tenant_budget> out;
  std::set<std::string> seen;
  for (auto& entry : name_list(text)) {
    auto bad = [&](const std::string& why) {
      std::string message = "\"";
      message.append(entry).append("\": ").append(why);
      return error::make_permanent("config.bad_tenant_budget", std::move(message));
    };
    auto first = entry.find(':');
    if (first == std::string::npos)
      return bad("expected TENANT_ID:AMOUNT or TENANT_ID:AMOUNT:ACTION");
    auto second = entry.find(':', first + 1);
    tenant_budget b;
    auto id = uuid::parse(entry.substr(0, first));
    if (!id)
      return bad("the tenant must be a tenant id (a UUID)");
    b.tenant = id->str();
    auto amount = number_in(
        entry.substr(first + 1, second == std::string::npos ? second : second - first - 1), 0, 1e9);
    if (!amount)
      return bad("the amount must be a number from 0 to 1e9");
    b.amount = *amount;
    if (second != std::string::npos) {
      b.action = entry.substr(second + 1);
      if (b.action != "downgrade" && b.action != "hold")
        return bad("the action must be downgrade or hold");
    }
    if (!seen.insert(b.tenant).second)
      return bad("the tenant is listed twice");
    out.push_back(std::move(b));
  }
  return out;
}

result<std::vector<tenant_retention>> tenant_retention_of(const std::string& text) {
  std::vector<tenant_retention> out;
  std::set<std::string> seen;
  for (auto& entry : name_list(text)) {
    auto bad = [&](const std::string& why) {
      std::string message = "\"";
      message.append(entry).append("\": ").append(why);
      return error::make_permanent("config.bad_tenant_retention", std::move(message));
    };
    auto parts = split(entry, ':');
    if (parts.size() < 2)
      return bad("expected TENANT_ID:KIND=DAYS");
    tenant_retention r;
    auto id = uuid::parse(parts[0]);
    if (!id)
      return bad("the tenant must be a tenant id (a UUID)");
    r.tenant = id->str();
    for (size_t i = 1; i < parts.size(); ++i) {
      auto eq = parts[i].find('=');
      auto kind = parts[i].substr(0, eq);
      auto days
          = eq == std::string::npos ? std::nullopt : number_in(parts[i].substr(eq + 1), 0, 36500);
      if (!days || *days != static_cast<int>(*days))
        return bad("expected KIND=DAYS with DAYS a whole number from 0 to 36500");
      int* slot = kind == "originals" ? &r.originals_days
                  : kind == "derived" ? &r.derived_days
                  : kind == "audit"   ? &r.audit_days
                  : kind == "events"  ? &r.events_days
                                      : nullptr;
      if (slot == nullptr)
        return bad("the kind must be originals, derived, audit or events");
      *slot = static_cast<int>(*days);
    }
    if (!seen.insert(r.tenant).second)
      return bad("the tenant is listed twice");
    out.push_back(std::move(r));
  }
  return out;
}

result<std::vector<mailbox_entry>> mailboxes_of(const std::string& text) {
  std::vector<mailbox_entry> out;
  std::set<std::string> seen;
  for (auto& entry : name_list(text)) {
    auto bad = [&](const std::string& why) {
      std::string message = "\"";
      message.append(mask_url_password(entry)).append("\": ").append(why);
      return error::make_permanent("config.bad_mailbox", std::move(message));
    };
    auto colon = entry.find(':');
    if (colon == std::string::npos)
      return bad("expected TENANT_ID:imaps://USER@HOST/FOLDER");
    mailbox_entry m;
    auto id = uuid::parse(entry.substr(0, colon));
    if (!id)
      return bad("the tenant must be a tenant id (a UUID)");
    m.tenant = id->str();
    auto url = entry.substr(colon + 1);
    std::string scheme;
    for (const char* s : {"imaps://", "imap://"})
      if (url.rfind(s, 0) == 0)
        scheme = s;
    if (scheme.empty())
      return bad("the mailbox must be an imaps:// URL (or imap:// with STARTTLS)");
    auto rest = url.substr(scheme.size());
    auto query = rest.find('?');
    auto path = rest.find('/');
    if (path == std::string::npos || path > query)
      return bad("the URL must name a folder: imaps://USER@HOST/FOLDER");
    auto authority = rest.substr(0, path);
    auto at = authority.rfind('@');
    if (at == std::string::npos || at == 0)
      return bad("the URL must name the user: imaps://USER@HOST/FOLDER");
    auto user = authority.substr(0, at);
    if (user.find(':') != std::string::npos)
      return bad("no password in the URL: it comes from the environment (password_env)");
    m.user = percent_decode(user);
    auto folder = rest.substr(path + 1, query == std::string::npos ? query : query - path - 1);
    if (folder.empty() || authority.size() == at + 1)
      return bad("the URL must name a host and a folder: imaps://USER@HOST/FOLDER");
    m.url = scheme;
    m.url.append(authority.substr(at + 1)).append("/").append(folder);
    if (query != std::string::npos)
      for (auto& pair : split(rest.substr(query + 1), '&')) {
        auto eq = pair.find('=');
        auto name = pair.substr(0, eq);
        auto value = eq == std::string::npos ? std::string{} : percent_decode(pair.substr(eq + 1));
        if (value.empty())
          return bad("expected processed=FOLDER or password_env=NAME in the query");
        if (name == "processed")
          m.processed_folder = value;
        else if (name == "password_env")
          m.password_env = value;
        else
          return bad("unknown parameter \"" + name + "\" (processed, password_env)");
      }
    if (m.processed_folder == percent_decode(folder))
      return bad("the processed folder must differ from the folder read");
    if (!seen.insert(m.user + " " + m.url).second)
      return bad("the mailbox is listed twice");
    out.push_back(std::move(m));
  }
  return out;
}

result<std::vector<bucket_entry>> buckets_of(const std::string& text) {
  std::vector<bucket_entry> out;
  std::set<std::string> seen;
  for (auto& entry : name_list(text)) {
    auto bad = [&](const std::string& why) {
      std::string message = "\"";
      message.append(entry).append("\": ").append(why);
      return error::make_permanent("config.bad_bucket", std::move(message));
    };
    auto colon = entry.find(':');
    if (colon == std::string::npos)
      return bad("expected TENANT_ID:s3://BUCKET/PREFIX?queue=QUEUE");
    bucket_entry b;
    auto id = uuid::parse(entry.substr(0, colon));
    if (!id)
      return bad("the tenant must be a tenant id (a UUID)");
    b.tenant = id->str();
    auto url = entry.substr(colon + 1);
    if (url.rfind("s3://", 0) != 0)
      return bad("the bucket must be an s3:// URL");
    auto rest = url.substr(5);
    auto query = rest.find('?');
    auto path = rest.substr(0, query);
    auto slash = path.find('/');
    b.bucket = path.substr(0, slash);
    if (slash != std::string::npos)
      b.prefix = percent_decode(path.substr(slash + 1));
    bool named = b.bucket.size() >= 3 && b.bucket.size() <= 63;
    for (char c : b.bucket)
      named = named
              && (std::islower(static_cast<unsigned char>(c)) != 0
                  || std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.');
    if (!named)
      return bad("the bucket must be an S3 bucket name (3 to 63 lower-case letters, digits, '-' "
                 "and '.')");
    if (query != std::string::npos)
      for (auto& pair : split(rest.substr(query + 1), '&')) {
        auto eq = pair.find('=');
        if (pair.substr(0, eq) != "queue" || eq == std::string::npos)
          return bad("expected queue=QUEUE (a name or a URL) in the query");
        b.queue = percent_decode(pair.substr(eq + 1));
      }
    if (b.queue.empty())
      return bad("the queue of the bucket's notifications must be given: ?queue=QUEUE");
    if (!seen.insert(b.bucket + "/" + b.prefix).second)
      return bad("the bucket and prefix are listed twice");
    out.push_back(std::move(b));
  }
  return out;
}

namespace {

/// Masks the value of every `password=` parameter: of a URL's query (`?password=x&...`) or of a
/// libpq key/value string (`host=db password='x y'`), quoted or not.
std::string mask_password_parameters(std::string text) {
  static constexpr std::string_view key = "password=";
  size_t from = 0;
  while (true) {
    size_t at = std::string::npos;
    for (size_t i = from; i + key.size() <= text.size(); ++i) {
      bool starts = i == 0 || text[i - 1] == '?' || text[i - 1] == '&'
                    || std::isspace(static_cast<unsigned char>(text[i - 1]));
      bool same = std::equal(
          key.begin(), key.end(), text.begin() + static_cast<ptrdiff_t>(i),
          [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
      if (starts && same) {
        at = i;
        break;
      }
    }
    if (at == std::string::npos)
      return text;
    size_t value = at + key.size();
    size_t end = value;
    if (end < text.size() && text[end] == '\'') {
      ++end;
      while (end < text.size() && text[end] != '\'')
        end += text[end] == '\\' ? 2 : 1;
      end = std::min(end + 1, text.size());
    } else {
      while (end < text.size() && text[end] != '&'
             && !std::isspace(static_cast<unsigned char>(text[end])))
        ++end;
    }
    text.replace(value, end - value, "****");
    from = value + 4;
  }
}

} // namespace

std::string mask_url_password(const std::string& url) {
  auto masked = mask_password_parameters(url);
  // Each URL's user information (a list of URLs has several).
  for (auto scheme = masked.find("://"); scheme != std::string::npos;
       scheme = masked.find("://", scheme + 3)) {
    auto next = masked.find("://", scheme + 3);
    auto at = masked.rfind('@', next == std::string::npos ? next : next - 1);
    if (at == std::string::npos || at < scheme + 3)
      continue;
    auto colon = masked.find(':', scheme + 3);
    if (colon == std::string::npos || colon > at)
      continue;
    masked = masked.substr(0, colon + 1) + "****" + masked.substr(at);
  }
  return masked;
}

std::string default_config_json() {
  return render(written_defaults(), nullptr);
}

std::string config::to_json() const {
  return render(*this, &secrets);
}

std::vector<std::string> stage_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  auto flush = [&] {
    if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end())
      out.push_back(item);
    item.clear();
  };
  for (char ch : text) {
    if (ch == ',')
      flush();
    else if (!std::isspace(static_cast<unsigned char>(ch)))
      item.push_back(ch);
  }
  flush();
  return out;
}

bool stage_enabled(const config& cfg, const std::string& stage) {
  auto list = stage_list(cfg.stages.enabled);
  return std::find(list.begin(), list.end(), stage) != list.end();
}

std::vector<std::string> served_stages(const config& cfg) {
  auto serve = stage_list(cfg.stages.serve);
  return serve.empty() ? stage_list(cfg.stages.enabled) : serve;
}

} // namespace ingestd
