// `ingestd transcribe FILE [--json]`: one document through the configured transcription provider
// (preprocessing when its quality calls for it), no database or queue. Users reach for it first.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"
#include "messages/file_type.hpp"

namespace ingestd::cli {

namespace {

result<std::string> read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return error::make_permanent("ocr.read_failed", "cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return error::make_permanent("ocr.read_failed", "cannot read " + path);
  return std::move(ss).str();
}

void print_human(const std::string& path, const transcription& t) {
  std::printf("file: %s\n", path.c_str());
  std::printf("provider: %s, %d page%s, %s, %s, %lld ms\n", t.provider.c_str(), t.page_count,
              t.page_count == 1 ? "" : "s", t.native_text ? "native PDF text" : "OCR",
              t.preprocessed ? "preprocessed" : "not preprocessed",
              static_cast<long long>(t.duration_ms));
  std::printf("quality: %.2f\n", t.quality_score);
  for (auto& p : t.pages) {
    std::printf("page %d: quality %.2f, defects: ", p.number, p.quality_score);
    if (p.defects.empty())
      std::printf("none");
    for (size_t i = 0; i < p.defects.size(); ++i)
      std::printf("%s%s %.2f", i ? ", " : "", p.defects[i].type.c_str(), p.defects[i].confidence);
    std::printf("\n");
  }
  for (auto& p : t.pages) {
    std::printf("\n--- page %d ---\n%s", p.number, p.text.c_str());
    if (p.text.empty() || p.text.back() != '\n')
      std::printf("\n");
  }
}

} // namespace

/// Shared with `extract`: transcribes `path` with the provider `cfg` names.
result<transcription> transcribe_path(const config& cfg, const std::string& path) {
  double threshold = cfg.transcription.ocr_quality_threshold;
  if (cfg.transcription.provider == "tesseract") {
    local_transcriber_options opts;
    opts.tesseract.languages = cfg.transcription.languages;
    opts.limits.max_file_bytes = static_cast<size_t>(cfg.transcription.max_file_bytes);
    opts.limits.max_pages = cfg.transcription.max_pages;
    opts.document_timeout = std::chrono::seconds{cfg.transcription.timeout_seconds};
    return transcribe_file_blocking(path, opts, threshold, true);
  }
  auto bytes = read_file(path);
  if (!bytes)
    return bytes.error();
  if (bytes->empty())
    return error::make_permanent("ocr.empty_file", path + " is empty (0 bytes)");
  auto type = detect_file_type(*bytes);
  if (!type)
    return error::make_permanent("ocr.unsupported_type",
                                 path + " is not a PDF, PNG, JPEG or TIFF file");
  thread_pool_executor pool{1};
  auto rt = make_runtime(cfg, pool, runtime_parts{false, false, false});
  if (!rt)
    return rt.error();
  transcription_request req{std::move(*bytes), std::string{type->mime}, threshold, true};
  auto deadline = std::chrono::seconds{cfg.transcription.timeout_seconds + 30};
  return blocking_call<transcription>(deadline, "ocr.timeout", "the OCR provider",
                                      [&](auto cb) { (*rt)->ports.ocr->transcribe(std::move(req), cb); });
}

int transcribe_command(const arguments& args) {
  if (args.positional.size() != 1) {
    std::fprintf(stderr, "usage: ingestd transcribe FILE [--json]\n");
    return usage;
  }
  for (auto& f : args.flags)
    if (f != "--json") {
      std::fprintf(stderr, "ingestd transcribe: unknown option %s\n", f.c_str());
      return usage;
    }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  const auto& path = args.positional.front();
  auto t = transcribe_path(*cfg, path);
  if (!t) {
    std::fprintf(stderr, "ingestd transcribe: %s: %s\n", path.c_str(), t.error().describe().c_str());
    return failure;
  }
  if (args.has("--json"))
    std::printf("%s\n", to_json(*t).c_str());
  else
    print_human(path, *t);
  return ok;
}

} // namespace ingestd::cli
