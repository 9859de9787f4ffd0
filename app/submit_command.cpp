// `ingestd submit`: hands files (and every file under directories) to intake on a few threads,
// with a progress bar on a terminal, and prints a summary; exits 1 when any file failed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "app/cli.hpp"
#include "app/intake_setup.hpp"
#include "app/runtime.hpp"
#include "intake/intake_service.hpp"
#include "intake/manifest.hpp"
#include "messages/error_codes.hpp"

namespace ingestd::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* submit_usage
    = R"(Usage: ingestd submit [--tenant T] [--uploaded-by U | --source S] [--priority N] [--jobs N]
                      [--batch NAME] FILE|DIR ...
       ingestd submit --manifest FILE.csv [options]

Submits each file (directories are walked recursively, in name order) for ingestion: the
document is stored once per tenant and content, an ingestion is created and enqueued.
A file whose content the tenant already has, ready or in progress, is a duplicate: nothing new
is created and the existing ids are printed.

  --manifest FILE   a load file instead of FILE|DIR: a CSV whose header names the columns, one
                    of them "path" (the file; relative to the manifest's folder); the other
                    columns are kept with each document's ingestion (source_metadata.metadata,
                    shown by GET /v1/ingestions/{id} and on the review desk). A bad row is
                    reported with its line and the others go on; running it again submits
                    duplicates only.

  --batch NAME      submit the files as the tenant's batch NAME (created, or added to when it
                    exists), sealed when this run is done: it finishes (event BATCH_FINISHED
                    with its counts) when every document of it, container children included,
                    is finished; see 'ingestd batches'. Running it again adds only new files.
  --tenant T        tenant UUID (default: intake.default_tenant)
  --uploaded-by U   the uploading user's UUID (default when no --source: the nil UUID, "CLI")
  --source S        the document source's UUID (instead of --uploaded-by)
  --priority N      0..100, lower is served first (default 50); a waiting document gains
                    queue.priority_ageing_per_minute levels per minute, so nothing starves
  --jobs N          files in flight at once (default 4)
  --quiet           only the summary

Exit codes: 0 all submitted (new or duplicate), 1 any failed, 2 usage error.
)";

struct file_entry {
  std::string path;
  std::string error; // set when the path cannot be submitted at all
  /// A manifest row's other columns, and the name it is reported under ("FILE.csv:LINE path").
  std::vector<std::pair<std::string, std::string>> metadata = {};
  std::string label = {};
};

struct tally {
  std::mutex mtx;
  int64_t created = 0, reprocessing = 0, duplicate = 0, failed = 0;
  std::vector<std::pair<std::string, std::string>> failures;
};

std::optional<uuid> parse_id(const std::string& flag, const std::string& text) {
  auto id = uuid::parse(text);
  if (!id)
    std::fprintf(stderr, "ingestd submit: %s '%s' is not a UUID\n", flag.c_str(), text.c_str());
  return id;
}

/// Files in argument order; a directory contributes its regular files sorted by path.
std::vector<file_entry> collect(const std::vector<std::string>& paths) {
  std::vector<file_entry> out;
  for (auto& p : paths) {
    std::error_code ec;
    auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      out.push_back({p, "no such file or directory"});
    } else if (fs::is_directory(st)) {
      std::vector<std::string> files;
      for (auto it
           = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec))
          files.push_back(it->path().string());
      if (ec)
        out.push_back({p, "cannot read the directory: " + ec.message()});
      std::sort(files.begin(), files.end());
      for (auto& f : files)
        out.push_back({f, {}});
    } else if (fs::is_regular_file(st)) {
      out.push_back({p, {}});
    } else {
      out.push_back({p, "not a regular file"});
    }
  }
  return out;
}

result<std::string> read_file(const std::string& path, size_t max_bytes);

/// A manifest's rows as files to submit; an error of the whole manifest is printed.
std::optional<std::vector<file_entry>> manifest_entries(const std::string& manifest) {
  manifest_limits limits;
  auto text = read_file(manifest, limits.max_bytes);
  if (!text) {
    std::fprintf(stderr, "ingestd submit: --manifest %s: %s\n", manifest.c_str(),
                 text.error().describe().c_str());
    return std::nullopt;
  }
  auto rows = parse_manifest(*text, limits);
  if (!rows) {
    std::fprintf(stderr, "ingestd submit: --manifest %s: %s\n", manifest.c_str(),
                 rows.error().message.c_str());
    return std::nullopt;
  }
  auto folder = fs::path{manifest}.parent_path();
  std::vector<file_entry> out;
  out.reserve(rows->size());
  for (auto& row : *rows) {
    file_entry e;
    e.label = manifest + ":" + std::to_string(row.line) + (row.path.empty() ? "" : " ") + row.path;
    e.error = row.error;
    e.metadata = std::move(row.metadata);
    if (e.error.empty()) {
      fs::path p{row.path};
      e.path = (p.is_absolute() ? p : folder / p).string();
      std::error_code ec;
      if (!fs::is_regular_file(e.path, ec))
        e.error = "no such file: " + e.path;
    }
    out.push_back(std::move(e));
  }
  return out;
}

result<std::string> read_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec)
    return error::make_permanent("intake.unreadable", ec.message());
  if (size > max_bytes) // refused before reading it
    return error::make_permanent(errc::intake_too_large, "the file has " + std::to_string(size)
                                                             + " bytes; the limit is "
                                                             + std::to_string(max_bytes));
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return error::make_permanent("intake.unreadable", "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof())
    return error::make_permanent("intake.unreadable", "read error");
  return ss.str();
}

void draw_bar(size_t done, size_t total, const tally& t) {
  constexpr int width = 30;
  int filled = total == 0 ? width : static_cast<int>(width * done / total);
  std::string bar(filled, '#');
  bar.resize(width, ' ');
  std::fprintf(stderr, "\r[%s] %zu/%zu  new %lld  duplicate %lld  failed %lld ", bar.c_str(), done,
               total, static_cast<long long>(t.created) + t.reprocessing,
               static_cast<long long>(t.duplicate), static_cast<long long>(t.failed));
  std::fflush(stderr);
}

} // namespace

int submit_command(const arguments& args) {
  std::optional<uuid> tenant, uploaded_by, source;
  std::vector<std::string> paths;
  std::string manifest;
  std::string batch_name;
  int jobs = 4;
  int32_t priority = 50;
  bool quiet = false;
  auto& raw = args.raw;
  for (size_t i = 0; i < raw.size(); ++i) {
    auto& a = raw[i];
    auto value = [&](std::string& out) {
      if (auto eq = a.find('='); eq != std::string::npos) {
        out = a.substr(eq + 1);
        return true;
      }
      if (i + 1 >= raw.size()) {
        std::fprintf(stderr, "ingestd submit: %s needs a value\n", a.c_str());
        return false;
      }
      out = raw[++i];
      return true;
    };
    auto is
        = [&](const char* name) { return a == name || a.rfind(std::string{name} + "=", 0) == 0; };
    std::string v;
    if (a == "-h" || a == "--help") {
      std::fputs(submit_usage, stdout);
      return ok;
    } else if (is("--tenant")) {
      if (!value(v) || !(tenant = parse_id("--tenant", v)))
        return usage;
    } else if (is("--uploaded-by")) {
      if (!value(v) || !(uploaded_by = parse_id("--uploaded-by", v)))
        return usage;
    } else if (is("--source")) {
      if (!value(v) || !(source = parse_id("--source", v)))
        return usage;
    } else if (is("--priority")) {
      if (!value(v))
        return usage;
      auto p = parse_priority(v);
      if (!p) {
        std::fprintf(
            stderr,
            "ingestd submit: --priority must be a whole number 0..100 (lower first), not '%s'\n",
            v.c_str());
        return usage;
      }
      priority = *p;
    } else if (is("--jobs")) {
      if (!value(v))
        return usage;
      jobs = std::atoi(v.c_str());
      if (jobs < 1 || jobs > 256) {
        std::fprintf(stderr, "ingestd submit: --jobs must be 1..256\n");
        return usage;
      }
    } else if (is("--manifest")) {
      if (!value(manifest))
        return usage;
    } else if (is("--batch")) {
      if (!value(batch_name))
        return usage;
      if (!valid_batch_name(batch_name)) {
        std::fputs("ingestd submit: --batch must be 1 to 200 characters of printable text\n",
                   stderr);
        return usage;
      }
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "ingestd submit: unknown option %s\n%s", a.c_str(), submit_usage);
      return usage;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty() == manifest.empty()) {
    if (!manifest.empty())
      std::fputs("ingestd submit: give FILE|DIR or --manifest, not both\n", stderr);
    std::fputs(submit_usage, stderr);
    return usage;
  }
  if (uploaded_by && source) {
    std::fprintf(stderr, "ingestd submit: give --uploaded-by or --source, not both\n");
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  if (!tenant) {
    tenant = uuid::parse(cfg->intake.default_tenant);
    if (!tenant) {
      std::fprintf(stderr, "ingestd submit: no --tenant and intake.default_tenant is empty\n");
      return usage;
    }
  }
  intake_source src;
  if (source)
    src.doc_source_id = source;
  else
    src.uploaded_by = uploaded_by.value_or(uuid{});

  thread_pool_executor cpu{1};
  auto rt = make_runtime(*cfg, cpu, runtime_parts{false, true, true});
  if (!rt) {
    std::fprintf(stderr, "ingestd submit: %s\n", rt.error().describe().c_str());
    return failure;
  }
  // The messages are written with the rows, to queues that must exist: a missing one is named.
  for (auto& spec : configured_queues(*cfg))
    if (auto q = (*rt)->open_queue(spec); !q) {
      std::fprintf(stderr, "ingestd submit: %s\n", q.error().describe().c_str());
      return failure;
    }
  // With size classes, a document's pages are counted in a decoder helper.
  std::shared_ptr<sandbox::decoder> counter;
  if (cfg->classes.enabled)
    counter = std::make_shared<sandbox::helper_pool>(decoder_pool_options(*cfg, 1));
  intake_service intake{
      std::make_shared<pg_intake_repository>(cfg->database.url, cfg->queue.backend == "sqs"),
      (*rt)->storage, intake_options_of(*cfg, counter)};

  std::vector<file_entry> files;
  if (manifest.empty()) {
    files = collect(paths);
  } else if (auto rows = manifest_entries(manifest)) {
    files = std::move(*rows);
  } else {
    return failure;
  }
  std::optional<batch_info> batch;
  if (!batch_name.empty()) {
    auto opened = intake.open_batch(*tenant, batch_name);
    if (!opened) {
      std::fprintf(stderr, "ingestd submit: --batch %s: %s\n", batch_name.c_str(),
                   opened.error().describe().c_str());
      return failure;
    }
    batch = std::move(*opened);
  }
  bool tty = ::isatty(STDERR_FILENO) == 1 && !quiet;
  tally t;
  std::atomic<size_t> next{0}, done{0};
  auto started = std::chrono::steady_clock::now();
  auto report = [&](const std::string& path, const result<intake_outcome>& r) {
    std::lock_guard guard{t.mtx};
    if (!r) {
      ++t.failed;
      t.failures.emplace_back(path, r.error().describe());
    } else {
      switch (r->status) {
      case intake_status::created:
        ++t.created;
        break;
      case intake_status::reprocessing:
        ++t.reprocessing;
        break;
      case intake_status::duplicate:
        ++t.duplicate;
        break;
      }
    }
    auto n = ++done;
    if (tty) {
      draw_bar(n, files.size(), t);
    } else if (!quiet) {
      if (r)
        std::printf("%-12s %s document=%s ingestion=%s\n",
                    std::string{to_string(r->status)}.c_str(), path.c_str(),
                    r->document_id.str().c_str(), r->ingestion_id.str().c_str());
      else
        std::printf("%-12s %s %s\n", "failed", path.c_str(), r.error().describe().c_str());
      std::fflush(stdout);
    }
  };
  auto work = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      auto& f = files[i];
      const auto& name = f.label.empty() ? f.path : f.label;
      if (!f.error.empty()) {
        report(name, error::make_permanent(f.label.empty() ? "intake.not_found" : "intake.manifest",
                                           f.error));
        continue;
      }
      auto bytes = read_file(f.path, intake.options().max_bytes);
      if (!bytes) {
        report(name, bytes.error());
        continue;
      }
      intake_item item;
      item.tenant_id = *tenant;
      item.source = src;
      item.bytes = std::move(*bytes);
      item.name = fs::path{f.path}.filename().string();
      item.channel = "cli";
      item.priority = priority;
      item.metadata = f.metadata;
      if (batch)
        item.batch_id = batch->id;
      report(name, intake.submit(item));
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::min<int>(jobs, static_cast<int>(std::max<size_t>(files.size(), 1))); ++i)
    threads.emplace_back(work);
  for (auto& th : threads)
    th.join();
  if (tty)
    std::fputc('\n', stderr);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "submitted %zu file(s) in %.2f s (%.1f/s): %lld new, %lld reprocessing, %lld duplicate, "
      "%lld failed\n",
      files.size(), secs, secs > 0 ? files.size() / secs : 0.0, static_cast<long long>(t.created),
      static_cast<long long>(t.reprocessing), static_cast<long long>(t.duplicate),
      static_cast<long long>(t.failed));
  for (auto& [path, why] : t.failures)
    std::printf("failed: %s: %s\n", path.c_str(), why.c_str());
  if (batch) {
    // Sealed even when some files failed: what was taken in is the batch.
    auto sealed = intake.seal_batch(*tenant, batch->id);
    if (!sealed || !*sealed) {
      std::fprintf(stderr, "ingestd submit: batch %s could not be sealed: %s\n",
                   batch->id.str().c_str(),
                   sealed ? "it is gone" : sealed.error().describe().c_str());
      return failure;
    }
    const auto& b = **sealed;
    std::printf("batch %s id=%s %s: %lld document(s), %lld in progress, %lld duplicate(s)\n",
                b.name.c_str(), b.id.str().c_str(), b.state.c_str(),
                static_cast<long long>(b.documents), static_cast<long long>(b.in_progress),
                static_cast<long long>(b.duplicates));
  }
  return t.failed > 0 ? failure : ok;
}

} // namespace ingestd::cli
