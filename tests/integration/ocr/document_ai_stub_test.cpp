// Document AI adapter end to end over the real curl engine against document_ai_stub.py on an
// ephemeral loopback port: the request as the service checks it, each response shape of
// the service, and each error's class.

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adapters/http/curl_engine.hpp"
#include "adapters/ocr/document_ai_transcriber.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/ocr/ocr_support.hpp"

extern char** environ;

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

/// Runs the stub for the whole suite; fails the test (never skips) if it cannot start.
class stub_server {
public:
  stub_server() {
    dir_ = test::make_temp_dir("docai_stub");
    auto port_file = dir_ + "/port";
    auto script = test::source_dir() + "/tests/integration/ocr/document_ai_stub.py";
    std::string py = "python3";
    std::vector<std::string> args = {py, script, port_file};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawnp(&pid_, py.c_str(), nullptr, nullptr, argv.data(), environ) != 0) {
      pid_ = -1;
      return;
    }
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in{port_file};
      if (in >> port_)
        return;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(20ms);
    }
  }
  ~stub_server() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  int port() const { return port_; }
  std::string url(const std::string& processor) const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1/projects/p/locations/eu/processors/"
           + processor + ":process";
  }

private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class document_ai_stub_test : public ::testing::Test {
protected:
  static void SetUpTestSuite() { stub_ = new stub_server(); }
  static void TearDownTestSuite() { delete stub_; }

  void SetUp() override {
    ASSERT_GT(stub_->port(), 0)
        << "the Document AI stub (python3 document_ai_stub.py) did not start";
  }

  result<transcription> run(const std::string& processor, const std::string& file,
                            const std::string& token = "test-token-123") {
    document_ai_options opts;
    opts.endpoint = stub_->url(processor);
    opts.access_token = token;
    opts.timeout = 10s;
    document_ai_transcriber t{engine_, opts};
    transcription_request req;
    req.bytes = test::read_binary(test::corpus_dir() + "/" + file);
    req.mime_type = "application/octet-stream";
    auto r = test::transcribe_and_wait(t, std::move(req), 30s);
    if (!r)
      return error::make_transient("test.timeout", "no callback within 30 s");
    return std::move(*r);
  }

  static stub_server* stub_;
  curl_engine engine_;
};

stub_server* document_ai_stub_test::stub_ = nullptr;

} // namespace

TEST_F(document_ai_stub_test, request_carries_document_mime_type_and_token) {
  auto r = run("echo-size", "inv01_en_classic.pdf");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  auto size = test::read_binary(test::corpus_dir() + "/inv01_en_classic.pdf").size();
  EXPECT_EQ(r->text, "application/pdf " + std::to_string(size));
  auto png = run("echo-size", "inv01_en_classic_lowres.png");
  ASSERT_TRUE(png.ok()) << png.error().describe();
  EXPECT_EQ(png->text.rfind("image/png ", 0), 0u);
}

TEST_F(document_ai_stub_test, quality_scores_and_defects) {
  auto r = run("ok", "inv01_en_classic_blur.png");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->provider, "document_ai");
  ASSERT_EQ(r->page_count, 1);
  EXPECT_DOUBLE_EQ(r->quality_score, 0.78);
  ASSERT_EQ(r->pages[0].defects.size(), 2u);
  EXPECT_EQ(r->pages[0].defects[0].type, "glare");
  EXPECT_EQ(r->pages[0].defects[1].type, "blurry");
  EXPECT_EQ(r->pages[0].text, "Invoice INV-1\nTotal 1,234.56\n");
  EXPECT_GE(r->duration_ms, 0);
}

TEST_F(document_ai_stub_test, proto3_traps) {
  auto r = run("traps", "inv03_en_compact_scan.tiff");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  ASSERT_EQ(r->page_count, 2);
  EXPECT_EQ(r->pages[0].number, 1); // pageNumber omitted
  EXPECT_EQ(r->pages[0].text, "Seite 1\n");
  EXPECT_EQ(r->pages[1].number, 2); // pageNumber as a string
  EXPECT_EQ(r->pages[1].text, "Seite 2\n");
  EXPECT_DOUBLE_EQ(r->pages[0].quality_score, 0.9);
  EXPECT_DOUBLE_EQ(r->pages[1].quality_score, 0.0); // qualityScore omitted = 0
  ASSERT_EQ(r->pages[1].defects.size(), 1u);
  EXPECT_EQ(r->pages[1].defects[0].type, "dark");
  EXPECT_DOUBLE_EQ(r->quality_score, 0.0);
}

TEST_F(document_ai_stub_test, legacy_quality_entity) {
  auto r = run("legacy", "inv01_en_classic_blur.png");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_DOUBLE_EQ(r->quality_score, 0.03);
  ASSERT_EQ(r->pages[0].defects.size(), 1u);
  EXPECT_EQ(r->pages[0].defects[0].type, "blurry");
  EXPECT_DOUBLE_EQ(r->pages[0].defects[0].confidence, 0.96);
}

TEST_F(document_ai_stub_test, errors_are_classified) {
  struct expect {
    const char* processor;
    const char* code;
    bool permanent;
  };
  for (const auto& e : std::vector<expect>{{"too-large", "docai.too_large", true},
                                           {"too-many-pages", "docai.too_many_pages", true},
                                           {"imageless", "docai.too_many_pages", true},
                                           {"quota", "docai.http_429", false},
                                           {"unavailable", "docai.http_503", false},
                                           {"unauthenticated", "docai.unauthenticated", true},
                                           {"forbidden", "docai.permission_denied", true},
                                           {"no-such-processor", "docai.http_404", true},
                                           {"garbage", "docai.bad_response", false}}) {
    auto r = run(e.processor, "inv01_en_classic.pdf");
    ASSERT_FALSE(r.ok()) << e.processor;
    EXPECT_EQ(r.error().code, e.code) << e.processor << ": " << r.error().describe();
    EXPECT_EQ(r.error().permanent(), e.permanent) << e.processor;
    if (std::string{e.processor} == "quota") {
      EXPECT_EQ(r.error().retry_after_ms, 3000);
    }
  }
}

TEST_F(document_ai_stub_test, wrong_token_is_permanent_and_not_echoed) {
  auto r = run("ok", "inv01_en_classic.pdf", "wrong-secret-token");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "docai.unauthenticated");
  EXPECT_TRUE(r.error().permanent());
  EXPECT_EQ(r.error().describe().find("wrong-secret-token"), std::string::npos);
}

TEST_F(document_ai_stub_test, unreachable_service_is_transient) {
  document_ai_options opts;
  // Port 9 (discard): nothing listens on it on a loopback test machine.
  opts.endpoint = "http://127.0.0.1:9/v1/projects/p/locations/eu/processors/x:process";
  opts.timeout = 5s;
  document_ai_transcriber t{engine_, opts};
  transcription_request req;
  req.bytes = test::read_binary(test::corpus_dir() + "/inv01_en_classic.pdf");
  auto r = test::transcribe_and_wait(t, std::move(req), 30s);
  ASSERT_TRUE(r.has_value());
  ASSERT_FALSE(r->ok());
  EXPECT_TRUE(r->error().transient()) << r->error().describe();
}
