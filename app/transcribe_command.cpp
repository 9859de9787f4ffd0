// `ingestd transcribe FILE [--json]`: one document through the configured transcription provider
// (preprocessing when its quality calls for it), no database or queue. Users reach for it first.
// The document is parsed in decoder helper processes, as in the daemon (adapters/sandbox).
#include <algorithm>
#include <cstdio>
#include <thread>

#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/ocr/transcriber.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/support/blocking_call.hpp"
#include "app/cli.hpp"
#include "app/runtime.hpp"
#include "app/transcribe_command.hpp"
#include "messages/file_type.hpp"

namespace ingestd::cli {

namespace {

void print_human(const std::string& path, const transcription& t) {
  std::printf("file: %s\n", path.c_str());
  std::printf("provider: %s, %d page%s, %s, %s, %lld ms\n", t.provider.c_str(), t.page_count,
              t.page_count == 1 ? "" : "s", t.native_text ? "native PDF text" : "OCR",
              t.preprocessed ? "preprocessed" : "not preprocessed",
              static_cast<long long>(t.duration_ms));
  std::printf("quality: %.2f\n", t.quality_score);
  if (!t.metadata.empty()) {
    // What the file says about itself; control characters shown as spaces (not a terminal's
    // escape sequences from a stranger's file).
    std::string line = "file metadata:";
    for (auto& [name, value] : t.metadata) {
      line.append(" ").append(name).append("=\"");
      for (char c : value)
        line.push_back(static_cast<unsigned char>(c) < 0x20 || c == '\x7f' ? ' ' : c);
      line.append("\"");
    }
    std::printf("%s\n", line.c_str());
  }
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

/// Transcribes `path` with the provider `cfg` names, as the daemon would: an office document
/// through its PDF, pages read in decoder helpers (one per core for the local provider; a remote
/// provider's refusal falls back to it).
result<transcription> transcribe_path(const config& cfg, const std::string& path) {
  auto bytes = read_document(path);
  if (!bytes)
    return bytes.error();
  if (bytes->empty())
    return error::make_permanent("ocr.empty_file", path + " is empty (0 bytes)");
  auto type = detect_file_type(*bytes);
  if (!type)
    return error::make_permanent(
        "ocr.unsupported_type",
        path + " is not a PDF, PNG, JPEG, TIFF, DOCX, XLSX, ODT, ODS, RTF or HTML file");
  auto threads = cfg.transcription.provider == "tesseract"
                     ? std::max(1u, std::thread::hardware_concurrency())
                     : 1u;
  thread_pool_executor pool{threads, std::make_shared<sandbox::helper_pool>(
                                         decoder_pool_options(cfg, static_cast<int>(threads)))};
  auto rt = make_runtime(cfg, pool, runtime_parts{false, false, false, false});
  if (!rt)
    return rt.error();
  auto transcribers = (*rt)->providers->transcribers();
  if (!transcribers)
    return transcribers.error();
  auto ocr = transcribers->at(cfg.transcription.provider);
  double threshold = cfg.transcription.ocr_quality_threshold;
  transcription_request req{std::move(*bytes), std::string{type->mime}, threshold, true};
  // A conversion to PDF has the provider's timeout too.
  auto timeout = cfg.transcription.timeout_seconds * (needs_conversion(type->kind) ? 2 : 1);
  return blocking_call<transcription>(std::chrono::seconds{timeout + 30}, "ocr.timeout",
                                      "the OCR provider",
                                      [&](auto cb) { ocr->transcribe(std::move(req), cb); });
}

} // namespace

int transcribe_argument(const arguments& args, const char* command, transcribed_file& out) {
  if (args.positional.size() != 1) {
    std::fprintf(stderr, "usage: ingestd %s FILE [--json]\n", command);
    return usage;
  }
  for (auto& f : args.flags)
    if (f != "--json") {
      std::fprintf(stderr, "ingestd %s: unknown option %s\n", command, f.c_str());
      return usage;
    }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  out.path = args.positional.front();
  auto t = transcribe_path(*cfg, out.path);
  if (!t) {
    std::fprintf(stderr, "ingestd %s: %s: %s\n", command, out.path.c_str(),
                 t.error().describe().c_str());
    return failure;
  }
  out.cfg = std::move(*cfg);
  out.text = std::move(*t);
  return ok;
}

int transcribe_command(const arguments& args) {
  transcribed_file file;
  if (auto code = transcribe_argument(args, "transcribe", file); code != ok)
    return code;
  if (args.has("--json"))
    std::printf("%s\n", to_json(file.text).c_str());
  else
    print_human(file.path, file.text);
  return ok;
}

} // namespace ingestd::cli
