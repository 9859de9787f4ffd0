// ingestd's command line: parses the command and its options and hands over to the command.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <functional>

#include "adapters/support/log.hpp"
#include "app/cli.hpp"

#ifndef INGESTD_VERSION
#  define INGESTD_VERSION "unknown"
#endif

namespace ingestd::cli {

namespace {

constexpr const char* usage_text = R"(ingestd - document-ingestion worker daemon

Usage: ingestd <command> [options]

Commands:
  run [--stages LIST]  run the worker until SIGTERM/SIGINT: every enabled stage, or the
                      comma-separated LIST of them (e.g. --stages match)
  submit FILE|DIR...  submit documents for ingestion (see 'ingestd submit --help')
  status [--json]     counts by status, failures, review backlog, matching, queue depth
  cancel INGESTION_ID cancel a queued or running ingestion (see 'ingestd cancel --help')
  matches DOCUMENT_ID a document's match edges and its cluster's members [--json]
  migrate [--force]   apply the database migrations (a no-op when current; refuses while a
                      live node is older than a migration needs)
  queues create       create every configured queue and its dead-letter queue (idempotent)
  config check        validate the configuration and print it, secrets masked
  config defaults     print the built-in defaults (the content of config/ingestd.json)
  transcribe FILE     transcribe one document with the configured provider and print the
                      text, quality score and defects per page (--json: the whole result)
  extract FILE        transcribe and extract one document and print the fields, confidence,
                      missing fields and the quality gate's verdict (--json: the whole result)
  known-files import FILE | add FILE... | count
                      the known-file hash set (deNIST): documents whose hash it holds are
                      skipped, not processed (see 'ingestd known-files --help')
  events [--follow] [--json]
                      print the status event stream (see 'ingestd events --help')
  version             print the version
  nodes [--json]      the cluster's nodes: state, in flight, done in the last minute, last seen
  drain NODE_ID|--all ask a node (or all) to drain and exit 0, as on SIGTERM [--wait]
  help                print this help

Options:
  --config FILE       configuration file (default: $INGESTD_CONFIG, else built-in defaults)
  -h, --help          print this help

Every configuration key can be overridden from the environment as INGESTD_<SECTION>__<KEY>,
e.g. INGESTD_WORKER__MAX_IN_FLIGHT=5000. Secrets come from the environment only:
INGESTD_LLM_API_KEY, INGESTD_DOCUMENT_AI_TOKEN, INGESTD_NOTIFY_WEBHOOK_URL,
INGESTD_INTAKE_TOKEN, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.

Exit codes: 0 success, 1 runtime or configuration error, 2 usage error.
)";

int version_command(const arguments&) {
  std::printf("ingestd %s\n", INGESTD_VERSION);
  return ok;
}

} // namespace

bool arguments::has(const std::string& flag) const {
  for (auto& f : flags)
    if (f == flag)
      return true;
  return false;
}

std::optional<config> load_or_report(const arguments& args) {
  auto env = process_environment();
  auto path = args.config_path;
  if (!path)
    if (auto i = env.find("INGESTD_CONFIG"); i != env.end() && !i->second.empty())
      path = i->second;
  auto cfg = load_config(path, env);
  if (!cfg) {
    std::fprintf(stderr, "ingestd: invalid configuration%s%s:\n%s\n", path ? " in " : "",
                 path ? path->c_str() : "", cfg.error().message.c_str());
    return std::nullopt;
  }
  log::setup(cfg->log.format, cfg->log.level);
  return std::move(cfg.value());
}

int main(int argc, char** argv) {
  using command = std::function<int(const arguments&)>;
  const std::map<std::string, command> commands{
    {"run", run_command},
    {"migrate", migrate_command},
    {"queues", queues_command},
    {"config", config_command},
    {"submit", submit_command},
    {"status", status_command},
    {"matches", matches_command},
    {"transcribe", transcribe_command},
    {"extract", extract_command},
    {"known-files", known_files_command},
    {"events", events_command},
    {"version", version_command},
    {"nodes", nodes_command},
    {"drain", drain_command},
    {"cancel", cancel_command},
  };
  arguments args;
  std::string name;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-h" || a == "--help") && !name.empty()) {
      args.raw.push_back(a);  // the command's own help
      continue;
    }
    if (a == "-h" || a == "--help" || (name.empty() && a == "help")) {
      std::fputs(usage_text, stdout);
      return ok;
    }
    if (a == "--version") {
      name = "version";
    } else if (a == "--config" || a.rfind("--config=", 0) == 0) {
      if (a == "--config") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "ingestd: --config needs a file name\n");
          return usage;
        }
        args.config_path = argv[++i];
      } else {
        args.config_path = a.substr(9);
      }
    } else if (a.rfind("--", 0) == 0) {
      args.flags.push_back(a);
      if (!name.empty())
        args.raw.push_back(a);
    } else if (name.empty()) {
      name = a;
    } else {
      args.positional.push_back(a);
      args.raw.push_back(a);
    }
  }
  if (name.empty()) {
    std::fputs(usage_text, stderr);
    return usage;
  }
  auto i = commands.find(name);
  if (i == commands.end()) {
    std::fprintf(stderr, "ingestd: unknown command '%s' (see 'ingestd --help')\n", name.c_str());
    return usage;
  }
  return i->second(args);
}

} // namespace ingestd::cli

int main(int argc, char** argv) {
  // Tesseract parallelises inside a page with OpenMP, which only fights the CPU pool's own
  // workers (one page per core): a single OpenMP thread is 2-3x faster overall. libgomp reads the
  // variable when it loads, so set it and start again.
  if (std::getenv("OMP_THREAD_LIMIT") == nullptr) {
    ::setenv("OMP_THREAD_LIMIT", "1", 1);
    // The resolved path, not /proc/self/exe, so the process keeps its name ("ingestd", not "exe").
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    ::execv(ec ? "/proc/self/exe" : self.c_str(), argv);
    // If the exec fails, carry on with OpenMP's defaults.
  }
  // A peer that closes a connection must not kill the daemon; writes report EPIPE instead.
  std::signal(SIGPIPE, SIG_IGN);
  return ingestd::cli::main(argc, argv);
}
