// The unpackers on archives and e-mails made in the test: members and names kept, the body as
// text, and each limit (a zip bomb, a traversal, an encrypted member, a corrupt archive) refused
// with its own error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "adapters/containers/unpacker.hpp"
#include "tests/support/containers/archive_maker.hpp"
#include "tests/support/containers/outlook_maker.hpp"

namespace ingestd {
namespace {

using test::make_archive;
using test::make_email;
using test::pdf_bytes;

result<unpacked> unpack(const std::string& bytes, unpack_limits limits = {}) {
  auto type = detect_container_type(bytes);
  if (!type)
    return error::make_permanent("test.type", "not a container");
  return unpacker_for(type->kind).unpack(bytes, type->kind, limits);
}

TEST(container_type, detects_each_kind_and_nothing_else) {
  EXPECT_EQ(detect_container_type(make_archive("zip", {{"a.pdf", pdf_bytes("a")}}))->kind,
            container_kind::zip);
  EXPECT_EQ(detect_container_type(make_archive("tar", {{"a.pdf", pdf_bytes("a")}}))->kind,
            container_kind::tar);
  EXPECT_EQ(detect_container_type(make_archive("tar", {{"a.pdf", pdf_bytes("a")}}, true))->ext,
            "tar.gz");
  auto seven = detect_container_type(make_archive("7z", {{"a.pdf", pdf_bytes("a")}}));
  ASSERT_TRUE(seven);
  EXPECT_EQ(seven->kind, container_kind::seven_zip);
  EXPECT_EQ(seven->mime, "application/x-7z-compressed");
  EXPECT_EQ(container_type_of_mime("application/x-7z-compressed")->ext, "7z");
  EXPECT_EQ(detect_container_type(make_email("hello", "body", {}))->mime, "message/rfc822");
  EXPECT_EQ(
      detect_container_type("From alice@example.com Mon Nov 23 10:00:00 2026\nFrom: a@b\n\nx\n")
          ->kind,
      container_kind::mbox);
  EXPECT_FALSE(detect_container_type(pdf_bytes("x")));
  EXPECT_FALSE(detect_container_type("hello: world but no mail header\n\nbody"));
  EXPECT_FALSE(detect_container_type("From here on, plain text\nno headers\n"));
  EXPECT_FALSE(detect_container_type(""));
}

TEST(archive_unpacker, zip_tar_tar_gz_and_7z_keep_members_and_paths) {
  std::vector<test::archive_file> files{{"invoices/a.pdf", pdf_bytes("a")},
                                        {"b.pdf", pdf_bytes("b")}};
  for (const auto& bytes : {make_archive("zip", files), make_archive("tar", files),
                            make_archive("tar", files, true), make_archive("7z", files)}) {
    auto r = unpack(bytes);
    ASSERT_TRUE(r) << r.error().describe();
    ASSERT_EQ(r->members.size(), 2u);
    EXPECT_EQ(r->members[0].name, "invoices/a.pdf");
    EXPECT_EQ(r->members[0].bytes, pdf_bytes("a"));
    EXPECT_EQ(r->members[1].name, "b.pdf");
    EXPECT_TRUE(r->problems.empty());
  }
}

TEST(archive_unpacker, a_zip_bomb_stops_at_the_ratio) {
  for (std::string format : {"zip", "7z"}) {
    auto bomb = make_archive(format, {{"zeros.pdf", std::string(16u << 20, '\0')}});
    ASSERT_LT(bomb.size(), 100u * 1024) << format;
    auto r = unpack(bomb);
    ASSERT_FALSE(r) << format;
    EXPECT_EQ(r.error().code, "container.ratio") << format << ": " << r.error().describe();
    EXPECT_FALSE(r.error().transient());
  }
}

TEST(archive_unpacker, total_size_and_member_count_are_limited) {
  unpack_limits small;
  small.max_total_bytes = 1000;
  auto r = unpack(make_archive("tar", {{"a.pdf", pdf_bytes(std::string(600, 'a'))},
                                       {"b.pdf", pdf_bytes(std::string(600, 'b'))}}),
                  small);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_large");

  unpack_limits few;
  few.max_members = 2;
  r = unpack(make_archive("zip", {{"a.pdf", "1"}, {"b.pdf", "2"}, {"c.pdf", "3"}}), few);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_many_members");
  EXPECT_NE(r.error().message.find("containers.max_members"), std::string::npos);
}

TEST(archive_unpacker, directories_and_links_count_against_the_members) {
  using test::entry_kind;
  using test::many_entries;
  unpack_limits limits;
  limits.max_members = 1000;
  for (auto kind : {entry_kind::directory, entry_kind::symlink, entry_kind::hardlink}) {
    // Thousands of entries that are no file, and one document: refused as too many.
    auto entries = many_entries(kind, 3000, "e", "a.pdf");
    entries.insert(entries.begin(), test::archive_file{"a.pdf", pdf_bytes("a")});
    for (const char* format : {"tar", "zip"}) {
      if (kind == entry_kind::hardlink && std::string{format} == "zip")
        continue; // zip has no hardlinks
      auto r = unpack(make_archive(format, entries), limits);
      ASSERT_FALSE(r) << format << " " << static_cast<int>(kind);
      EXPECT_EQ(r.error().code, "container.too_many_members") << r.error().describe();
      EXPECT_NE(r.error().message.find("directories and links"), std::string::npos);
    }
  }
  // Within the limit they are counted, never read as members.
  auto entries = many_entries(entry_kind::directory, 500, "dir");
  auto links = many_entries(entry_kind::symlink, 400, "link", "a.pdf");
  entries.insert(entries.end(), links.begin(), links.end());
  entries.push_back({"a.pdf", pdf_bytes("a")});
  entries.push_back({"hard.pdf", {}, entry_kind::hardlink, "a.pdf"});
  auto r = unpack(make_archive("tar", entries), limits);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->members.size(), 1u);
  EXPECT_EQ(r->members[0].name, "a.pdf");
  limits.max_members = 900;
  r = unpack(make_archive("tar", entries), limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_many_members");
}

TEST(archive_unpacker, names_and_link_targets_count_against_the_bytes) {
  using test::entry_kind;
  // 2000 symlinks to a 400-byte target: 800 kB of names and targets, no file byte.
  auto links = test::many_entries(entry_kind::symlink, 2000, "l", std::string(400, 't'));
  unpack_limits limits;
  limits.max_members = 5000;
  limits.max_total_bytes = 100'000;
  auto r = unpack(make_archive("tar", links), limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_large") << r.error().describe();
  auto dirs = test::many_entries(entry_kind::directory, 4000, std::string(200, 'd'));
  r = unpack(make_archive("zip", dirs), limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_large") << r.error().describe();
  // With room for them: counted, nothing kept.
  limits.max_total_bytes = 10'000'000;
  r = unpack(make_archive("tar", links), limits);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_TRUE(r->members.empty());
}

TEST(archive_unpacker, traversal_and_absolute_names_are_refused) {
  for (std::string name : {"../escape.pdf", "docs/../../escape.pdf", "/etc/passwd", "C:\\x.pdf"}) {
    auto r = unpack(make_archive("zip", {{"ok.pdf", pdf_bytes("ok")}, {name, pdf_bytes("bad")}}));
    ASSERT_FALSE(r) << name;
    EXPECT_EQ(r.error().code, "container.unsafe_path") << name;
    // The zip writer stores "C:\\x.pdf" as "C:/x.pdf": the message names the stored name.
    if (name.find('\\') == std::string::npos) {
      EXPECT_NE(r.error().message.find(name), std::string::npos) << r.error().message;
    }
  }
  EXPECT_TRUE(check_member_path("a/b..c/d.pdf"));
  EXPECT_TRUE(check_member_path("..hidden.pdf"));
}

TEST(archive_unpacker, an_encrypted_member_is_refused) {
  auto zip = make_archive("zip", {{"secret.pdf", pdf_bytes("secret")}}, false, "password");
  auto r = unpack(zip);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.encrypted");
  EXPECT_NE(r.error().message.find("secret.pdf"), std::string::npos);
}

TEST(archive_unpacker, a_truncated_archive_keeps_what_could_be_read) {
  auto tar = make_archive("tar", {{"first.pdf", pdf_bytes(std::string(2000, 'x'))},
                                  {"second.pdf", pdf_bytes(std::string(5000, 'y'))}});
  // Cut inside the second member's data (a tar header is 512 bytes; the first member 2 blocks...).
  auto cut = tar.substr(0, 512 + 2560 + 512 + 1000);
  auto r = unpack(cut);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->members.size(), 1u);
  EXPECT_EQ(r->members[0].name, "first.pdf");
  ASSERT_FALSE(r->problems.empty());

  auto nothing = unpack(std::string{"PK\x03\x04", 4} + std::string(40, '\x7f'));
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().code, "container.corrupt");

  // A 7z keeps its index at the end: cut short, or only its signature, nothing is readable.
  auto seven = make_archive("7z", {{"first.pdf", pdf_bytes("first")}});
  for (const auto& bytes : {seven.substr(0, seven.size() - 20),
                            std::string{"7z\xbc\xaf\x27\x1c", 6} + std::string(40, '\x7f')}) {
    auto r7 = unpack(bytes);
    ASSERT_FALSE(r7);
    EXPECT_EQ(r7.error().code, "container.corrupt") << r7.error().describe();
  }
}

/// A RAR archive of tests/fixtures/rar/ (no Debian tool writes RAR: they come from libarchive's
/// own tests).
std::string rar_fixture(const std::string& name) {
  const char* dir = std::getenv("INGESTD_SOURCE_DIR");
  std::ifstream in{std::string{dir != nullptr ? dir : "."} + "/tests/fixtures/rar/" + name,
                   std::ios::binary};
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in)
    throw std::runtime_error("cannot read tests/fixtures/rar/" + name);
  return bytes.str();
}

TEST(archive_unpacker, rar_4_and_5_keep_their_files_and_skip_links_and_directories) {
  auto rar4 = rar_fixture("rar4_basic.rar");
  auto type = detect_container_type(rar4);
  ASSERT_TRUE(type);
  EXPECT_EQ(type->kind, container_kind::rar);
  EXPECT_EQ(type->mime, "application/vnd.rar");
  EXPECT_EQ(container_type_of_mime("application/vnd.rar")->ext, "rar");
  auto r = unpack(rar4);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->members.size(), 2u);
  EXPECT_EQ(r->members[0].name, "test.txt");
  EXPECT_EQ(r->members[0].bytes, "test text document\r\n");
  EXPECT_EQ(r->members[1].name, "testdir/test.txt");
  EXPECT_EQ(r->members[1].bytes, "test text document\r\n");
  EXPECT_TRUE(r->problems.empty());
  // The link and the two directories count against the members.
  unpack_limits four;
  four.max_members = 4;
  auto over = unpack(rar4, four);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, "container.too_many_members");

  for (const auto* name : {"rar5_multiple_files.rar", "rar5_compressed.rar"}) {
    auto rar5 = rar_fixture(name);
    ASSERT_EQ(detect_container_type(rar5)->kind, container_kind::rar) << name;
    auto r5 = unpack(rar5);
    ASSERT_TRUE(r5) << name << ": " << r5.error().describe();
    ASSERT_FALSE(r5->members.empty()) << name;
    for (const auto& m : r5->members) {
      EXPECT_TRUE(m.name.ends_with(".bin")) << m.name;
      EXPECT_FALSE(m.bytes.empty()) << m.name;
    }
    EXPECT_TRUE(r5->problems.empty()) << name;
  }
  EXPECT_EQ(unpack(rar_fixture("rar5_multiple_files.rar"))->members.size(), 4u);
}

TEST(archive_unpacker, an_encrypted_or_damaged_rar_is_refused) {
  auto encrypted = unpack(rar_fixture("rar4_encrypted_data.rar"));
  ASSERT_FALSE(encrypted);
  EXPECT_EQ(encrypted.error().code, "container.encrypted") << encrypted.error().describe();

  // Cut short: what was read is kept and the loss is reported.
  auto rar4 = rar_fixture("rar4_basic.rar");
  auto half = unpack(rar4.substr(0, rar4.size() / 2));
  ASSERT_TRUE(half) << half.error().describe();
  ASSERT_EQ(half->members.size(), 1u);
  EXPECT_EQ(half->problems.size(), 1u);
  auto rar5 = rar_fixture("rar5_compressed.rar");
  auto cut = unpack(rar5.substr(0, rar5.size() - 10));
  ASSERT_TRUE(cut) << cut.error().describe();
  ASSERT_EQ(cut->problems.size(), 1u);
  EXPECT_NE(cut->problems[0].find("Truncated"), std::string::npos) << cut->problems[0];
  // Nothing readable after the signature: corrupt, not an empty archive.
  auto junk = unpack(std::string{"Rar!\x1a\x07\x00", 7} + std::string(40, '\x7f'));
  ASSERT_FALSE(junk);
  EXPECT_EQ(junk.error().code, "container.corrupt") << junk.error().describe();
  // "Rar!" alone, or another version byte, is not a RAR archive.
  EXPECT_FALSE(detect_container_type("Rar!"));
  EXPECT_FALSE(detect_container_type(std::string{"Rar!\x1a\x07\x02\x00", 8} + "rest"));
}

TEST(archive_unpacker, a_damaged_header_is_a_corrupt_tail_not_an_unsafe_name) {
  auto tar = make_archive("tar",
                          {{"first.pdf", pdf_bytes("first")}, {"second.pdf", pdf_bytes("second")}});
  // The second member's header starts at 1024 (a header block, then one data block); a changed
  // name byte breaks its checksum, which libarchive answers with ARCHIVE_RETRY and no entry.
  auto damaged = tar;
  damaged[1024] = 'X';
  auto r = unpack(damaged);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->members.size(), 1u);
  EXPECT_EQ(r->members[0].name, "first.pdf");
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_NE(r->problems[0].find("Damaged tar archive"), std::string::npos) << r->problems[0];

  damaged = tar;
  damaged[0] = 'X';
  r = unpack(damaged);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.corrupt") << r.error().describe();
}

TEST(mime_unpacker, an_email_keeps_its_body_and_attachments) {
  auto eml = make_email("Invoice 42", "Please find the invoice attached.",
                        {{"invoice.pdf", pdf_bytes("inv")}, {"../../note.pdf", pdf_bytes("n")}});
  auto r = unpack(eml);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_NE(r->body_text.find("Please find the invoice attached."), std::string::npos);
  EXPECT_EQ(r->subject, "Invoice 42");
  EXPECT_NE(r->from.find("alice@example.com"), std::string::npos);
  ASSERT_EQ(r->members.size(), 2u);
  EXPECT_EQ(r->members[0].name, "invoice.pdf");
  EXPECT_EQ(r->members[0].bytes, pdf_bytes("inv"));
  // An attachment's name is a file name: its directories are dropped.
  EXPECT_EQ(r->members[1].name, "note.pdf");
}

TEST(mime_unpacker, recipients_without_addresses_keep_their_names) {
  // As Outlook keeps them (and a .pst's messages carry them): display names only, one encoded.
  auto r = unpack("From: Lee  Dennis\r\nTo: Lindberg  Lorraine; =?utf-8?q?M=C3=BCller_Anna?=\r\n"
                  "Subject: s\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nbody\r\n");
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->to, "Lindberg  Lorraine; M\xc3\xbcller Anna");
  EXPECT_EQ(r->from, "Lee  Dennis");
}

TEST(mime_unpacker, a_zip_nested_in_an_email_unpacks_in_turn) {
  auto zip = make_archive("zip", {{"inner/a.pdf", pdf_bytes("inner")}});
  auto eml = make_email("nested", "see the zip", {{"docs.zip", zip}});
  auto outer = unpack(eml);
  ASSERT_TRUE(outer) << outer.error().describe();
  ASSERT_EQ(outer->members.size(), 1u);
  EXPECT_EQ(outer->members[0].name, "docs.zip");
  EXPECT_EQ(outer->members[0].bytes, zip);
  auto inner = unpack(outer->members[0].bytes);
  ASSERT_TRUE(inner) << inner.error().describe();
  ASSERT_EQ(inner->members.size(), 1u);
  EXPECT_EQ(inner->members[0].name, "inner/a.pdf");
  EXPECT_EQ(inner->members[0].bytes, pdf_bytes("inner"));
}

TEST(mime_unpacker, an_mbox_gives_one_eml_per_message) {
  auto one = make_email("first", "one", {{"a.pdf", pdf_bytes("a")}});
  auto two = make_email("second", "two", {});
  auto mbox = "From alice@example.com Mon Nov 23 10:00:00 2026\n" + one
              + "\nFrom bob@example.com Mon Nov 23 11:00:00 2026\n" + two;
  auto r = unpack(mbox);
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->members.size(), 2u);
  EXPECT_EQ(r->members[0].name, "message-1.eml");
  auto first = unpack(r->members[0].bytes);
  ASSERT_TRUE(first) << first.error().describe();
  EXPECT_EQ(first->subject, "first");
  ASSERT_EQ(first->members.size(), 1u);
  EXPECT_EQ(first->members[0].bytes, pdf_bytes("a"));
}

TEST(mime_unpacker, an_encrypted_email_and_the_limits_are_refused) {
  std::string enc
      = "From: a@example.com\r\nTo: b@example.com\r\nSubject: s\r\nMIME-Version: 1.0\r\n"
        "Content-Type: multipart/encrypted; protocol=\"application/pgp-encrypted\"; "
        "boundary=\"x\"\r\n\r\n"
        "--x\r\nContent-Type: application/pgp-encrypted\r\n\r\nVersion: 1\r\n"
        "--x\r\nContent-Type: application/octet-stream\r\n\r\n-----BEGIN PGP "
        "MESSAGE-----\r\n--x--\r\n";
  auto r = unpack(enc);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.encrypted");

  unpack_limits few;
  few.max_members = 1;
  r = unpack(make_email("many", "x", {{"a.pdf", pdf_bytes("a")}, {"b.pdf", pdf_bytes("b")}}), few);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_many_members");
}

TEST(mime_unpacker, mime_parts_that_are_no_attachment_count_against_the_members) {
  // Thousands of empty multipart nodes, nested one in another a level deep each.
  std::string m = "From: a@example.com\r\nTo: b@example.com\r\nSubject: parts\r\n"
                  "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"top\"\r\n\r\n";
  for (int i = 0; i < 3000; ++i)
    m += "--top\r\nContent-Type: multipart/mixed; boundary=\"in" + std::to_string(i)
         + "\"\r\n\r\n--in" + std::to_string(i) + "--\r\n";
  m += "--top\r\nContent-Type: text/plain\r\n\r\nbody\r\n--top--\r\n";
  unpack_limits limits;
  limits.max_members = 1000;
  auto r = unpack(m, limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_many_members") << r.error().describe();
  limits.max_members = 5000;
  r = unpack(m, limits);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_TRUE(r->members.empty());
  EXPECT_NE(r->body_text.find("body"), std::string::npos);

  // The body's bytes count against the total.
  limits.max_total_bytes = 1000;
  r = unpack(make_email("long", std::string(5000, 'x'), {}), limits);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, "container.too_large") << r.error().describe();
}

TEST(msg_unpacker, an_outlook_message_keeps_its_headers_body_and_attachments) {
  auto msg = test::make_outlook_message(
      "Invoice 2026-11", "Please find the invoice attached. Grüße",
      {{"inv01.pdf", pdf_bytes("one")}, {"../../etc/scan.png", "\x89PNG bytes"}},
      "Supplier <billing@supplier.example>", "AP <ap@buyer.example>");
  auto type = detect_container_type(msg);
  ASSERT_TRUE(type);
  EXPECT_EQ(type->kind, container_kind::msg);
  EXPECT_EQ(type->mime, "application/vnd.ms-outlook");
  auto out = unpack(msg);
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_EQ(out->subject, "Invoice 2026-11");
  EXPECT_EQ(out->body_text, "Please find the invoice attached. Grüße");
  EXPECT_EQ(out->from, "Supplier <billing@supplier.example>");
  EXPECT_EQ(out->to, "AP <ap@buyer.example>");
  EXPECT_EQ(out->date, "Mon, 23 Nov 2026 10:00:00 +0000");
  ASSERT_EQ(out->members.size(), 2u);
  EXPECT_EQ(out->members[0].name, "inv01.pdf");
  EXPECT_EQ(out->members[0].bytes, pdf_bytes("one"));
  EXPECT_EQ(out->members[1].name, "scan.png") << "a name, never a path";
  EXPECT_TRUE(out->problems.empty());
}

TEST(msg_unpacker, an_attached_message_is_named_and_the_limits_hold) {
  auto msg = test::make_outlook_message(
      "Fwd", "", {{"original.msg", "", true}, {"big.pdf", std::string(5000, 'x')}});
  unpack_limits small;
  small.max_member_bytes = 4096;
  auto out = unpack(msg, small);
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_TRUE(out->members.empty());
  ASSERT_EQ(out->problems.size(), 2u);
  EXPECT_NE(out->problems[0].find("attached Outlook message"), std::string::npos);
  EXPECT_NE(out->problems[1].find("big.pdf"), std::string::npos);
  std::vector<test::outlook_attachment> many;
  many.reserve(5);
  for (int i = 0; i < 5; ++i)
    many.push_back({"a" + std::to_string(i) + ".pdf", pdf_bytes("x")});
  unpack_limits few;
  few.max_members = 3;
  auto refused = unpack(test::make_outlook_message("Many", "body", many), few);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, "container.too_many_members");
}

TEST(msg_unpacker, a_damaged_message_or_another_ole_file_is_refused) {
  auto msg = test::make_outlook_message("Invoice", "body", {{"a.pdf", pdf_bytes("a")}});
  // Cut short: the compound file's sectors are missing.
  auto broken = msg_unpacker{}.unpack(msg.substr(0, 700), container_kind::msg, {});
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, "container.corrupt");
  // An OLE2 file without a message's property stream (a .doc, an .xls) is no Outlook message.
  auto other = msg;
  std::string wide;
  for (char c : std::string_view{"__properties_version1.0"})
    wide.append({c, '\0'});
  for (auto at = other.find(wide); at != std::string::npos; at = other.find(wide, at))
    other[at] = 'X';
  EXPECT_FALSE(detect_container_type(other));
}

} // namespace
} // namespace ingestd
