// Implementation of the OCR test helpers (see ocr_support.hpp).

#include "tests/support/ocr/ocr_support.hpp"

#include <algorithm>
#include <deque>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <rapidjson/document.h>
#include <zlib.h>

#include "tests/support/environment.hpp"

namespace ingestd::test {

std::string corpus_dir() {
  return source_dir() + "/tests/fixtures/corpus";
}

std::string read_binary(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::move(ss).str();
}

std::string blank_png(uint32_t side) {
  std::string rows;
  rows.reserve((static_cast<size_t>(side) + 1) * side);
  for (uint32_t y = 0; y < side; ++y)
    rows.append(1, '\0').append(side, '\xff'); // filter "none", then the row
  auto packed_size = compressBound(static_cast<uLong>(rows.size()));
  std::string packed(packed_size, '\0');
  compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
            reinterpret_cast<const Bytef*>(rows.data()), static_cast<uLong>(rows.size()), 9);
  packed.resize(packed_size);
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  std::string png = "\x89PNG\r\n\x1a\n";
  auto chunk = [&](const std::string& type, const std::string& data) {
    auto body = type + data;
    png += be32(static_cast<uint32_t>(data.size())) + body
           + be32(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()),
                                              static_cast<uInt>(body.size()))));
  };
  // Width, height, 8 bits, grey, deflate, no filter method beyond the standard, no interlace.
  chunk("IHDR", be32(side) + be32(side) + std::string{"\x08\x00\x00\x00\x00", 5});
  chunk("IDAT", packed);
  chunk("IEND", "");
  return png;
}

namespace {

rapidjson::Document parse_file(const std::string& path) {
  auto text = read_binary(path);
  rapidjson::Document d;
  d.Parse(text.data(), text.size());
  if (d.HasParseError() || !d.IsObject())
    throw std::runtime_error("not a JSON object: " + path);
  return d;
}

std::string str(const rapidjson::Value& v, const char* key) {
  auto it = v.FindMember(key);
  return it != v.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

std::vector<char32_t> code_points(const std::string& s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    char32_t cp = len == 1 ? c : c & (0xFF >> (len + 1));
    for (int k = 1; k < len && i + k < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return out;
}

std::string normalise(const std::string& s, bool sort_words) {
  std::vector<std::string> words;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f') {
      if (!cur.empty())
        words.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty())
    words.push_back(cur);
  if (sort_words)
    std::sort(words.begin(), words.end());
  std::string out;
  for (auto& w : words) {
    if (!out.empty())
      out += ' ';
    out += w;
  }
  return out;
}

} // namespace

std::vector<corpus_entry> corpus_manifest() {
  auto d = parse_file(corpus_dir() + "/manifest.json");
  std::vector<corpus_entry> out;
  for (const auto& f : d["files"].GetArray()) {
    corpus_entry e;
    e.file = str(f, "file");
    e.invoice = str(f, "invoice");
    e.kind = str(f, "kind");
    e.mime_type = str(f, "mime_type");
    e.degradation = str(f, "degradation");
    e.expected_error = str(f, "expected_error");
    auto it = f.FindMember("pages");
    e.pages = it != f.MemberEnd() && it->value.IsInt() ? it->value.GetInt() : 0;
    out.push_back(std::move(e));
  }
  return out;
}

std::string truth_text(const std::string& invoice, int pages) {
  auto d = parse_file(corpus_dir() + "/truth/" + invoice + ".json");
  if (pages <= 0 || !d.HasMember("pages") || !d["pages"].IsArray()
      || static_cast<int>(d["pages"].Size()) <= pages)
    return str(d, "text");
  std::string out;
  for (int i = 0; i < pages; ++i) {
    if (!out.empty())
      out += "\n\n";
    out += d["pages"][static_cast<rapidjson::SizeType>(i)].GetString();
  }
  return out;
}

double char_error_rate(const std::string& reference, const std::string& hypothesis,
                       bool order_insensitive) {
  auto r = code_points(normalise(reference, order_insensitive));
  auto h = code_points(normalise(hypothesis, order_insensitive));
  if (r.empty())
    return h.empty() ? 0 : 1;
  std::vector<size_t> prev(h.size() + 1), cur(h.size() + 1);
  for (size_t j = 0; j <= h.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= r.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= h.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r[i - 1] != h[j - 1])});
    std::swap(prev, cur);
  }
  return static_cast<double>(prev[h.size()]) / static_cast<double>(r.size());
}

struct counting_executor::impl {
  std::mutex mtx;
  std::condition_variable cv;
  std::deque<cpu_job> queue;
  bool stopping = false;
  std::vector<std::thread> threads;
};

counting_executor::counting_executor(unsigned threads) : impl_(std::make_unique<impl>()) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i)
    impl_->threads.emplace_back([this] {
      for (;;) {
        cpu_job job;
        {
          std::unique_lock<std::mutex> lock{impl_->mtx};
          impl_->cv.wait(lock, [this] { return impl_->stopping || !impl_->queue.empty(); });
          if (impl_->queue.empty())
            return;
          job = std::move(impl_->queue.front());
          impl_->queue.pop_front();
        }
        if (expire_all_ || (!never_expire_ && std::chrono::steady_clock::now() >= job.deadline)) {
          ++expired_;
          job.expired();
        } else {
          ++ran_;
          job.run();
        }
      }
    });
}

counting_executor::~counting_executor() {
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  for (auto& t : impl_->threads)
    t.join();
}

void counting_executor::submit(cpu_job job) {
  if (!job.run || !job.expired)
    throw std::logic_error("cpu_job needs both run and expired");
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    impl_->queue.push_back(std::move(job));
  }
  impl_->cv.notify_one();
}

std::optional<result<transcription>> transcribe_and_wait(transcriber& t,
                                                         transcription_request request,
                                                         std::chrono::milliseconds timeout) {
  auto promise = std::make_shared<std::promise<result<transcription>>>();
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto fut = promise->get_future();
  t.transcribe(std::move(request), [promise, calls](result<transcription> r) {
    if (calls->fetch_add(1) == 0)
      promise->set_value(std::move(r));
    else
      throw std::logic_error("transcriber called its callback twice");
  });
  if (fut.wait_for(timeout) != std::future_status::ready)
    return std::nullopt;
  return fut.get();
}

} // namespace ingestd::test
