// The one file-type rule: image signatures at byte 0, a PDF header within the first KiB unless the
// bytes are a container by their own signature.
#include <gtest/gtest.h>

#include <string>

#include "messages/file_type.hpp"

namespace ingestd {
namespace {

TEST(file_type, recognises_each_supported_type_by_its_first_bytes) {
  EXPECT_EQ(detect_file_type("%PDF-1.7\n...")->kind, file_kind::pdf);
  EXPECT_EQ(detect_file_type(std::string{"\x89PNG\r\n\x1a\n....", 12})->mime, "image/png");
  EXPECT_EQ(detect_file_type(std::string{"\xFF\xD8\xFF\xE0", 4})->ext, "jpg");
  EXPECT_EQ(detect_file_type(std::string{"II*\0....", 8})->ext, "tiff");
  EXPECT_EQ(detect_file_type(std::string{"MM\0*....", 8})->mime, "image/tiff");
}

TEST(file_type, a_pdf_header_may_follow_junk_within_the_first_kib) {
  EXPECT_EQ(detect_file_type(std::string(1000, ' ') + "%PDF-1.4")->kind, file_kind::pdf);
  EXPECT_FALSE(detect_file_type(std::string(1024, ' ') + "%PDF-1.4"));
}

TEST(file_type, a_container_signature_wins_over_a_pdf_header_inside_it) {
  // A ZIP whose first member is stored (not deflated), as many zip tools write PDFs: its local
  // header, then the member's name, then the PDF's own first bytes.
  auto pdf = std::string{"%PDF-1.4\n1 0 obj\n"};
  auto zip = std::string{"PK\x03\x04", 4} + std::string(26, '\0') + "invoice.pdf" + pdf;
  EXPECT_FALSE(detect_file_type(zip));
  EXPECT_EQ(detect_container_type(zip)->kind, container_kind::zip);
  // A TAR: its first member's header (the name, then "ustar" at byte 257), then the PDF.
  auto tar = std::string{"invoice.pdf"} + std::string(246, '\0')
             + std::string{"ustar\0"
                           "00",
                           8};
  tar += std::string(512 - tar.size(), '\0') + pdf;
  EXPECT_FALSE(detect_file_type(tar));
  EXPECT_EQ(detect_container_type(tar)->kind, container_kind::tar);
  // An e-mail with a PDF pasted into its body.
  auto mail = std::string{"From: a@example.com\r\nSubject: invoice\r\n\r\n"} + pdf;
  EXPECT_FALSE(detect_file_type(mail));
  EXPECT_EQ(detect_container_type(mail)->kind, container_kind::eml);
  // A PDF is a PDF even when it holds the bytes of a ZIP signature later on.
  EXPECT_EQ(detect_file_type(pdf + std::string{"PK\x03\x04", 4})->kind, file_kind::pdf);
}

TEST(file_type, anything_else_is_unknown) {
  EXPECT_FALSE(detect_file_type(""));
  EXPECT_FALSE(detect_file_type("hello"));
  EXPECT_FALSE(detect_file_type(std::string{"\x89PNG", 4}));
  EXPECT_FALSE(detect_file_type(" \x89PNG\r\n\x1a\n"));
}

TEST(file_type, by_mime_type) {
  EXPECT_EQ(file_type_of_mime("image/jpeg")->ext, "jpg");
  EXPECT_EQ(file_type_of_mime("application/pdf")->kind, file_kind::pdf);
  EXPECT_FALSE(file_type_of_mime("text/plain"));
}

} // namespace
} // namespace ingestd
