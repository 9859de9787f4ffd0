// The document types ingestd reads, recognised by their first bytes.
#include "messages/file_type.hpp"

#include <array>

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

} // namespace

std::optional<file_type> detect_file_type(std::string_view b) {
  auto starts = [&](std::string_view magic) { return b.substr(0, magic.size()) == magic; };
  if (starts(std::string_view{"\x89PNG\r\n\x1a\n", 8}))
    return of(file_kind::png);
  if (starts(std::string_view{"\xFF\xD8\xFF", 3}))
    return of(file_kind::jpeg);
  if (starts(std::string_view{"II*\0", 4}) || starts(std::string_view{"MM\0*", 4}))
    return of(file_kind::tiff);
  if (b.substr(0, 1024).find("%PDF-") != std::string_view::npos)
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
