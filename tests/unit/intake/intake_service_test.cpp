// The intake service (intake/intake_service.cpp) over the fake intake repository and the fake
// object store: what it asks the repository to create for documents and for containers, and what
// it refuses. The sanitizer build (preset sanitize) runs it with libstdc++'s assertions, which
// catch a read of an empty optional such as a container's file type.
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "intake/intake_service.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/fakes/intake_fakes.hpp"

using namespace ingestd;

namespace {

class intake_service_test : public ::testing::Test {
protected:
  void TearDown() override { EXPECT_TRUE(repo->violations().empty()) << repo->violations()[0]; }

  /// Documents of `large_min_bytes` bytes or more start in the large class.
  intake_service make(bool unpack, size_t large_min_bytes = 1000) {
    intake_options opts;
    opts.ingest_queue = "ingest-q";
    opts.large_queue = "large-q";
    opts.large_min_bytes = large_min_bytes;
    if (unpack)
      opts.unpack_queue = "unpack-q";
    return intake_service{repo, store, opts};
  }

  intake_item item(std::string bytes, std::string name) {
    intake_item it;
    it.tenant_id = tenant;
    it.source.uploaded_by = uuid::v4();
    it.bytes = std::move(bytes);
    it.name = std::move(name);
    it.channel = "test";
    return it;
  }

  std::shared_ptr<test::fake_intake_repository> repo
      = std::make_shared<test::fake_intake_repository>();
  std::shared_ptr<test::fake_store> store = std::make_shared<test::fake_store>();
  uuid tenant = uuid::v4();
};

TEST_F(intake_service_test, each_container_kind_goes_to_the_unpack_stage_with_its_mime_type) {
  // Every file is large by its size here; a container has no size class of its own.
  auto intake = make(true, 1);
  auto pdf = test::pdf_bytes("x");
  std::vector<std::tuple<std::string, std::string, std::string, std::string>> cases{
      {"a.zip", test::make_archive("zip", {{"a.pdf", pdf}}), "application/zip", ".zip"},
      {"a.tar", test::make_archive("tar", {{"b.pdf", pdf}}), "application/x-tar", ".tar"},
      {"a.tar.gz", test::make_archive("tar", {{"b.pdf", pdf}}, true), "application/gzip",
       ".tar.gz"},
      {"a.eml", test::make_email("hello", "body", {{"c.pdf", pdf}}), "message/rfc822", ".eml"},
      {"a.mbox",
       "From a@example.com Mon Nov 23 10:00:00 2026\n" + test::make_email("mbox", "body", {}),
       "application/mbox", ".mbox"},
  };
  for (auto& [name, bytes, mime, ext] : cases) {
    auto r = intake.submit(item(bytes, name));
    ASSERT_TRUE(r) << name << ": " << r.error().describe();
    EXPECT_EQ(r->status, intake_status::created) << name;
    EXPECT_EQ(r->mime_type, mime) << name;
    auto req = repo->requests().back();
    EXPECT_EQ(req.stage, "unpack") << name;
    EXPECT_EQ(req.queue, "unpack-q") << name;
    EXPECT_EQ(req.size_class, "small") << name;
    EXPECT_EQ(req.mime_type, mime) << name;
    EXPECT_NE(req.source_metadata.find("\"mime_type\":\"" + mime + "\""), std::string::npos)
        << req.source_metadata;
    EXPECT_NE(req.source_metadata.find("\"file_name\":\"" + name + "\""), std::string::npos)
        << req.source_metadata;
    EXPECT_EQ(r->file_path, req.file_path) << name;
    EXPECT_TRUE(r->file_path.ends_with(ext)) << r->file_path;
    EXPECT_EQ(store->object(r->file_path), bytes) << name;
  }
  EXPECT_EQ(repo->documents(), cases.size());
}

TEST_F(intake_service_test, a_document_goes_to_the_ingest_stage_in_its_size_class) {
  auto intake = make(true);
  auto small = intake.submit(item(test::pdf_bytes("small"), "small.pdf"));
  ASSERT_TRUE(small) << small.error().describe();
  EXPECT_EQ(small->mime_type, "application/pdf");
  auto req = repo->requests().back();
  EXPECT_EQ(req.stage, "ingest");
  EXPECT_EQ(req.queue, "ingest-q");
  EXPECT_EQ(req.size_class, "small");
  EXPECT_TRUE(small->file_path.ends_with(".pdf")) << small->file_path;

  auto large = intake.submit(item(test::pdf_bytes(std::string(2000, 'x')), "large.pdf"));
  ASSERT_TRUE(large) << large.error().describe();
  EXPECT_EQ(repo->requests().back().queue, "large-q");
  EXPECT_EQ(repo->requests().back().size_class, "large");
}

TEST_F(intake_service_test, containers_are_refused_by_name_without_the_unpack_stage) {
  auto intake = make(false);
  auto r
      = intake.submit(item(test::make_archive("zip", {{"a.pdf", test::pdf_bytes("x")}}), "a.zip"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "intake.containers_disabled");
  EXPECT_NE(r.error().message.find("stages.enabled"), std::string::npos) << r.error().message;
  auto text = intake.submit(item("just text", "a.txt"));
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, "intake.unsupported_type");
  EXPECT_TRUE(repo->requests().empty());
  EXPECT_EQ(store->puts(), 0);
}

TEST_F(intake_service_test, the_same_container_again_is_a_duplicate_until_its_ingestion_failed) {
  auto intake = make(true);
  auto zip = test::make_archive("zip", {{"a.pdf", test::pdf_bytes("x")}});
  auto first = intake.submit(item(zip, "a.zip"));
  ASSERT_TRUE(first) << first.error().describe();

  auto again = intake.submit(item(zip, "again.zip"));
  ASSERT_TRUE(again) << again.error().describe();
  EXPECT_EQ(again->status, intake_status::duplicate);
  EXPECT_EQ(again->document_id, first->document_id);
  EXPECT_EQ(again->ingestion_id, first->ingestion_id);
  EXPECT_EQ(again->mime_type, "application/zip");
  EXPECT_EQ(repo->requests().size(), 1u);
  EXPECT_EQ(store->puts(), 1);

  repo->set_status(first->ingestion_id, "failed");
  auto retry = intake.submit(item(zip, "retry.zip"));
  ASSERT_TRUE(retry) << retry.error().describe();
  EXPECT_EQ(retry->status, intake_status::reprocessing);
  EXPECT_EQ(retry->document_id, first->document_id);
  EXPECT_NE(retry->ingestion_id, first->ingestion_id);
  EXPECT_EQ(repo->requests().back().stage, "unpack");
  EXPECT_EQ(repo->requests().back().queue, "unpack-q");
  EXPECT_EQ(store->puts(), 1);
}

TEST_F(intake_service_test, a_failed_store_creates_no_rows) {
  auto intake = make(true);
  store->fail_next("put", error::make_transient("storage.unavailable", "down"));
  auto r = intake.submit(item(test::make_email("hello", "body", {}), "a.eml"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "storage.unavailable");
  EXPECT_TRUE(repo->requests().empty());
}

} // namespace
