// The configuration loader: a table of every key (type, default, range), a JSON file and
// environment overrides on top of the defaults, and validation that names the key.
#include "config/config.hpp"

#include "messages/uuid.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <variant>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

extern char** environ;

namespace ingestd {

namespace {

enum class kind { integer, number, boolean, string, choice, integer_list };

using value = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

struct key_spec {
  std::string section;
  std::string key;
  kind type;
  value fallback;
  double min = 0;
  double max = 0;
  std::vector<std::string> choices = {};
};

const std::vector<key_spec>& schema() {
  using v = std::vector<int64_t>;
  static const std::vector<key_spec> all{
    {"database", "url", kind::string, std::string{"postgresql://ingestd@127.0.0.1:55432/ingestd"}},
    {"database", "pool_size", kind::integer, int64_t{2}, 1, 64},
    {"queue", "backend", kind::choice, std::string{"postgres"}, 0, 0, {"postgres", "sqs"}},
    {"queue", "name", kind::string, std::string{"ingestd-ingest"}},
    {"queue", "url", kind::string, std::string{}},
    {"queue", "dead_letter_name", kind::string, std::string{"ingestd-ingest-dlq"}},
    {"queue", "max_receive_count", kind::integer, int64_t{0}, 0, 1000},
    {"queue", "wait_time_seconds", kind::integer, int64_t{20}, 0, 20},
    {"queue", "max_messages", kind::integer, int64_t{10}, 1, 10},
    {"queue", "visibility_timeout_seconds", kind::integer, int64_t{60}, 1, 43200},
    {"aws", "region", kind::string, std::string{"eu-central-1"}},
    {"aws", "endpoint", kind::string, std::string{}},
    {"storage", "backend", kind::choice, std::string{"filesystem"}, 0, 0, {"filesystem", "s3"}},
    {"storage", "root", kind::string, std::string{".local/storage"}},
    {"storage", "bucket", kind::string, std::string{"ingestd-storage"}},
    {"storage", "path_style", kind::boolean, true},
    {"storage", "max_object_bytes", kind::integer, int64_t{100} << 20, 1, double(int64_t{1} << 34)},
    {"worker", "id", kind::string, std::string{}},
    {"worker", "max_in_flight", kind::integer, int64_t{1000}, 1, 100000},
    {"worker", "heartbeat_pool_size", kind::integer, int64_t{2}, 1, 16},
    {"worker", "preprocessing_pool_size_dec", kind::integer, int64_t{1}, 0, 256},
    {"worker", "shutdown_grace_seconds", kind::integer, int64_t{600}, 0, 86400},
    {"worker", "heartbeat_rate_seconds", kind::integer, int64_t{60}, 1, 3600},
    {"worker", "heartbeat_extension_seconds", kind::integer, int64_t{300}, 1, 43200},
    {"worker", "stale_ingestion_threshold_minutes", kind::integer, int64_t{5}, 1, 1440},
    {"worker", "max_retry_attempts", kind::integer, int64_t{3}, 1, 100},
    {"worker", "retry_backoff_seconds", kind::integer_list, v{300, 1800}, 0, 43200},
    {"worker", "step_timeout_seconds", kind::integer, int64_t{300}, 1, 86400},
    {"worker", "sweeper_interval_seconds", kind::integer, int64_t{60}, 1, 86400},
    {"transcription", "provider", kind::choice, std::string{"tesseract"}, 0, 0, {"tesseract", "document_ai"}},
    {"transcription", "ocr_quality_threshold", kind::number, 0.7, 0, 1},
    {"transcription", "languages", kind::string, std::string{"eng+deu"}},
    {"transcription", "max_file_bytes", kind::integer, int64_t{20} << 20, 1, double(int64_t{1} << 32)},
    {"transcription", "max_pages", kind::integer, int64_t{30}, 1, 10000},
    {"transcription", "timeout_seconds", kind::integer, int64_t{300}, 1, 86400},
    {"transcription", "document_ai_endpoint", kind::string, std::string{}},
    {"extraction", "provider", kind::choice, std::string{"local"}, 0, 0, {"local", "llm"}},
    {"extraction", "llm_base_url", kind::string, std::string{"https://api.openai.com"}},
    {"extraction", "llm_model", kind::string, std::string{"gpt-4o-mini"}},
    {"extraction", "timeout_seconds", kind::integer, int64_t{120}, 1, 3600},
    {"extraction", "max_attempts", kind::integer, int64_t{3}, 1, 10},
    {"notify", "link_template", kind::string, std::string{}},
    {"admin", "bind", kind::string, std::string{"127.0.0.1"}},
    {"admin", "port", kind::integer, int64_t{9464}, 0, 65535},
    {"intake", "bind", kind::string, std::string{"127.0.0.1"}},
    {"intake", "port", kind::integer, int64_t{0}, 0, 65535},
    {"intake", "default_tenant", kind::string, std::string{"00000000-0000-7000-8000-000000000001"}},
    {"log", "format", kind::choice, std::string{"json"}, 0, 0, {"json", "text"}},
    {"log", "level", kind::choice, std::string{"info"}, 0, 0, {"trace", "debug", "info", "warn", "error"}},
  };
  return all;
}

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
};

std::string upper(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string env_name(const key_spec& spec) {
  return "INGESTD_" + upper(spec.section) + "__" + upper(spec.key);
}

std::string full_name(const key_spec& spec) { return spec.section + "." + spec.key; }

std::string expected_text(const key_spec& spec) {
  auto range = [&](const char* what) {
    std::ostringstream out;
    out << what << " from " << static_cast<int64_t>(spec.min) << " to " << static_cast<int64_t>(spec.max);
    return out.str();
  };
  switch (spec.type) {
    case kind::integer:
      return range("an integer");
    case kind::integer_list:
      return range("a non-empty list of integers, each");
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

std::string json_text(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer{buf};
  v.Accept(writer);
  return buf.GetString();
}

/// Calls f(name, member) for every configuration key of `c`: the one list that ties key names
/// to the fields of `config`.
template <class Config, class F>
void for_each_field(Config& c, F&& f) {
  f("database.url", c.database.url);
  f("database.pool_size", c.database.pool_size);
  f("queue.backend", c.queue.backend);
  f("queue.name", c.queue.name);
  f("queue.url", c.queue.url);
  f("queue.dead_letter_name", c.queue.dead_letter_name);
  f("queue.max_receive_count", c.queue.max_receive_count);
  f("queue.wait_time_seconds", c.queue.wait_time_seconds);
  f("queue.max_messages", c.queue.max_messages);
  f("queue.visibility_timeout_seconds", c.queue.visibility_timeout_seconds);
  f("aws.region", c.aws.region);
  f("aws.endpoint", c.aws.endpoint);
  f("storage.backend", c.storage.backend);
  f("storage.root", c.storage.root);
  f("storage.bucket", c.storage.bucket);
  f("storage.path_style", c.storage.path_style);
  f("storage.max_object_bytes", c.storage.max_object_bytes);
  f("worker.id", c.worker.id);
  f("worker.max_in_flight", c.worker.max_in_flight);
  f("worker.heartbeat_pool_size", c.worker.heartbeat_pool_size);
  f("worker.preprocessing_pool_size_dec", c.worker.preprocessing_pool_size_dec);
  f("worker.shutdown_grace_seconds", c.worker.shutdown_grace_seconds);
  f("worker.heartbeat_rate_seconds", c.worker.heartbeat_rate_seconds);
  f("worker.heartbeat_extension_seconds", c.worker.heartbeat_extension_seconds);
  f("worker.stale_ingestion_threshold_minutes", c.worker.stale_ingestion_threshold_minutes);
  f("worker.max_retry_attempts", c.worker.max_retry_attempts);
  f("worker.retry_backoff_seconds", c.worker.retry_backoff_seconds);
  f("worker.step_timeout_seconds", c.worker.step_timeout_seconds);
  f("worker.sweeper_interval_seconds", c.worker.sweeper_interval_seconds);
  f("transcription.provider", c.transcription.provider);
  f("transcription.ocr_quality_threshold", c.transcription.ocr_quality_threshold);
  f("transcription.languages", c.transcription.languages);
  f("transcription.max_file_bytes", c.transcription.max_file_bytes);
  f("transcription.max_pages", c.transcription.max_pages);
  f("transcription.timeout_seconds", c.transcription.timeout_seconds);
  f("transcription.document_ai_endpoint", c.transcription.document_ai_endpoint);
  f("extraction.provider", c.extraction.provider);
  f("extraction.llm_base_url", c.extraction.llm_base_url);
  f("extraction.llm_model", c.extraction.llm_model);
  f("extraction.timeout_seconds", c.extraction.timeout_seconds);
  f("extraction.max_attempts", c.extraction.max_attempts);
  f("notify.link_template", c.notify.link_template);
  f("admin.bind", c.admin.bind);
  f("admin.port", c.admin.port);
  f("intake.bind", c.intake.bind);
  f("intake.port", c.intake.port);
  f("intake.default_tenant", c.intake.default_tenant);
  f("log.format", c.log.format);
  f("log.level", c.log.level);
}

class loader {
public:
  std::map<std::string, value> values;
  std::vector<std::string> problems;

  loader() {
    for (auto& spec : schema())
      values[full_name(spec)] = spec.fallback;
  }

  void problem(const key_spec& spec, const std::string& shown, const std::string& origin) {
    problems.push_back(full_name(spec) + " = " + shown + " (" + origin + "): expected "
                       + expected_text(spec));
  }

  bool in_range(const key_spec& spec, double x) const { return x >= spec.min && x <= spec.max; }

  void set_from_json(const key_spec& spec, const rapidjson::Value& v, const std::string& origin) {
    auto shown = json_text(v);
    auto& slot = values[full_name(spec)];
    switch (spec.type) {
      case kind::integer:
        if (v.IsInt64() && in_range(spec, static_cast<double>(v.GetInt64())))
          slot = v.GetInt64();
        else
          problem(spec, shown, origin);
        return;
      case kind::number:
        if (v.IsNumber() && std::isfinite(v.GetDouble()) && in_range(spec, v.GetDouble()))
          slot = v.GetDouble();
        else
          problem(spec, shown, origin);
        return;
      case kind::boolean:
        if (v.IsBool())
          slot = v.GetBool();
        else
          problem(spec, shown, origin);
        return;
      case kind::string:
        if (v.IsString())
          slot = std::string{v.GetString(), v.GetStringLength()};
        else
          problem(spec, shown, origin);
        return;
      case kind::choice:
        if (v.IsString() && is_choice(spec, v.GetString()))
          slot = std::string{v.GetString()};
        else
          problem(spec, shown, origin);
        return;
      case kind::integer_list: {
        std::vector<int64_t> list;
        bool good = v.IsArray() && !v.Empty();
        if (good) {
          for (auto& item : v.GetArray()) {
            if (!item.IsInt64() || !in_range(spec, static_cast<double>(item.GetInt64()))) {
              good = false;
              break;
            }
            list.push_back(item.GetInt64());
          }
        }
        if (good)
          slot = list;
        else
          problem(spec, shown, origin);
        return;
      }
    }
  }

  static bool is_choice(const key_spec& spec, const std::string& s) {
    for (auto& c : spec.choices)
      if (c == s)
        return true;
    return false;
  }

  static std::optional<int64_t> parse_int(const std::string& s) {
    if (s.empty())
      return std::nullopt;
    errno = 0;
    char* end = nullptr;
    auto x = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || end != s.c_str() + s.size())
      return std::nullopt;
    return x;
  }

  void set_from_env(const key_spec& spec, const std::string& text) {
    auto origin = "environment " + env_name(spec);
    auto shown = "\"" + text + "\"";
    auto& slot = values[full_name(spec)];
    switch (spec.type) {
      case kind::integer: {
        auto x = parse_int(text);
        if (x && in_range(spec, static_cast<double>(*x)))
          slot = *x;
        else
          problem(spec, shown, origin);
        return;
      }
      case kind::number: {
        errno = 0;
        char* end = nullptr;
        auto x = std::strtod(text.c_str(), &end);
        if (!text.empty() && errno == 0 && end == text.c_str() + text.size() && std::isfinite(x)
            && in_range(spec, x))
          slot = x;
        else
          problem(spec, shown, origin);
        return;
      }
      case kind::boolean:
        if (text == "true" || text == "1")
          slot = true;
        else if (text == "false" || text == "0")
          slot = false;
        else
          problem(spec, shown, origin);
        return;
      case kind::string:
        slot = text;
        return;
      case kind::choice:
        if (is_choice(spec, text))
          slot = text;
        else
          problem(spec, shown, origin);
        return;
      case kind::integer_list: {
        std::vector<int64_t> list;
        std::stringstream in{text};
        std::string item;
        bool good = !text.empty();
        while (good && std::getline(in, item, ',')) {
          auto x = parse_int(item);
          if (!x || !in_range(spec, static_cast<double>(*x)))
            good = false;
          else
            list.push_back(*x);
        }
        if (good && !list.empty())
          slot = list;
        else
          problem(spec, shown, origin);
        return;
      }
    }
  }

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
    doc.Parse(text.c_str(), text.size());
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
        if (section_name.rfind("$", 0) == 0 || section_name.rfind("_", 0) == 0)
          continue;  // "$comment"-style annotations
        problems.push_back(section_name + " (config file): expected an object of keys");
        continue;
      }
      for (auto& entry : section.value.GetObject()) {
        std::string key = entry.name.GetString();
        if (key.rfind("_", 0) == 0)
          continue;  // "_comment"-style annotations
        auto spec = find(section_name, key);
        if (spec != nullptr) {
          set_from_json(*spec, entry.value, "config file");
          continue;
        }
        std::string why = "unknown key";
        for (auto& secret : secret_specs)
          if (key == secret.mistaken_key)
            why = std::string{"a secret: set it in the environment as "} + secret.env
                  + ", never in the file";
        problems.push_back(section_name + "." + key + " (config file): " + why);
      }
    }
  }

  static const key_spec* find(const std::string& section, const std::string& key) {
    for (auto& spec : schema())
      if (spec.section == section && spec.key == key)
        return &spec;
    return nullptr;
  }

  void load_env(const environment& env) {
    for (auto& [name, text] : env) {
      if (name.rfind("INGESTD_", 0) != 0 || name.find("__") == std::string::npos)
        continue;
      bool known = false;
      for (auto& spec : schema()) {
        if (env_name(spec) == name) {
          set_from_env(spec, text);
          known = true;
          break;
        }
      }
      if (!known)
        problems.push_back(name + " (environment): unknown configuration key");
    }
  }

  config build(const environment& env) const {
    config c;
    for_each_field(c, [&](const char* name, auto& member) {
      using t = std::decay_t<decltype(member)>;
      auto& v = values.at(name);
      if constexpr (std::is_same_v<t, int>)
        member = static_cast<int>(std::get<int64_t>(v));
      else
        member = std::get<t>(v);
    });
    for (auto& secret : secret_specs)
      if (auto i = env.find(secret.env); i != env.end())
        c.secrets.*secret.member = i->second;
    return c;
  }
};

/// Rules that span keys, or need more than a type and a range.
void cross_check(const config& c, std::vector<std::string>& problems) {
  auto require = [&](bool ok, const std::string& text) {
    if (!ok)
      problems.push_back(text);
  };
  require(c.database.url.rfind("postgresql://", 0) == 0 || c.database.url.rfind("postgres://", 0) == 0,
          "database.url = \"" + mask_url_password(c.database.url)
            + "\": expected a postgresql:// URL");
  require(!c.queue.name.empty(), "queue.name = \"\": expected a non-empty queue name");
  require(c.worker.heartbeat_rate_seconds < c.worker.heartbeat_extension_seconds,
          "worker.heartbeat_rate_seconds = " + std::to_string(c.worker.heartbeat_rate_seconds)
            + ": expected less than worker.heartbeat_extension_seconds ("
            + std::to_string(c.worker.heartbeat_extension_seconds)
            + "), or messages become visible between heartbeats");
  if (c.storage.backend == "filesystem")
    require(!c.storage.root.empty(), "storage.root = \"\": expected a directory for the filesystem store");
  if (c.storage.backend == "s3")
    require(!c.storage.bucket.empty(), "storage.bucket = \"\": expected a bucket name for the s3 store");
  if (c.transcription.provider == "document_ai")
    require(!c.transcription.document_ai_endpoint.empty(),
            "transcription.document_ai_endpoint = \"\": expected the processor's :process URL when "
            "transcription.provider is document_ai");
  if (c.extraction.provider == "llm")
    require(c.extraction.llm_base_url.rfind("http://", 0) == 0
              || c.extraction.llm_base_url.rfind("https://", 0) == 0,
            "extraction.llm_base_url = \"" + c.extraction.llm_base_url
              + "\": expected an http:// or https:// URL when extraction.provider is llm");
  if (!c.intake.default_tenant.empty())
    require(uuid::parse(c.intake.default_tenant).has_value(),
            "intake.default_tenant = \"" + c.intake.default_tenant + "\": expected a UUID");
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

result<config> load_config(const std::optional<std::string>& path, const environment& env) {
  loader l;
  if (path)
    l.load_file(*path);
  l.load_env(env);
  if (l.problems.empty()) {
    auto c = l.build(env);
    cross_check(c, l.problems);
    if (l.problems.empty())
      return c;
  }
  std::string text;
  for (auto& p : l.problems)
    text += (text.empty() ? "" : "\n") + p;
  return error::make_permanent("config.invalid", text);
}

std::string mask_url_password(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos)
    return url;
  auto at = url.find('@', scheme + 3);
  if (at == std::string::npos)
    return url;
  auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at)
    return url;
  return url.substr(0, colon + 1) + "****" + url.substr(at);
}

namespace {

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

std::string render(const std::map<std::string, value>& values, const config* secrets_of) {
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w{buf};
  w.SetIndent(' ', 2);
  w.StartObject();
  std::string section;
  for (auto& spec : schema()) {
    if (spec.section != section) {
      if (!section.empty())
        w.EndObject();
      section = spec.section;
      w.Key(section.c_str());
      w.StartObject();
    }
    w.Key(spec.key.c_str());
    put_value(w, values.at(full_name(spec)));
  }
  w.EndObject();
  if (secrets_of != nullptr) {
    w.Key("secrets (environment only)");
    w.StartObject();
    for (auto& secret : secret_specs) {
      w.Key(secret.env);
      w.String((secrets_of->secrets.*secret.member).empty() ? "(unset)" : "(set)");
    }
    w.EndObject();
  }
  w.EndObject();
  return std::string{buf.GetString()} + "\n";
}

} // namespace

std::string default_config_json() {
  loader l;
  return render(l.values, nullptr);
}

std::string config::to_json() const {
  loader l;
  for_each_field(*this, [&](const char* name, const auto& member) {
    using t = std::decay_t<decltype(member)>;
    if constexpr (std::is_same_v<t, int>)
      l.values[name] = int64_t{member};
    else
      l.values[name] = member;
  });
  l.values["database.url"] = mask_url_password(database.url);
  return render(l.values, this);
}

} // namespace ingestd
