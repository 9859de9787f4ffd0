// Containers at intake (the service `ingestd submit` and the HTTP intake share): a ZIP, a
// .tar.gz, an e-mail and an mbox are stored and get an ingestion whose work item is the unpack
// stage's, with its message on the unpack queue; with the unpack stage off they are refused by
// name.
#include <filesystem>

#include <gtest/gtest.h>

#include "adapters/db/pg_intake_repository.hpp"
#include "adapters/storage/filesystem_store.hpp"
#include "intake/intake_service.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/environment.hpp"
#include "tests/support/postgres/pg_fixture.hpp"

using namespace ingestd;

namespace {

class intake_containers_test : public ingestd::test::postgres_test {
protected:
  void SetUp() override {
    postgres_test::SetUp();
    if (HasFatalFailure())
      return;
    root = test::make_temp_dir("intake-containers");
    store = std::make_shared<filesystem_store>(root);
  }
  void TearDown() override {
    std::filesystem::remove_all(root);
    postgres_test::TearDown();
  }

  std::unique_ptr<intake_service> make(bool unpack) {
    intake_options opts;
    opts.ingest_queue = "ingest-q";
    if (unpack)
      opts.unpack_queue = "unpack-q";
    return std::make_unique<intake_service>(std::make_shared<pg_intake_repository>(db->url()),
                                            store, opts);
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

  std::string root;
  uuid tenant = uuid::v4();
  std::shared_ptr<object_store> store;
};

TEST_F(intake_containers_test, each_container_kind_goes_to_the_unpack_queue) {
  auto intake = make(true);
  auto pdf = test::pdf_bytes("x");
  std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {"a.zip", test::make_archive("zip", {{"a.pdf", pdf}}), "application/zip"},
      {"a.tar.gz", test::make_archive("tar", {{"b.pdf", pdf}}, true), "application/gzip"},
      {"a.eml", test::make_email("hello", "body", {{"c.pdf", pdf}}), "message/rfc822"},
      {"a.mbox",
       "From a@example.com Mon Nov 23 10:00:00 2026\n" + test::make_email("mbox", "body", {}),
       "application/mbox"},
  };
  for (auto& [name, bytes, mime] : cases) {
    auto r = intake->submit(item(bytes, name));
    ASSERT_TRUE(r) << name << ": " << r.error().describe();
    EXPECT_EQ(r->mime_type, mime) << name;
    EXPECT_EQ(db->scalar("SELECT stage FROM work_item WHERE id = $1", {r->ingestion_id.str()}),
              "unpack")
        << name;
    EXPECT_EQ(
        db->scalar("SELECT queue_name FROM queue_message WHERE body = $1", {r->ingestion_id.str()}),
        "unpack-q")
        << name;
    EXPECT_TRUE(std::filesystem::exists(root + "/" + r->file_path)) << r->file_path;
  }
  // A document still goes to the ingest queue.
  auto doc = intake->submit(item(pdf, "x.pdf"));
  ASSERT_TRUE(doc);
  EXPECT_EQ(
      db->scalar("SELECT stage || ' ' || (SELECT queue_name FROM queue_message WHERE body = $1) "
                 "FROM work_item WHERE id = $1::uuid",
                 {doc->ingestion_id.str()}),
      "ingest ingest-q");
}

TEST_F(intake_containers_test, containers_are_refused_by_name_without_the_unpack_stage) {
  auto intake = make(false);
  auto r
      = intake->submit(item(test::make_archive("zip", {{"a.pdf", test::pdf_bytes("x")}}), "a.zip"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "intake.containers_disabled");
  EXPECT_NE(r.error().message.find("stages.enabled"), std::string::npos);
  auto text = intake->submit(item("just text", "a.txt"));
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().code, "intake.unsupported_type");
  EXPECT_EQ(std::stoll(db->scalar("SELECT count(*) FROM document")), 0);
  EXPECT_EQ(std::stoll(db->scalar("SELECT count(*) FROM work_item")), 0);
  EXPECT_EQ(std::stoll(db->scalar("SELECT count(*) FROM queue_message")), 0);
}

} // namespace
