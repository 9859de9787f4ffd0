// The document types ingestd reads, recognised by their first bytes.
#include "messages/file_type.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

namespace ingestd {

namespace {

constexpr std::array<file_type, 10> all_types{{
    {file_kind::pdf, "application/pdf", "pdf"},
    {file_kind::png, "image/png", "png"},
    {file_kind::jpeg, "image/jpeg", "jpg"},
    {file_kind::tiff, "image/tiff", "tiff"},
    {file_kind::docx, "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
     "docx"},
    {file_kind::xlsx, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"},
    {file_kind::odt, "application/vnd.oasis.opendocument.text", "odt"},
    {file_kind::ods, "application/vnd.oasis.opendocument.spreadsheet", "ods"},
    {file_kind::rtf, "application/rtf", "rtf"},
    {file_kind::html, "text/html", "html"},
}};

constexpr file_type of(file_kind k) {
  return all_types[static_cast<size_t>(k)];
}

constexpr std::array<container_type, 9> all_containers{{
    {container_kind::zip, "application/zip", "zip"},
    {container_kind::tar, "application/x-tar", "tar"},
    {container_kind::tar_gz, "application/gzip", "tar.gz"},
    {container_kind::eml, "message/rfc822", "eml"},
    {container_kind::mbox, "application/mbox", "mbox"},
    {container_kind::seven_zip, "application/x-7z-compressed", "7z"},
    {container_kind::msg, "application/vnd.ms-outlook", "msg"},
    {container_kind::rar, "application/vnd.rar", "rar"},
    {container_kind::pst, "application/vnd.ms-outlook-pst", "pst"},
}};

constexpr container_type of(container_kind k) {
  return all_containers[static_cast<size_t>(k)];
}

/// "Name:" at the start of `line`: printable ASCII without blanks or a colon, then a colon.
bool is_header_line(std::string_view line) {
  auto colon = line.find(':');
  if (colon == 0 || colon == std::string_view::npos)
    return false;
  for (size_t i = 0; i < colon; ++i) {
    auto c = static_cast<unsigned char>(line[i]);
    if (c <= 32 || c >= 127)
      return false;
  }
  return true;
}

/// One of the header fields every e-mail carries, at the start of a line in `head`.
bool has_mail_header(std::string_view head) {
  constexpr std::array<std::string_view, 6> names{
      "from:", "to:", "subject:", "date:", "message-id:", "mime-version:"};
  size_t pos = 0;
  while (pos < head.size()) {
    auto end = head.find('\n', pos);
    auto line
        = head.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.empty() || line == "\r")
      break; // the end of the header
    for (auto name : names) {
      if (line.size() < name.size())
        continue;
      bool same = true;
      for (size_t i = 0; i < name.size() && same; ++i)
        same = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
      if (same)
        return true;
    }
    if (end == std::string_view::npos)
      break;
    pos = end + 1;
  }
  return false;
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size())
    return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i])
      return false;
  return true;
}

bool contains_nocase(std::string_view text, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= text.size(); ++i)
    if (starts_with_nocase(text.substr(i), needle))
      return true;
  return false;
}

uint32_t little_endian(std::string_view b, size_t at, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

/// The member names a ZIP's central directory lists (at most 256: an office document's parts
/// are a few dozen); empty when its end record or directory is not within the bytes.
std::vector<std::string_view> zip_member_names(std::string_view b) {
  std::vector<std::string_view> names;
  // The end of central directory record: 22 bytes and a comment of at most 64 KiB, so only the
  // file's last 64 KiB + 22 bytes are searched, however large the file.
  auto window = b.size() > 22 + 65535 ? b.size() - (22 + 65535) : 0;
  auto at = b.substr(window).rfind(std::string_view{"PK\x05\x06", 4});
  if (at == std::string_view::npos || window + at + 22 > b.size())
    return names;
  auto end = window + at;
  size_t pos = little_endian(b, end + 16, 4);
  auto count = little_endian(b, end + 10, 2);
  for (uint32_t i = 0; i < count && names.size() < 256; ++i) {
    if (pos + 46 > end || b.substr(pos, 4) != std::string_view{"PK\x01\x02", 4})
      break;
    auto name_length = little_endian(b, pos + 28, 2);
    auto skip = little_endian(b, pos + 30, 2) + little_endian(b, pos + 32, 2);
    if (pos + 46 + name_length > end)
      break;
    names.push_back(b.substr(pos + 46, name_length));
    pos += 46 + name_length + skip;
  }
  return names;
}

/// The office document a ZIP is (its members say), if any.
std::optional<file_kind> office_in_zip(std::string_view b) {
  if (b.size() < 30 || b.substr(0, 4) != std::string_view{"PK\x03\x04", 4})
    return std::nullopt;
  // OpenDocument: the first member is "mimetype", stored, its bytes the document's type.
  auto first_name = b.substr(30, little_endian(b, 26, 2));
  if (first_name == "mimetype") {
    auto content = b.substr(std::min(b.size(), 30 + 8 + size_t{little_endian(b, 28, 2)}), 64);
    auto names = zip_member_names(b);
    bool manifest = false;
    for (auto name : names)
      manifest = manifest || name == "META-INF/manifest.xml";
    if (!manifest)
      return std::nullopt;
    if (content.starts_with("application/vnd.oasis.opendocument.text"))
      return file_kind::odt;
    if (content.starts_with("application/vnd.oasis.opendocument.spreadsheet"))
      return file_kind::ods;
    return std::nullopt;
  }
  // Office Open XML: "[Content_Types].xml" and the main part's folder.
  bool content_types = false, word = false, xl = false;
  for (auto name : zip_member_names(b)) {
    content_types = content_types || name == "[Content_Types].xml";
    word = word || name.starts_with("word/");
    xl = xl || name.starts_with("xl/");
  }
  if (content_types && word != xl)
    return word ? file_kind::docx : file_kind::xlsx;
  return std::nullopt;
}

std::optional<file_kind> office_text_kind(std::string_view b) {
  if (b.starts_with("{\\rtf1")) {
    auto end = b.find_last_not_of(" \t\r\n\0");
    if (end != std::string_view::npos && b[end] == '}')
      return file_kind::rtf;
    return std::nullopt;
  }
  auto head = b;
  if (head.starts_with("\xEF\xBB\xBF"))
    head.remove_prefix(3);
  auto first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return std::nullopt;
  head.remove_prefix(first);
  if (!starts_with_nocase(head, "<!doctype html") && !starts_with_nocase(head, "<html"))
    return std::nullopt;
  if (contains_nocase(b, "<body") || contains_nocase(b, "</html>"))
    return file_kind::html;
  return std::nullopt;
}

} // namespace

std::optional<container_type> detect_container_type(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts(std::string_view{"PK\x03\x04", 4}) || starts(std::string_view{"PK\x05\x06", 4})) {
    if (office_in_zip(b))
      return std::nullopt;
    return of(container_kind::zip);
  }
  if (b.size() >= 262 && b.substr(257, 5) == "ustar")
    return of(container_kind::tar);
  if (starts(std::string_view{"\x1f\x8b", 2}))
    return of(container_kind::tar_gz);
  if (starts(std::string_view{"7z\xbc\xaf\x27\x1c", 6}))
    return of(container_kind::seven_zip);
  if (starts(std::string_view{"Rar!\x1a\x07\x00", 7})
      || starts(std::string_view{"Rar!\x1a\x07\x01\x00", 8}))
    return of(container_kind::rar);
  if (starts("!BDN") && b.size() >= 512 && (b.substr(8, 2) == "SM" || b.substr(8, 2) == "SO")) {
    switch (static_cast<unsigned char>(b[10])) {
    case 0x0E:
    case 0x0F:
    case 0x15:
    case 0x17:
    case 0x24:
      return of(container_kind::pst);
    default:
      return std::nullopt;
    }
  }
  if (starts(std::string_view{"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 8})) {
    // Directory entry names are UTF-16LE.
    static const std::string properties = [] {
      std::string wide;
      for (char c : std::string_view{"__properties_version1.0"})
        wide.append({c, '\0'});
      return wide;
    }();
    if (b.find(properties) != std::string_view::npos)
      return of(container_kind::msg);
    return std::nullopt;
  }
  auto head = b.substr(0, 4096);
  if (starts("From ")) {
    auto eol = head.find('\n');
    if (eol != std::string_view::npos && has_mail_header(head.substr(eol + 1)))
      return of(container_kind::mbox);
    return std::nullopt;
  }
  if (is_header_line(head.substr(0, head.find('\n'))) && has_mail_header(head))
    return of(container_kind::eml);
  return std::nullopt;
}

std::optional<container_type> container_type_of_mime(std::string_view mime) {
  for (const auto& t : all_containers)
    if (t.mime == mime)
      return t;
  return std::nullopt;
}

std::optional<file_type> detect_file_type(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts(std::string_view{"\x89PNG\r\n\x1a\n", 8}))
    return of(file_kind::png);
  if (starts(std::string_view{"\xFF\xD8\xFF", 3}))
    return of(file_kind::jpeg);
  if (starts(std::string_view{"II*\0", 4}) || starts(std::string_view{"MM\0*", 4}))
    return of(file_kind::tiff);
  if (starts("%PDF-"))
    return of(file_kind::pdf);
  if (auto office = office_in_zip(b))
    return of(*office);
  if (auto office = office_text_kind(b))
    return of(*office);
  // A header after some junk is still a PDF, unless the bytes are a container by their own
  // signature: a ZIP whose first member is a stored PDF has "%PDF-" within its first KiB.
  if (b.substr(0, 1024).find("%PDF-") != std::string_view::npos && !detect_container_type(b))
    return of(file_kind::pdf);
  return std::nullopt;
}

std::optional<file_type> file_type_of_mime(std::string_view mime) {
  for (const auto& t : all_types)
    if (t.mime == mime)
      return t;
  return std::nullopt;
}

} // namespace ingestd
