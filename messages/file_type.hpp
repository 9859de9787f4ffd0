// The document types ingestd reads, recognised by their first bytes: one rule for intake, OCR,
// Document AI, the job and the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ingestd {

enum class file_kind : uint8_t { pdf, png, jpeg, tiff };

struct file_type {
  file_kind kind = file_kind::pdf;
  /// "application/pdf", "image/png", "image/jpeg", "image/tiff".
  std::string_view mime;
  /// "pdf", "png", "jpg", "tiff": the extension of the stored object's key.
  std::string_view ext;
};

/// PNG, JPEG and TIFF by their signature at byte 0; PDF by "%PDF-" anywhere in the first KiB
/// (readers accept a header after up to 1 KiB of junk). nullopt for anything else.
std::optional<file_type> detect_file_type(std::string_view bytes);

/// The supported type a MIME type names; nullopt for any other.
std::optional<file_type> file_type_of_mime(std::string_view mime);

} // namespace ingestd
