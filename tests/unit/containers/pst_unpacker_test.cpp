// Outlook data files (.pst, .ost) through pst_unpacker, on real files (tests/fixtures/outlook/:
// pst-extractor's example data, which deploy/install-deps.sh installs): every message an .eml
// named by its folders, which the e-mail reader takes apart into its attachments; the limits
// held; a damaged file refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "adapters/containers/unpacker.hpp"
#include "tests/support/containers/outlook_maker.hpp"

namespace ingestd {
namespace {

std::string read_bytes(const std::string& relative) {
  const char* dir = std::getenv("INGESTD_SOURCE_DIR");
  auto path = std::string{dir != nullptr ? dir : "."} + "/tests/fixtures/outlook/node_modules/"
              + "pst-extractor/example/" + relative;
  std::ifstream in{path, std::ios::binary};
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in)
    throw std::runtime_error("cannot read " + path + ": run deploy/install-deps.sh");
  return bytes.str();
}

result<unpacked> unpack_pst(const std::string& bytes, unpack_limits limits = {}) {
  return unpacker_for(container_kind::pst).unpack(bytes, container_kind::pst, limits);
}

unpack_limits roomy() {
  unpack_limits l;
  l.max_members = 1000;
  l.max_total_bytes = uint64_t{256} << 20;
  l.max_member_bytes = uint64_t{16} << 20;
  return l;
}

TEST(pst_unpacker, pst_and_ost_files_are_detected_by_their_header_only) {
  for (const auto* name : {"testdata/enron.pst", "testdata/pstextractortestpdf@outlook.com.ost"}) {
    auto type = detect_container_type(read_bytes(name));
    ASSERT_TRUE(type) << name;
    EXPECT_EQ(type->kind, container_kind::pst) << name;
    EXPECT_EQ(type->mime, "application/vnd.ms-outlook-pst");
    EXPECT_EQ(type->ext, "pst");
  }
  EXPECT_EQ(container_type_of_mime("application/vnd.ms-outlook-pst")->kind, container_kind::pst);
  auto header = read_bytes("testdata/enron.pst").substr(0, 4096);
  // Another client magic, an index type libpst does not read, or too short: not a data file.
  auto other = header;
  other[8] = 'X';
  EXPECT_FALSE(detect_container_type(other));
  other = header;
  other[10] = 0x30;
  EXPECT_FALSE(detect_container_type(other));
  EXPECT_FALSE(detect_container_type(header.substr(0, 100)));
  // An Outlook message (.msg) stays one.
  EXPECT_EQ(detect_container_type(test::make_outlook_message("s", "b", {}))->kind,
            container_kind::msg);
}

TEST(pst_unpacker, every_message_becomes_an_email_named_by_its_folders) {
  auto r = unpack_pst(read_bytes("testdata/enron.pst"), roomy());
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->members.size(), 71u);
  EXPECT_EQ(r->subject, "Outlook data file: 71 messages");
  EXPECT_EQ(r->members[0].name,
            "lokay-m/MLOKAY (Non-Privileged)/TW-Commercial Group/message-1.eml");
  for (const auto& m : r->members) {
    EXPECT_TRUE(m.name.ends_with(".eml")) << m.name;
    EXPECT_EQ(m.name.find(".."), std::string::npos) << m.name;
    EXPECT_EQ(detect_container_type(m.bytes)->kind, container_kind::eml) << m.name;
  }
  // The first message as an e-mail: its headers, and its eleven Word attachments as members.
  auto mail
      = unpacker_for(container_kind::eml).unpack(r->members[0].bytes, container_kind::eml, {});
  ASSERT_TRUE(mail) << mail.error().describe();
  EXPECT_EQ(mail->subject, "New OBA's");
  EXPECT_NE(mail->from.find("Dennis.Lee@ENRON.com"), std::string::npos) << mail->from;
  EXPECT_NE(mail->date.find("22 Oct 2001"), std::string::npos) << mail->date;
  // Outlook keeps the recipients' display names, not their addresses: kept as they are.
  EXPECT_NE(r->members[0].bytes.find("\nTo: Lindberg  Lorraine; Watson  Kimberly\n"),
            std::string::npos);
  EXPECT_EQ(mail->to, "Lindberg  Lorraine; Watson  Kimberly");
  ASSERT_EQ(mail->members.size(), 11u);
  EXPECT_EQ(mail->members[0].name, "OBA_RedCedar_27728.doc");
  EXPECT_EQ(mail->members[0].bytes.substr(0, 4), "\xd0\xcf\x11\xe0");
}

TEST(pst_unpacker, an_ost_attachment_comes_out_byte_for_byte) {
  auto r = unpack_pst(read_bytes("testdata/pstextractortestpdf@outlook.com.ost"), roomy());
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->members.size(), 2u);
  EXPECT_EQ(r->members[0].name, "Inbox/message-1.eml");
  // The calendar, contacts and tasks an Outlook.com cache holds are counted, not kept.
  ASSERT_FALSE(r->problems.empty());
  EXPECT_NE(r->problems.back().find("contacts, appointments"), std::string::npos);
  auto mail
      = unpacker_for(container_kind::eml).unpack(r->members[0].bytes, container_kind::eml, {});
  ASSERT_TRUE(mail) << mail.error().describe();
  EXPECT_EQ(mail->subject, "single PDF");
  ASSERT_EQ(mail->members.size(), 1u);
  EXPECT_EQ(mail->members[0].name, "Clinometer Usage.pdf");
  EXPECT_EQ(mail->members[0].bytes, read_bytes("testdata/attachments/Clinometer Usage.pdf"));
}

TEST(pst_unpacker, the_limits_hold) {
  auto pst = read_bytes("testdata/enron.pst");
  auto few = roomy();
  few.max_members = 10;
  auto r = unpack_pst(pst, few);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_many_members");

  auto small = roomy();
  small.max_member_bytes = 50'000;
  r = unpack_pst(pst, small);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_LT(r->members.size(), 71u);
  bool named = false;
  for (const auto& p : r->problems)
    named = named || p.find("containers.max_member_bytes") != std::string::npos;
  EXPECT_TRUE(named);
  for (const auto& m : r->members)
    EXPECT_LE(m.bytes.size(), small.max_member_bytes) << m.name;

  auto total = roomy();
  total.max_total_bytes = 1'000'000;
  r = unpack_pst(pst, total);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_large");
}

TEST(pst_unpacker, a_damaged_or_cut_file_is_refused_or_keeps_what_it_could_read) {
  auto pst = read_bytes("testdata/enron.pst");
  for (size_t cut : {size_t{600}, size_t{100'000}, pst.size() / 2}) {
    auto r = unpack_pst(pst.substr(0, cut), roomy());
    ASSERT_FALSE(r) << cut;
    EXPECT_EQ(r.error().code, "container.corrupt") << r.error().describe();
  }
  auto r = unpack_pst("!BDN" + std::string(1000, '\0'), roomy());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.corrupt");
  // Damaged blocks inside: the items that still read are kept, the others counted.
  auto noisy = pst;
  uint32_t state = 7;
  for (int i = 0; i < 2000; ++i) {
    state = state * 1103515245u + 12345u;
    noisy[512 + state % (noisy.size() - 512)] = static_cast<char>(state >> 24);
  }
  auto damaged = unpack_pst(noisy, roomy());
  if (damaged) {
    EXPECT_LE(damaged->members.size(), 71u);
  } else {
    EXPECT_EQ(damaged.error().code, "container.corrupt") << damaged.error().describe();
  }
  auto other = pst_unpacker{}.unpack(pst, container_kind::eml, roomy());
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, "container.unsupported");
}

} // namespace
} // namespace ingestd
