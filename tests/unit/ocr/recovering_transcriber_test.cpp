// Task-specific recovery around a remote provider: a refusal goes to the local provider with a
// warning, other errors stay; a poor result is preprocessed on the CPU pool and sent again, the
// better kept. The providers are scripted; the page images and OpenCV are real.
#include <deque>
#include <mutex>

#include <gtest/gtest.h>

#include "adapters/ocr/recovering_transcriber.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// Answers each call with the next scripted result and remembers what it was sent.
class scripted_transcriber final : public transcriber {
public:
  explicit scripted_transcriber(std::string name) : name_(std::move(name)) {}
  void answer(result<transcription> r) { answers_.push_back(std::move(r)); }
  void transcribe(transcription_request request, callback<transcription> done) override {
    result<transcription> r = error::make_permanent("test.unscripted", "no answer scripted");
    {
      std::lock_guard guard{mtx_};
      mimes_.push_back(request.mime_type);
      if (!answers_.empty()) {
        r = std::move(answers_.front());
        answers_.pop_front();
      }
    }
    done(std::move(r));
  }
  std::string name() const override { return name_; }
  std::vector<std::string> mimes() {
    std::lock_guard guard{mtx_};
    return mimes_;
  }

private:
  std::string name_;
  std::mutex mtx_;
  std::deque<result<transcription>> answers_;
  std::vector<std::string> mimes_;
};

transcription reading(double quality, std::string text) {
  transcription t;
  t.provider = "document_ai";
  t.text = text;
  t.pages.push_back(transcription_page{1, std::move(text), quality, {}});
  t.page_count = 1;
  t.quality_score = quality;
  return t;
}

class recovering_transcriber_test : public ::testing::Test {
protected:
  test::counting_executor cpu_{1};
  std::shared_ptr<scripted_transcriber> remote_
      = std::make_shared<scripted_transcriber>("document_ai");
  std::shared_ptr<scripted_transcriber> local_
      = std::make_shared<scripted_transcriber>("tesseract");
  recovering_transcriber provider_{remote_, local_, cpu_, document_limits{}};

  result<transcription> run(const std::string& file, const std::string& mime) {
    transcription_request req;
    req.bytes = test::read_binary(test::corpus_dir() + "/" + file);
    req.mime_type = mime;
    req.quality_threshold = 0.7;
    auto r = test::transcribe_and_wait(provider_, std::move(req), 120s);
    if (!r)
      return error::make_transient("test.timeout", "no callback");
    return std::move(*r);
  }
};

} // namespace

TEST_F(recovering_transcriber_test,
       a_refused_document_is_transcribed_by_the_local_provider_with_a_warning) {
  for (const char* code : {"docai.too_many_pages", "docai.too_large", "docai.http_400"}) {
    remote_->answer(error::make_permanent(code, "refused"));
    auto t = reading(0.95, "local text");
    t.provider = "tesseract";
    local_->answer(t);
    auto r = run("inv01_en_classic.pdf", "application/pdf");
    ASSERT_TRUE(r.ok()) << code << ": " << r.error().describe();
    EXPECT_EQ(r->provider, "tesseract");
    ASSERT_EQ(r->warnings.size(), 1u);
    EXPECT_NE(r->warnings[0].find(code), std::string::npos) << r->warnings[0];
    EXPECT_NE(r->warnings[0].find("transcribed by tesseract"), std::string::npos) << r->warnings[0];
  }
  EXPECT_EQ(local_->mimes(),
            (std::vector<std::string>{"application/pdf", "application/pdf", "application/pdf"}));
}

TEST_F(recovering_transcriber_test, other_errors_are_not_sent_to_the_local_provider) {
  remote_->answer(error::make_transient("docai.http_503", "unavailable"));
  remote_->answer(error::make_permanent("docai.unauthenticated", "bad token"));
  auto r = run("inv01_en_classic.pdf", "application/pdf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "docai.http_503");
  r = run("inv01_en_classic.pdf", "application/pdf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "docai.unauthenticated");
  EXPECT_TRUE(local_->mimes().empty());
}

TEST_F(recovering_transcriber_test, a_poor_scan_is_preprocessed_on_the_cpu_pool_and_sent_again) {
  remote_->answer(reading(0.4, "blurred"));
  remote_->answer(reading(0.9, "sharp"));
  auto r = run("inv02_de_modern_blur.png", "image/png");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->text, "sharp");
  EXPECT_TRUE(r->preprocessed);
  EXPECT_EQ(r->derived_ext, "png");
  EXPECT_EQ(r->derived_file.substr(1, 3), "PNG");
  EXPECT_EQ(remote_->mimes(), (std::vector<std::string>{"image/png", "image/png"}));
  EXPECT_EQ(cpu_.ran(), 1);
}

TEST_F(recovering_transcriber_test, the_first_reading_is_kept_when_the_second_is_no_better) {
  remote_->answer(reading(0.4, "first"));
  remote_->answer(reading(0.3, "second"));
  auto r = run("inv02_de_modern_blur.png", "image/png");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->text, "first");
  EXPECT_FALSE(r->preprocessed);
}

TEST_F(recovering_transcriber_test, a_good_reading_and_a_text_pdf_are_not_sent_again) {
  remote_->answer(reading(0.95, "good"));
  auto r = run("inv02_de_modern_blur.png", "image/png");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "good");
  // A poor reading of a PDF page with a text layer: nothing for OpenCV to clean.
  remote_->answer(reading(0.4, "poor"));
  r = run("inv01_en_classic.pdf", "application/pdf");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "poor");
  EXPECT_EQ(remote_->mimes().size(), 2u);
}

TEST_F(recovering_transcriber_test, no_cpu_worker_in_time_keeps_the_first_reading) {
  cpu_.expire_everything(true);
  remote_->answer(reading(0.4, "first"));
  auto r = run("inv02_de_modern_blur.png", "image/png");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, "first");
  EXPECT_EQ(cpu_.expired(), 1);
}
