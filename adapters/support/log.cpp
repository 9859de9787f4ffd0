// Structured log lines on top of spdlog's thread-safe stderr sink.
#include "adapters/support/log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace ingestd::log {

namespace {

std::atomic<bool> json_format{false};
std::atomic<int> min_level{static_cast<int>(level::info)};

// The test seam (see log::capture): checked with one relaxed load per line when no test runs.
std::atomic<bool> capturing{false};
std::mutex captured_mtx;
std::vector<std::string> captured;

std::shared_ptr<spdlog::logger> logger() {
  static auto instance = [] {
    auto l = spdlog::stderr_logger_mt("ingestd");
    l->set_pattern("%v");
    l->set_level(spdlog::level::trace);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return instance;
}

const char* level_name(level lvl) {
  switch (lvl) {
  case level::trace:
    return "trace";
  case level::debug:
    return "debug";
  case level::info:
    return "info";
  case level::warn:
    return "warn";
  case level::error:
    return "error";
  }
  return "info";
}

void append_json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out.push_back(static_cast<char>(c));
      }
    }
  }
  out.push_back('"');
}

std::string timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto secs = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

} // namespace

void setup(std::string_view format, std::string_view lvl) {
  json_format = format == "json";
  for (int i = 0; i <= static_cast<int>(level::error); ++i)
    if (lvl == level_name(static_cast<level>(i)))
      min_level = i;
  logger();
}

bool enabled(level lvl) {
  return static_cast<int>(lvl) >= min_level.load();
}

namespace {

void write_line(level lvl, std::string_view message, const field* context, size_t context_size,
                std::initializer_list<field> fields) {
  std::string line;
  line.reserve(128);
  if (json_format) {
    line += "{\"ts\":\"" + timestamp() + "\",\"level\":\"" + level_name(lvl) + "\",\"msg\":";
    append_json_string(line, message);
    auto add = [&line](const field& f) {
      line.push_back(',');
      append_json_string(line, f.key);
      line.push_back(':');
      if (f.number)
        line += f.value;
      else
        append_json_string(line, f.value);
    };
    std::for_each(context, context + context_size, add);
    std::for_each(fields.begin(), fields.end(), add);
    line.push_back('}');
  } else {
    line += timestamp() + " " + level_name(lvl) + " " + std::string{message};
    auto add = [&line](const field& f) {
      line += " " + std::string{f.key} + "=";
      bool quote = f.value.empty() || f.value.find_first_of(" \"=") != std::string::npos;
      line += quote ? "\"" + f.value + "\"" : f.value;
    };
    std::for_each(context, context + context_size, add);
    std::for_each(fields.begin(), fields.end(), add);
  }
  if (capturing.load(std::memory_order_relaxed)) {
    std::lock_guard g{captured_mtx};
    captured.push_back(std::move(line));
    return;
  }
  logger()->info(line);
}

} // namespace

void write(level lvl, std::string_view message, std::initializer_list<field> fields) {
  if (enabled(lvl))
    write_line(lvl, message, nullptr, 0, fields);
}

void write_with(level lvl, std::string_view message, const std::vector<field>& context,
                std::initializer_list<field> fields) {
  if (enabled(lvl))
    write_line(lvl, message, context.data(), context.size(), fields);
}

capture::capture() {
  std::lock_guard g{captured_mtx};
  captured.clear();
  capturing = true;
}

capture::~capture() {
  std::lock_guard g{captured_mtx};
  capturing = false;
  captured.clear();
}

std::vector<std::string> capture::lines() const {
  std::lock_guard g{captured_mtx};
  return captured;
}

} // namespace ingestd::log
