// multipart/form-data and application/x-www-form-urlencoded bodies: what a browser and curl send,
// and every malformed or oversized form refused with http.bad_form.
#include <gtest/gtest.h>

#include "adapters/http_server/form.hpp"

using namespace ingestd;
using namespace ingestd::http_server;

namespace {

std::string part(const std::string& boundary, const std::string& disposition,
                 const std::string& content, const std::string& type = "") {
  std::string out = "--" + boundary + "\r\nContent-Disposition: " + disposition + "\r\n";
  if (!type.empty())
    out += "Content-Type: " + type + "\r\n";
  return out + "\r\n" + content + "\r\n";
}

} // namespace

TEST(multipart_boundary, is_read_from_the_content_type) {
  EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=abc"), "abc");
  EXPECT_EQ(multipart_boundary("Multipart/Form-Data;boundary=\"a b'c\""), "a b'c");
  EXPECT_EQ(multipart_boundary("multipart/form-data; charset=utf-8; boundary=----x1"), "----x1");
  EXPECT_FALSE(multipart_boundary("multipart/form-data"));
  EXPECT_FALSE(multipart_boundary("multipart/form-data; boundary="));
  EXPECT_FALSE(multipart_boundary("multipart/mixed; boundary=abc"));
  EXPECT_FALSE(multipart_boundary("multipart/form-data; boundary=" + std::string(71, 'a')));
  EXPECT_FALSE(multipart_boundary("multipart/form-data; boundary=a\x01"));
}

TEST(parse_multipart, reads_fields_and_files_as_curl_sends_them) {
  std::string b = "------------------------d74496d66958873e";
  std::string body
      = part(b, "form-data; name=\"tenant_id\"", "0190a8c4-2222-7000-8000-000000000002")
        + part(b, "form-data; name=\"file\"; filename=\"inv 1.pdf\"",
               std::string("%PDF-1.4\r\n\0binary\r\n--", 21), "application/pdf")
        + "--" + b + "--\r\n";
  auto parts = parse_multipart(body, b);
  ASSERT_TRUE(parts) << parts.error().describe();
  ASSERT_EQ(parts->size(), 2U);
  EXPECT_EQ((*parts)[0].name, "tenant_id");
  EXPECT_EQ((*parts)[0].filename, "");
  EXPECT_EQ((*parts)[0].content, "0190a8c4-2222-7000-8000-000000000002");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "inv 1.pdf");
  EXPECT_EQ((*parts)[1].content_type, "application/pdf");
  EXPECT_EQ((*parts)[1].content, std::string("%PDF-1.4\r\n\0binary\r\n--", 21));
}

TEST(parse_multipart, takes_a_preamble_an_empty_part_and_an_epilogue) {
  std::string b = "xyz";
  std::string body = "ignored preamble\r\n" + part(b, "form-data; name=a", "")
                     + part(b, "form-data; name=\"b\"", "2") + "--xyz--\r\nepilogue";
  auto parts = parse_multipart(body, b);
  ASSERT_TRUE(parts) << parts.error().describe();
  ASSERT_EQ(parts->size(), 2U);
  EXPECT_EQ((*parts)[0].name, "a");
  EXPECT_EQ((*parts)[0].content, "");
  EXPECT_EQ((*parts)[1].content, "2");
}

TEST(parse_multipart, refuses_malformed_forms) {
  std::string b = "xyz";
  auto refused = [&](const std::string& body, const form_limits& limits = {}) {
    auto r = parse_multipart(body, b, limits);
    if (r)
      return std::string{"accepted"};
    EXPECT_EQ(r.error().code, "http.bad_form");
    return r.error().message;
  };
  EXPECT_NE(refused("no delimiter at all"), "accepted");
  EXPECT_NE(refused(part(b, "form-data; name=a", "1")), "accepted"); // no closing delimiter
  EXPECT_NE(refused("--xyz\r\nContent-Disposition: form-data; name=a\r\n\r\n1"), "accepted");
  EXPECT_NE(refused("--xyz\r\nContent-Disposition: form-data; name=a\r\n"), "accepted");
  EXPECT_NE(refused(part(b, "attachment; name=a", "1") + "--xyz--"), "accepted");
  EXPECT_NE(refused(part(b, "form-data; filename=f", "1") + "--xyz--"), "accepted");
  EXPECT_NE(refused("--xyz\r\nno colon here\r\n\r\n1\r\n--xyz--"), "accepted");
  EXPECT_NE(refused("--xyzjunk\r\n"), "accepted");
  std::string many;
  for (int i = 0; i < 5; ++i)
    many += part(b, "form-data; name=p" + std::to_string(i), "v");
  many += "--xyz--";
  EXPECT_EQ(refused(many, {4, 8192, 256}).find("more than 4 parts"), 0U);
  EXPECT_EQ(refused(many, {5, 8192, 256}), "accepted");
  auto long_header = "--xyz\r\nContent-Disposition: form-data; name=a\r\nX: "
                     + std::string(9000, 'h') + "\r\n\r\n1\r\n--xyz--";
  EXPECT_NE(refused(long_header).find("longer than"), std::string::npos);
}

TEST(parse_urlencoded, decodes_pairs_and_bounds_their_count) {
  auto pairs = parse_urlencoded("name=Erin+S%C3%B8rensen&token=a%2Bb%3D&empty=&flag&&bad=%zz%4");
  ASSERT_EQ(pairs.size(), 5U);
  EXPECT_EQ(pairs[0], (std::pair<std::string, std::string>{"name", "Erin S\xc3\xb8rensen"}));
  EXPECT_EQ(pairs[1].second, "a+b=");
  EXPECT_EQ(pairs[2].second, "");
  EXPECT_EQ(pairs[3].first, "flag");
  EXPECT_EQ(pairs[4].second, "%zz%4");
  EXPECT_EQ(parse_urlencoded("a=1&b=2&c=3", 2).size(), 2U);
}
