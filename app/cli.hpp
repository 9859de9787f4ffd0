// The command line's shared pieces: exit codes, argument handling and the commands' entry
// points (one file per command in app/).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace ingestd::cli {

/// Conventional exit codes.
enum exit_code : int { ok = 0, failure = 1, usage = 2 };

/// Arguments after the command name, with the global options taken out.
struct arguments {
  std::vector<std::string> positional;
  std::vector<std::string> flags; // e.g. "--json"
  /// Every argument after the command name, in order (without --config): for commands whose
  /// options take values ("--tenant T").
  std::vector<std::string> raw;
  std::optional<std::string> config_path;

  bool has(const std::string& flag) const;
};

/// Loads the configuration named by --config (or INGESTD_CONFIG), printing every problem to
/// stderr; nullopt when it is invalid.
std::optional<config> load_or_report(const arguments& args);

/// A --since argument as PostgreSQL reads a timestamptz: an age ("90m", "12h", "7d") becomes the
/// UTC time that long ago; a time must start with a date (YYYY-MM-DD) and hold only the
/// characters of an ISO 8601 time. nullopt when it is neither.
std::optional<std::string> since_time(const std::string& text);

/// `s` cut to at most `n` bytes for a table's column, a cut marked with "~".
std::string clip(std::string s, size_t n);

int migrate_command(const arguments& args);
int queues_command(const arguments& args);
int run_command(const arguments& args);
int config_command(const arguments& args);
int submit_command(const arguments& args);
int status_command(const arguments& args);
int matches_command(const arguments& args);
int transcribe_command(const arguments& args);
int extract_command(const arguments& args);
int nodes_command(const arguments& args);
int drain_command(const arguments& args);
int known_files_command(const arguments& args);
int events_command(const arguments& args);
int cancel_command(const arguments& args);
int retry_command(const arguments& args);
int tenants_command(const arguments& args);
int usage_command(const arguments& args);
int erase_command(const arguments& args);
int batches_command(const arguments& args);

} // namespace ingestd::cli
