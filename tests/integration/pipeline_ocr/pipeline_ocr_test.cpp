// The local OCR provider inside the pipeline: a node embedded with its CPU pool actor as the OCR
// executor, real Tesseract/OpenCV/poppler, the ingest stage over the PostgreSQL queue and
// repositories and filesystem storage, over corpus scans including a degraded one that gets
// preprocessed.
#include <filesystem>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include "actors/cpu_pool.hpp"
#include "adapters/extraction/local_extractor.hpp"
#include "adapters/ocr/local_transcriber.hpp"
#include "adapters/ocr/transcription_json.hpp"
#include "adapters/storage/object_store.hpp"
#include "tests/integration/pipeline_llm/pipeline_harness.hpp"

using namespace ingestd;
using namespace std::chrono_literals;

namespace {

class pipeline_ocr : public ::testing::Test {
protected:
  pipeline_ocr() {
    p.ports().ocr = std::make_shared<local_transcriber>(p.cpu());
    p.ports().extract = std::make_shared<local_extractor>();
  }

  // The node stops before the executor the OCR provider uses goes.
  ~pipeline_ocr() override { p.stop(); }

  void start() { p.start(); }

  std::string stored(const std::string& key) {
    return test::read_binary(p.storage_root() + "/" + key);
  }

  test::pipeline p;
};

TEST_F(pipeline_ocr, scans_complete_with_transcription_and_preprocessed_image_stored) {
  p.settings().step_timeout = 300s;
  start();
  struct doc {
    std::string file, mime, invoice;
    bool degraded;
    uuid id;
  };
  std::vector<doc> docs{{"inv01_en_classic_scan.png", "image/png", "inv01", false, {}},
                        {"inv02_de_modern_scan.png", "image/png", "inv02", false, {}},
                        {"inv01_en_classic_blur.png", "image/png", "inv01", true, {}}};
  for (auto& d : docs)
    d.id = p.submit(d.file, d.mime);
  for (auto& d : docs) {
    SCOPED_TRACE(d.file);
    ASSERT_TRUE(p.wait_until_final(d.id, 600s));
    auto s = p.status(d.id);
    EXPECT_EQ(s.status, "completed") << s.last_error;
    // Stored under the document's tenant.
    auto tenant = p.db().scalar("SELECT d.tenant_id FROM ingestion AS i JOIN document AS d "
                                "ON d.id = i.document_id WHERE i.id = $1",
                                {d.id.str()});
    auto key = storage_keys::transcription(tenant, d.id.str());
    EXPECT_EQ(
        p.db().scalar("SELECT transcription_file_path FROM ingestion WHERE id = $1", {d.id.str()}),
        key);
    auto t = transcription_from_json(stored(key));
    ASSERT_TRUE(t) << t.error().describe();
    EXPECT_FALSE(t->native_text);
    EXPECT_EQ(t->provider, "tesseract");
    rapidjson::Document truth;
    truth.Parse(test::read_binary(test::corpus_dir() + "/truth/" + d.invoice + ".json").c_str());
    EXPECT_NE(t->text.find(truth["invoice_number"].GetString()), std::string::npos) << t->text;
    auto pre = p.db().scalar(
        "SELECT coalesce(preprocessed_file_path, '') FROM ingestion WHERE id = $1", {d.id.str()});
    if (d.degraded) {
      EXPECT_TRUE(t->preprocessed);
      auto pre_key = storage_keys::preprocessed(tenant, d.id.str(), "png");
      EXPECT_EQ(pre, pre_key);
      auto png = stored(pre_key);
      ASSERT_GT(png.size(), 8u);
      EXPECT_EQ(png.substr(1, 3), "PNG");
    } else {
      EXPECT_FALSE(t->preprocessed);
      EXPECT_EQ(pre, "");
    }
    EXPECT_NE(s.document_structured_data.find(truth["invoice_number"].GetString()),
              std::string::npos);
  }
}

} // namespace
