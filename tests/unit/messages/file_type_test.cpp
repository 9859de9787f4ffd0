// The one file-type rule: image signatures at byte 0, a PDF header within the first KiB.
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
