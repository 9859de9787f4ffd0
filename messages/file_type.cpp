// The document types ingestd reads, recognised by their first bytes.
#include "messages/file_type.hpp"

#include <array>
#include <cctype>
#include <string>

namespace ingestd {

namespace {

constexpr std::array<file_type, 4> all_types{{
    {file_kind::pdf, "application/pdf", "pdf"},
    {file_kind::png, "image/png", "png"},
    {file_kind::jpeg, "image/jpeg", "jpg"},
    {file_kind::tiff, "image/tiff", "tiff"},
}};

constexpr file_type of(file_kind k) {
  return all_types[static_cast<size_t>(k)];
}

constexpr std::array<container_type, 7> all_containers{{
    {container_kind::zip, "application/zip", "zip"},
    {container_kind::tar, "application/x-tar", "tar"},
    {container_kind::tar_gz, "application/gzip", "tar.gz"},
    {container_kind::eml, "message/rfc822", "eml"},
    {container_kind::mbox, "application/mbox", "mbox"},
    {container_kind::seven_zip, "application/x-7z-compressed", "7z"},
    {container_kind::msg, "application/vnd.ms-outlook", "msg"},
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

} // namespace

std::optional<container_type> detect_container_type(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts(std::string_view{"PK\x03\x04", 4}) || starts(std::string_view{"PK\x05\x06", 4}))
    return of(container_kind::zip);
  if (b.size() >= 262 && b.substr(257, 5) == "ustar")
    return of(container_kind::tar);
  if (starts(std::string_view{"\x1f\x8b", 2}))
    return of(container_kind::tar_gz);
  if (starts(std::string_view{"7z\xbc\xaf\x27\x1c", 6}))
    return of(container_kind::seven_zip);
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
