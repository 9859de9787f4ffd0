// Office and web documents told from containers and other files (messages/file_type): never by
// the ZIP signature alone, each by two signs; a ZIP that is no office document stays a container.
#include <gtest/gtest.h>

#include <string>

#include "messages/file_type.hpp"
#include "tests/support/containers/archive_maker.hpp"

namespace ingestd {
namespace {

using test::make_archive;

TEST(office_type, docx_and_xlsx_by_their_content_types_and_main_part) {
  auto docx = make_archive("zip", {{"[Content_Types].xml", "<Types/>"},
                                   {"_rels/.rels", "<Relationships/>"},
                                   {"word/document.xml", "<w:document/>"}});
  auto type = detect_file_type(docx);
  ASSERT_TRUE(type);
  EXPECT_EQ(type->kind, file_kind::docx);
  EXPECT_TRUE(needs_conversion(type->kind));
  EXPECT_EQ(type->ext, "docx");
  EXPECT_FALSE(detect_container_type(docx));
  auto xlsx = make_archive(
      "zip", {{"[Content_Types].xml", "<Types/>"}, {"xl/workbook.xml", "<workbook/>"}});
  EXPECT_EQ(detect_file_type(xlsx)->kind, file_kind::xlsx);
  EXPECT_EQ(detect_file_type(xlsx)->mime,
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
}

TEST(office_type, a_zip_with_only_one_sign_stays_a_container) {
  // A folder named word/ without the content types, the content types without a main part, a
  // package claiming both.
  for (const auto& files : std::vector<std::vector<test::archive_file>>{
           {{"word/document.xml", "<w:document/>"}, {"invoice.pdf", "%PDF-1.4"}},
           {{"[Content_Types].xml", "<Types/>"}, {"invoice.pdf", "%PDF-1.4"}},
           {{"[Content_Types].xml", "<Types/>"}, {"word/a.xml", "a"}, {"xl/b.xml", "b"}}}) {
    auto zip = make_archive("zip", files);
    EXPECT_FALSE(detect_file_type(zip));
    ASSERT_TRUE(detect_container_type(zip));
    EXPECT_EQ(detect_container_type(zip)->kind, container_kind::zip);
  }
}

TEST(office_type, odt_and_ods_by_their_mimetype_member_and_manifest) {
  auto odt = make_archive("zip-stored", {{"mimetype", "application/vnd.oasis.opendocument.text"},
                                         {"content.xml", "<office:document-content/>"},
                                         {"META-INF/manifest.xml", "<manifest/>"}});
  EXPECT_EQ(detect_file_type(odt)->kind, file_kind::odt);
  auto ods
      = make_archive("zip-stored", {{"mimetype", "application/vnd.oasis.opendocument.spreadsheet"},
                                    {"META-INF/manifest.xml", "<manifest/>"}});
  EXPECT_EQ(detect_file_type(ods)->kind, file_kind::ods);
  // Without the manifest, or with another OpenDocument type (a drawing): a container.
  auto bare = make_archive("zip-stored", {{"mimetype", "application/vnd.oasis.opendocument.text"}});
  EXPECT_FALSE(detect_file_type(bare));
  auto drawing
      = make_archive("zip-stored", {{"mimetype", "application/vnd.oasis.opendocument.graphics"},
                                    {"META-INF/manifest.xml", "<manifest/>"}});
  EXPECT_FALSE(detect_file_type(drawing));
  EXPECT_TRUE(detect_container_type(drawing));
}

TEST(office_type, rtf_by_its_opening_and_its_closing_brace) {
  EXPECT_EQ(detect_file_type("{\\rtf1\\ansi Invoice INV-1}\r\n")->kind, file_kind::rtf);
  EXPECT_EQ(detect_file_type("{\\rtf1 x}")->mime, "application/rtf");
  EXPECT_FALSE(detect_file_type("{\\rtf1\\ansi cut short"));
  EXPECT_FALSE(detect_file_type("{\\rtf2 x}"));
}

TEST(office_type, html_by_its_opening_and_a_body_or_closing_tag) {
  EXPECT_EQ(detect_file_type("<!DOCTYPE html><html><body>x</body></html>")->kind, file_kind::html);
  EXPECT_EQ(detect_file_type("\xEF\xBB\xBF\n  <HTML><BODY>x")->kind, file_kind::html);
  EXPECT_EQ(detect_file_type("<html lang=\"en\"><p>x</p></html>")->mime, "text/html");
  EXPECT_FALSE(detect_file_type("<html><p>no body, no end"));
  EXPECT_FALSE(detect_file_type("<?xml version=\"1.0\"?><body/>"));
  EXPECT_FALSE(detect_file_type("text mentioning <html> and <body>"));
  // An e-mail whose body is HTML is still an e-mail.
  EXPECT_FALSE(detect_file_type("From: a@example.com\r\nSubject: x\r\n\r\n<html><body>x"));
}

TEST(office_type, each_office_type_round_trips_through_its_mime_type) {
  for (auto kind : {file_kind::docx, file_kind::xlsx, file_kind::odt, file_kind::ods,
                    file_kind::rtf, file_kind::html}) {
    // Every office mime type names its kind back.
    std::string mime;
    switch (kind) {
    case file_kind::docx:
      mime = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
      break;
    case file_kind::xlsx:
      mime = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
      break;
    case file_kind::odt:
      mime = "application/vnd.oasis.opendocument.text";
      break;
    case file_kind::ods:
      mime = "application/vnd.oasis.opendocument.spreadsheet";
      break;
    case file_kind::rtf:
      mime = "application/rtf";
      break;
    default:
      mime = "text/html";
    }
    auto type = file_type_of_mime(mime);
    ASSERT_TRUE(type) << mime;
    EXPECT_EQ(type->kind, kind);
    EXPECT_TRUE(needs_conversion(type->kind));
  }
  for (auto mime : {"application/pdf", "image/png", "image/jpeg", "image/tiff"})
    EXPECT_FALSE(needs_conversion(file_type_of_mime(mime)->kind)) << mime;
}

} // namespace
} // namespace ingestd
