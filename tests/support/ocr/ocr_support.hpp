// Helpers for the OCR tests and benchmark: the corpus in tests/fixtures/corpus, character error
// rate against ground truth, and small cpu_executor implementations.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "adapters/ocr/transcriber.hpp"
#include "adapters/support/cpu_executor.hpp"

namespace ingestd::test {

/// tests/fixtures/corpus (from INGESTD_SOURCE_DIR, else the source tree this was built from).
std::string corpus_dir();

/// The whole file; throws std::runtime_error naming the path when it cannot be read.
std::string read_binary(const std::string& path);

/// A grey PNG of side x side white pixels, made in memory: a few dozen KB for 7600 that take a
/// decoder past a gigabyte (the decoded page and the OCR's own images of it).
std::string blank_png(uint32_t side);

struct corpus_entry {
  std::string file;    ///< path relative to corpus_dir()
  std::string invoice; ///< "inv01" ... or "" for bad files
  std::string kind;    ///< text_pdf, clean_scan, scanned_pdf, degraded_scan, bad
  std::string mime_type;
  int pages = 0;
  std::string degradation; ///< blur, noise, dark, faint, rotated, lowres or ""
  std::string expected_error;
};

/// manifest.json's entries.
std::vector<corpus_entry> corpus_manifest();

/// The ground-truth text of an invoice (truth/<invoice>.json "text"); with `pages` > 0, only
/// its first `pages` pages (for a scan of page 1 of a longer invoice).
std::string truth_text(const std::string& invoice, int pages = 0);

/// Character error rate: Levenshtein distance over Unicode code points / reference length, after
/// collapsing every whitespace run to one space. With `order_insensitive`, words of both texts
/// are sorted first, so a different but valid reading order of table cells is not counted.
double char_error_rate(const std::string& reference, const std::string& hypothesis,
                       bool order_insensitive);

/// A cpu_executor over N threads that counts what it ran and can be told to expire every job
/// (to test the `expired` path deterministically).
class counting_executor final : public cpu_executor {
public:
  explicit counting_executor(unsigned threads = 2);
  ~counting_executor() override;
  void submit(cpu_job job) override;
  void expire_everything(bool on) { expire_all_ = on; }
  /// Runs every job, however long it waited for a thread: for the deadline inside the work
  /// itself, which a job's wait on a loaded machine must not turn into an expiry.
  void never_expire(bool on) { never_expire_ = on; }
  int ran() const { return ran_; }
  int expired() const { return expired_; }

private:
  struct impl;
  std::unique_ptr<impl> impl_;
  std::atomic<bool> expire_all_{false};
  std::atomic<bool> never_expire_{false};
  std::atomic<int> ran_{0};
  std::atomic<int> expired_{0};
};

/// Runs `t.transcribe` and waits up to `timeout` for the callback (which must come exactly once;
/// a second call fails the test via the returned flag). Returns nullopt on timeout.
std::optional<result<transcription>> transcribe_and_wait(transcriber& t,
                                                         transcription_request request,
                                                         std::chrono::milliseconds timeout);

} // namespace ingestd::test
