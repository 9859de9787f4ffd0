// The document types ingestd reads, recognised by their first bytes: one rule for intake, OCR,
// Document AI, the job and the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ingestd {

/// PDF and images are read as they are; office and web documents (from docx on) are converted to
/// PDF first (needs_conversion), and that PDF is read.
enum class file_kind : uint8_t { pdf, png, jpeg, tiff, docx, xlsx, odt, ods, rtf, html };

struct file_type {
  file_kind kind = file_kind::pdf;
  /// "application/pdf", "image/png", "image/jpeg", "image/tiff", and the office types' own
  /// (application/vnd.openxmlformats-officedocument..., application/vnd.oasis.opendocument...,
  /// application/rtf, text/html).
  std::string_view mime;
  /// "pdf", "png", "jpg", "tiff", "docx", "xlsx", "odt", "ods", "rtf", "html": the extension of
  /// the stored object's key.
  std::string_view ext;
};

/// True for the kinds read through their conversion to PDF (LibreOffice, adapters/convert).
constexpr bool needs_conversion(file_kind kind) {
  return kind >= file_kind::docx;
}

/// PNG, JPEG and TIFF by their signature at byte 0; PDF by "%PDF-" at byte 0, or anywhere in the
/// first KiB (readers accept a header after up to 1 KiB of junk) when the bytes are not a
/// container (detect_container_type): a container's signature wins over a PDF inside it.
/// Office documents by two signs each, never the ZIP signature alone: DOCX and XLSX are ZIPs
/// with a "[Content_Types].xml" member and a "word/" or "xl/" part; ODT and ODS are ZIPs whose
/// first member, "mimetype", names the OpenDocument type and whose directory lists
/// "META-INF/manifest.xml"; RTF starts "{\rtf1" and
/// ends with "}"; HTML starts (after a byte-order mark and blanks) with "<!DOCTYPE html" or
/// "<html" and has a "<body" or "</html>". nullopt for anything else.
std::optional<file_type> detect_file_type(std::string_view bytes);

/// The supported type a MIME type names; nullopt for any other.
std::optional<file_type> file_type_of_mime(std::string_view mime);

/// Containers: files the unpack stage takes apart into child documents.
enum class container_kind : uint8_t { zip, tar, tar_gz, eml, mbox, seven_zip, msg, rar, pst };

struct container_type {
  container_kind kind = container_kind::zip;
  /// "application/zip", "application/x-tar", "application/gzip", "message/rfc822",
  /// "application/mbox", "application/x-7z-compressed", "application/vnd.ms-outlook",
  /// "application/vnd.rar", "application/vnd.ms-outlook-pst".
  std::string_view mime;
  /// "zip", "tar", "tar.gz", "eml", "mbox", "7z", "msg", "rar", "pst".
  std::string_view ext;
};

/// ZIP by "PK\3\4" (or an empty archive's "PK\5\6") unless it is an office document
/// (detect_file_type), TAR by "ustar" at byte 257, gzip (a
/// .tar.gz: the unpacker checks the tar inside) by 1F 8B, 7z by "7z" BC AF 27 1C, RAR by
/// "Rar!" 1A 07 and the version byte of RAR 1.5-4 (00) or RAR 5 (01 00), an Outlook
/// message (.msg) by the OLE2 compound file's D0 CF 11 E0 A1 B1 1A E1 and, anywhere in it, the
/// name of a message's property stream "__properties_version1.0" (a .doc or .xls has the first
/// and not the second), an Outlook data file (.pst or .ost) by "!BDN", the client's "SM" or "SO"
/// and an index type libpst reads (ANSI, Unicode, 4 KiB pages), an mbox by a leading "From " line,
/// an e-mail by a first line that is an RFC 822 header field and a From:, To:, Subject:, Date:,
/// Message-ID: or MIME-Version: header within the first 4 KiB. nullopt for anything else.
std::optional<container_type> detect_container_type(std::string_view bytes);

/// The container type a MIME type names; nullopt for any other.
std::optional<container_type> container_type_of_mime(std::string_view mime);

} // namespace ingestd
