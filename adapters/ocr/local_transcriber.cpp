// The local provider's pipeline per document: open (limits, type) -> one CPU job per page
// (text layer or OCR, quality, preprocess + second OCR when poor) -> assemble when the last
// page is done. The first error wins; later pages of a failed document are skipped.

#include "adapters/ocr/local_transcriber.hpp"

#include <atomic>
#include <fstream>
#include <future>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "adapters/ocr/document_source.hpp"
#include "adapters/ocr/image_quality.hpp"
#include "adapters/ocr/preprocess.hpp"
#include "adapters/ocr/tesseract_engine.hpp"
#include "adapters/ocr/thread_pool_executor.hpp"
#include "messages/error_codes.hpp"
#include "messages/file_type.hpp"

namespace ingestd {

namespace {

using clock_type = std::chrono::steady_clock;

struct page_result {
  transcription_page page;
  bool native = false;
  /// Why the page was kept with its text layer only (its rendering or OCR failed).
  std::string warning;
  bool preprocessed = false;
  cv::Mat preprocessed_image;
};

struct doc_state {
  transcription_request request;
  callback<transcription> done;
  local_transcriber_options options;
  cpu_executor* executor = nullptr;
  clock_type::time_point start;
  clock_type::time_point deadline;
  std::shared_ptr<const std::string> bytes;
  std::shared_ptr<document_source> source;
  std::vector<page_result> pages;
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

std::string trim_text(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\f'))
    s.pop_back();
  return s;
}

void finish(const std::shared_ptr<doc_state>& st) {
  if (st->first_error) {
    st->done(*st->first_error);
    return;
  }
  transcription t;
  t.provider = "tesseract";
  t.page_count = static_cast<int32_t>(st->pages.size());
  t.native_text = !st->pages.empty();
  t.quality_score = 1;
  std::vector<cv::Mat> kept;
  for (auto& p : st->pages) {
    if (!t.text.empty())
      t.text += "\n\n";
    t.text += p.page.text;
    t.native_text = t.native_text && p.native;
    if (!p.warning.empty())
      t.warnings.push_back(std::move(p.warning));
    t.quality_score = std::min(t.quality_score, p.page.quality_score);
    if (p.preprocessed) {
      t.preprocessed = true;
      kept.push_back(p.preprocessed_image);
    }
    t.pages.push_back(std::move(p.page));
  }
  if (t.pages.empty())
    t.quality_score = 0;
  if (!kept.empty()) {
    // One image per document: the preprocessed pages stacked top to bottom.
    cv::Mat out = kept.front();
    if (kept.size() > 1) {
      int w = 0, h = 0;
      for (auto& k : kept) {
        w = std::max(w, k.cols);
        h += k.rows;
      }
      out = cv::Mat(h, w, CV_8UC1, cv::Scalar(255));
      int y = 0;
      for (auto& k : kept) {
        k.copyTo(out(cv::Rect(0, y, k.cols, k.rows)));
        y += k.rows;
      }
    }
    t.preprocessed_image = encode_png(out);
    t.preprocessed_ext = "png";
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

result<page_result> process_page(doc_state& st, int index) {
  auto content = st.source->page(index);
  if (!content)
    return content.error();
  page_result r;
  r.page.number = index + 1;
  if (content->native) {
    r.native = true;
    r.page.text = std::move(content->text);
    r.page.quality_score = 1;
    return r;
  }
  if (clock_type::now() >= st.deadline)
    return error::make_permanent(errc::ocr_deadline, "document deadline passed while decoding");
  const cv::Mat& gray = content->gray;
  auto measures = measure_image(gray);
  auto first = run_tesseract(gray, content->dpi, st.options.tesseract, st.deadline);
  if (!first)
    return first.error();
  double img = image_score(measures);
  r.page.quality_score = page_score(img, first->mean_confidence);
  r.page.defects = find_defects(measures, st.options.defect_report_threshold);
  r.page.text = trim_text(std::move(first->text));
  if (r.page.quality_score >= st.request.quality_threshold || !st.request.allow_preprocessing)
    return r;
  auto pre = preprocess_page(gray, content->dpi, measures);
  if (pre.steps.empty()) // nothing to fix: a second pass would read the same pixels
    return r;
  auto second = run_tesseract(pre.image, pre.dpi, st.options.tesseract, st.deadline);
  if (!second)
    return second.error();
  // Keep the run that is sure of more characters: a cleaner image gives more confident words;
  // a binarisation that erased text gives fewer.
  if (second->confident_chars > first->confident_chars) {
    auto pre_measures = measure_image(pre.image);
    r.page.quality_score = page_score(image_score(pre_measures), second->mean_confidence);
    r.page.defects = find_defects(pre_measures, st.options.defect_report_threshold);
    r.page.text = trim_text(std::move(second->text));
    r.preprocessed = true;
    r.preprocessed_image = pre.image;
  }
  return r;
}

/// Task-specific recovery: a PDF page whose rendering or OCR failed is kept with its text layer
/// alone (no OCR), with a warning. The document's deadline and a busy node are not the page's
/// fault and stay errors; so does a page without a text layer to fall back on.
result<page_result> text_layer_instead(doc_state& st, int index, error failed) {
  if (failed.code == errc::ocr_deadline || failed.code == errc::ocr_busy
      || st.source->kind() != file_kind::pdf)
    return failed;
  result<std::string> layer = error::make_permanent("ocr.internal", "");
  try {
    layer = st.source->text_layer(index);
  } catch (const std::exception& e) {
    layer = error::make_permanent("ocr.corrupt_file", e.what());
  }
  if (!layer)
    return failed;
  page_result r;
  r.page.number = index + 1;
  r.page.text = std::move(*layer);
  r.native = true;
  // Nothing vouches for what the page shows beyond its text layer.
  r.page.quality_score = r.page.text.empty() ? 0 : 0.5;
  r.warning = "page " + std::to_string(index + 1) + ": " + failed.describe()
              + "; kept its text layer only";
  return r;
}

void run_page(const std::shared_ptr<doc_state>& st, int index) {
  if (!st->failed) {
    result<page_result> r = error::make_permanent("ocr.internal", "page not processed");
    try {
      r = process_page(*st, index);
    } catch (const cv::Exception& e) {
      r = error::make_permanent("ocr.corrupt_file",
                                std::string{"image processing failed: "} + e.what());
    } catch (const std::bad_alloc&) {
      r = error::make_permanent("ocr.too_large", "out of memory processing a page");
    } catch (const std::exception& e) {
      r = error::make_permanent("ocr.internal", std::string{"page processing failed: "} + e.what());
    }
    if (!r)
      r = text_layer_instead(*st, index, std::move(r.error()));
    if (r)
      st->pages[static_cast<size_t>(index)] = std::move(*r);
    else
      st->fail(std::move(r.error()));
  }
  page_done(st);
}

void open_and_fan_out(const std::shared_ptr<doc_state>& st) {
  // A worker has the document now: its deadline counts from here, not from the wait for one.
  st->deadline = clock_type::now() + st->document_timeout();
  if (st->request.started)
    st->request.started();
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
  int n = st->source->page_count();
  st->pages.resize(static_cast<size_t>(n));
  st->remaining = n;
  for (int i = 0; i < n; ++i) {
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

} // namespace

local_transcriber::local_transcriber(cpu_executor& executor, local_transcriber_options options)
    : executor_(executor), options_(std::move(options)) {}

void local_transcriber::transcribe(transcription_request request, callback<transcription> done) {
  auto st = std::make_shared<doc_state>();
  st->options = options_;
  st->executor = &executor_;
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
                                                         std::chrono::seconds document_timeout) {
  local_transcriber_options opts;
  opts.tesseract.languages = std::move(languages);
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
                                               unsigned threads) {
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
    thread_pool_executor pool{threads};
    local_transcriber provider{pool, options};
    provider.transcribe(std::move(req),
                        [&promise](result<transcription> r) { promise.set_value(std::move(r)); });
    fut.wait();
  }
  return fut.get();
}

} // namespace ingestd
