// The local provider's pipeline per document: open (limits, type) -> one CPU job per page
// (text layer or OCR, quality, preprocess + second OCR when poor) -> assemble when the last
// page is done. The first error wins; later pages of a failed document are skipped.

#include "adapters/ocr/local_transcriber.hpp"

#include <atomic>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "adapters/ocr/document_source.hpp"
#include "adapters/ocr/page_work.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "adapters/sandbox/decoder.hpp"
#include "messages/error_codes.hpp"
#include "messages/file_type.hpp"

namespace ingestd {

namespace {

using clock_type = std::chrono::steady_clock;

struct doc_state {
  transcription_request request;
  callback<transcription> done;
  local_transcriber_options options;
  cpu_executor* executor = nullptr;
  /// The decoder helpers the pages go to; null: the pages are read in this process.
  std::shared_ptr<sandbox::decoder> decoder;
  clock_type::time_point start;
  clock_type::time_point deadline;
  std::shared_ptr<const std::string> bytes;
  std::shared_ptr<document_source> source;
  std::vector<page_outcome> pages;
  document_metadata metadata;
  std::atomic<int> remaining{0};
  std::atomic<bool> failed{false};
  std::mutex mtx;
  std::optional<error> first_error;

  /// The request's own deadline (its size class's), else the provider's.
  clock_type::duration document_timeout() const {
    if (request.timeout.count() > 0)
      return request.timeout;
    return options.document_timeout;
  }

  page_options page_settings() const {
    return page_options{options.tesseract, options.limits, request.quality_threshold,
                        request.allow_preprocessing, options.defect_report_threshold};
  }

  void fail(error e) {
    std::lock_guard<std::mutex> guard{mtx};
    if (!first_error)
      first_error = std::move(e);
    failed = true;
  }
};

error busy() {
  return error::make_transient(errc::ocr_busy,
                               "no CPU worker was free within the document deadline");
}

void finish(const std::shared_ptr<doc_state>& st) {
  if (st->first_error) {
    st->done(*st->first_error);
    return;
  }
  transcription t;
  t.provider = "tesseract";
  t.page_count = static_cast<int32_t>(st->pages.size());
  t.metadata = std::move(st->metadata);
  t.native_text = !st->pages.empty();
  t.quality_score = 1;
  std::vector<gray_pixels*> kept;
  for (auto& p : st->pages) {
    if (!t.text.empty())
      t.text += "\n\n";
    t.text += p.page.text;
    t.native_text = t.native_text && p.native;
    if (!p.warning.empty())
      t.warnings.push_back(std::move(p.warning));
    t.quality_score = std::min(t.quality_score, p.page.quality_score);
    if (p.preprocessed && p.image.valid()) {
      t.preprocessed = true;
      kept.push_back(&p.image);
    }
    t.pages.push_back(std::move(p.page));
  }
  if (t.pages.empty())
    t.quality_score = 0;
  if (!kept.empty()) {
    // One image per document: the preprocessed pages stacked top to bottom.
    gray_pixels out;
    if (kept.size() == 1) {
      out = std::move(*kept.front());
    } else {
      for (auto* k : kept) {
        out.width = std::max(out.width, k->width);
        out.height += k->height;
      }
      out.pixels.assign(static_cast<size_t>(out.width) * static_cast<size_t>(out.height), '\xff');
      size_t row = 0;
      for (auto* k : kept)
        for (int32_t y = 0; y < k->height; ++y, ++row)
          std::memcpy(out.pixels.data() + row * static_cast<size_t>(out.width),
                      k->pixels.data() + static_cast<size_t>(y) * static_cast<size_t>(k->width),
                      static_cast<size_t>(k->width));
    }
    t.derived_file = encode_gray_png(out);
    t.derived_ext = "png";
  }
  t.duration_ms
      = std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - st->start)
            .count();
  st->done(std::move(t));
}

void page_done(const std::shared_ptr<doc_state>& st) {
  if (st->remaining.fetch_sub(1) == 1)
    finish(st);
}

/// Page `index` where the document's pages are read: a decoder helper, or this process.
result<page_outcome> read_page(doc_state& st, int index) {
  if (!st.decoder)
    return transcribe_page(*st.source, index, st.page_settings(), st.deadline);
  auto a = sandbox::transcribe_page(*st.decoder, *st.bytes, st.request.mime_type, index,
                                    st.page_settings(), st.deadline);
  if (!a)
    return a.error();
  if (a->page_count != static_cast<int>(st.pages.size()))
    return error::make_transient(errc::decode_crashed,
                                 "the decoder helper answered another page count");
  return std::move(a->outcome);
}

void run_page(const std::shared_ptr<doc_state>& st, int index) {
  if (!st->failed) {
    auto r = read_page(*st, index);
    if (r)
      st->pages[static_cast<size_t>(index)] = std::move(*r);
    else
      st->fail(std::move(r.error()));
  }
  page_done(st);
}

void fan_out(const std::shared_ptr<doc_state>& st, int first) {
  int n = static_cast<int>(st->pages.size());
  st->remaining = n - first;
  if (first >= n)
    return finish(st);
  for (int i = first; i < n; ++i) {
    cpu_job job;
    job.deadline = st->deadline;
    job.continues_started_work = true;
    job.run = [st, i] { run_page(st, i); };
    job.expired = [st] {
      st->fail(busy());
      page_done(st);
    };
    st->executor->submit(std::move(job));
  }
}

void open_and_fan_out(const std::shared_ptr<doc_state>& st) {
  // A worker has the document now: its deadline counts from here, not from the wait for one.
  st->deadline = clock_type::now() + st->document_timeout();
  if (st->request.started)
    st->request.started();
  if (st->decoder) {
    // The first page's request opens the document in a helper and answers its page count; the
    // other pages go to helpers of their own, like the in-process path's.
    auto first = sandbox::transcribe_page(*st->decoder, *st->bytes, st->request.mime_type, 0,
                                          st->page_settings(), st->deadline);
    if (!first)
      return st->done(first.error());
    st->pages.resize(static_cast<size_t>(first->page_count));
    st->pages[0] = std::move(first->outcome);
    st->metadata = std::move(first->metadata);
    return fan_out(st, 1);
  }
  result<std::shared_ptr<document_source>> src = error::make_permanent("ocr.internal", "");
  try {
    src = open_document(st->bytes, st->request.mime_type, st->options.limits);
  } catch (const std::bad_alloc&) {
    src = error::make_permanent("ocr.too_large", "out of memory decoding the document");
  } catch (const std::exception& e) {
    src = error::make_permanent("ocr.corrupt_file", std::string{"cannot decode: "} + e.what());
  }
  if (!src) {
    st->done(src.error());
    return;
  }
  st->source = std::move(*src);
  st->pages.resize(static_cast<size_t>(st->source->page_count()));
  st->metadata = st->source->metadata();
  fan_out(st, 0);
}

} // namespace

local_transcriber::local_transcriber(cpu_executor& executor, local_transcriber_options options)
    : executor_(executor), options_(std::move(options)) {}

void local_transcriber::transcribe(transcription_request request, callback<transcription> done) {
  auto st = std::make_shared<doc_state>();
  st->options = options_;
  st->executor = &executor_;
  st->decoder = executor_.decoder();
  st->done = std::move(done);
  st->start = clock_type::now();
  st->bytes = std::make_shared<const std::string>(std::move(request.bytes));
  request.bytes.clear();
  st->request = std::move(request);
  st->deadline = st->start + st->document_timeout();
  cpu_job job;
  job.deadline = st->deadline;
  job.run = [st] { open_and_fan_out(st); };
  job.expired = [st] { st->done(busy()); };
  executor_.submit(std::move(job));
}

local_transcriber_options make_local_transcriber_options(std::string languages,
                                                         size_t max_file_bytes, int max_pages,
                                                         std::chrono::seconds document_timeout,
                                                         std::string other_languages) {
  local_transcriber_options opts;
  opts.tesseract.languages = std::move(languages);
  opts.tesseract.other_languages = std::move(other_languages);
  opts.limits.max_file_bytes = max_file_bytes;
  opts.limits.max_pages = max_pages;
  opts.document_timeout = document_timeout;
  return opts;
}

result<std::string> read_document(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return error::make_permanent("ocr.read_failed", "cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return error::make_permanent("ocr.read_failed", "cannot read " + path);
  return std::move(ss).str();
}

result<transcription> transcribe_file_blocking(const std::string& path,
                                               const local_transcriber_options& options,
                                               double quality_threshold, bool allow_preprocessing,
                                               unsigned threads,
                                               std::shared_ptr<sandbox::decoder> decoder) {
  auto bytes = read_document(path);
  if (!bytes)
    return bytes.error();
  transcription_request req;
  req.bytes = std::move(*bytes);
  if (auto type = detect_file_type(req.bytes))
    req.mime_type = type->mime;
  req.quality_threshold = quality_threshold;
  req.allow_preprocessing = allow_preprocessing;
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  std::promise<result<transcription>> promise;
  auto fut = promise.get_future();
  {
    thread_pool_executor pool{threads, std::move(decoder)};
    local_transcriber provider{pool, options};
    provider.transcribe(std::move(req),
                        [&promise](result<transcription> r) { promise.set_value(std::move(r)); });
    fut.wait();
  }
  return fut.get();
}

} // namespace ingestd
