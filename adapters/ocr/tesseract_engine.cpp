// Tesseract on the calling (CPU pool) thread: thread_local TessBaseAPIs, one per languages and
// data path recently used; ETEXT_DESC carries the per-document deadline.

#include "adapters/ocr/tesseract_engine.hpp"

#include "messages/error_codes.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include <tesseract/baseapi.h>
#include <tesseract/ocrclass.h>
#include <tesseract/resultiterator.h>

namespace ingestd {

namespace {

struct thread_engine {
  std::unique_ptr<tesseract::TessBaseAPI> api;
  std::string key;
  bool ok = false;
};

/// The engines of this thread, the most recently used first: a page read again in another
/// language (page_work) does not throw away the configured languages' engine. Each holds its
/// languages' models, so only a few are kept.
constexpr size_t engines_per_thread = 3;
thread_local std::vector<thread_engine> engines;

thread_engine& engine_for(const std::string& key, const tesseract_settings& settings) {
  auto it = std::find_if(engines.begin(), engines.end(),
                         [&](const thread_engine& e) { return e.key == key; });
  if (it == engines.end()) {
    if (engines.size() >= engines_per_thread)
      engines.pop_back();
    thread_engine fresh;
    fresh.api = std::make_unique<tesseract::TessBaseAPI>();
    fresh.key = key;
    const char* path = settings.tessdata_path.empty() ? nullptr : settings.tessdata_path.c_str();
    fresh.ok = fresh.api->Init(path, settings.languages.c_str(), tesseract::OEM_LSTM_ONLY) == 0;
    if (fresh.ok)
      fresh.api->SetVariable("debug_file", "/dev/null");
    engines.insert(engines.begin(), std::move(fresh));
  } else if (it != engines.begin()) {
    std::rotate(engines.begin(), it, it + 1);
  }
  return engines.front();
}

struct cancel_state {
  std::chrono::steady_clock::time_point deadline;
  bool fired = false;
};

bool cancel_cb(void* self, int) {
  auto* st = static_cast<cancel_state*>(self);
  if (std::chrono::steady_clock::now() >= st->deadline)
    st->fired = true;
  return st->fired;
}

} // namespace

result<ocr_output> run_tesseract(const cv::Mat& gray, int dpi, const tesseract_settings& settings,
                                 std::chrono::steady_clock::time_point deadline) {
  auto now = std::chrono::steady_clock::now();
  if (now >= deadline)
    return error::make_permanent(errc::ocr_deadline,
                                 "document deadline passed before OCR of a page");
  if (gray.empty() || gray.type() != CV_8UC1)
    return error::make_permanent("ocr.corrupt_file", "page image is empty");
  auto& engine = engine_for(settings.languages + "|" + settings.tessdata_path, settings);
  if (!engine.ok)
    return error::make_permanent("ocr.tesseract_init",
                                 "Tesseract could not load languages \"" + settings.languages
                                     + "\" (install tesseract-ocr-<lang> or set tessdata_path)");
  auto& api = *engine.api;
  api.SetPageSegMode(static_cast<tesseract::PageSegMode>(settings.page_segmentation_mode));
  api.SetImage(gray.data, gray.cols, gray.rows, 1, static_cast<int>(gray.step));
  api.SetSourceResolution(dpi > 0 ? dpi : 300);

  cancel_state cancel{deadline, false};
  tesseract::ETEXT_DESC monitor;
  monitor.cancel = &cancel_cb;
  monitor.cancel_this = &cancel;
  auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
  monitor.set_deadline_msecs(static_cast<int32_t>(std::clamp<int64_t>(left_ms, 1, INT32_MAX)));
  int rc = api.Recognize(&monitor);
  if (cancel.fired || monitor.deadline_exceeded() || std::chrono::steady_clock::now() >= deadline) {
    api.Clear();
    return error::make_permanent(errc::ocr_deadline,
                                 "OCR of a page exceeded the document deadline");
  }
  if (rc != 0) {
    api.Clear();
    return error::make_permanent("ocr.tesseract", "Tesseract failed to recognise the page");
  }
  ocr_output out;
  std::unique_ptr<char[]> text(api.GetUTF8Text());
  if (text)
    out.text = text.get();
  double conf_sum = 0;
  std::unique_ptr<tesseract::ResultIterator> it(api.GetIterator());
  if (it) {
    do {
      std::unique_ptr<char[]> word(it->GetUTF8Text(tesseract::RIL_WORD));
      if (!word)
        continue;
      double c = it->Confidence(tesseract::RIL_WORD);
      std::string_view w{word.get()};
      int left = 0, top = 0, right = 0, bottom = 0;
      if (out.boxes.size() < max_page_words && !w.empty() && w.size() <= max_word_bytes
          && it->BoundingBox(tesseract::RIL_WORD, &left, &top, &right, &bottom))
        out.boxes.push_back(page_word{std::string{w}, static_cast<float>(left) / gray.cols,
                                      static_cast<float>(top) / gray.rows,
                                      static_cast<float>(right) / gray.cols,
                                      static_cast<float>(bottom) / gray.rows});
      ++out.words;
      conf_sum += c;
      out.confident_chars += c / 100.0 * static_cast<double>(w.size());
    } while (it->Next(tesseract::RIL_WORD));
  }
  out.mean_confidence = out.words > 0 ? conf_sum / out.words : 0;
  api.Clear();
  return out;
}

} // namespace ingestd
