// Archives and e-mails made by the tests themselves (libarchive's writer), so that every case
// (a bomb, a traversal, an encrypted member, a truncated archive) is built on the spot.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ingestd::test {

/// What an archive entry is: a file (the default), a directory, or a link to `target`.
enum class entry_kind { file, directory, symlink, hardlink };

struct archive_file {
  std::string name;
  std::string bytes;
  entry_kind kind = entry_kind::file;
  /// The link's target (symlink, hardlink).
  std::string target;
};

/// `count` entries of `kind` named "<prefix><i>" (directories end with '/'), links to `target`.
inline std::vector<archive_file> many_entries(entry_kind kind, int count, const std::string& prefix,
                                              const std::string& target = {}) {
  std::vector<archive_file> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i)
    out.push_back({prefix + std::to_string(i) + (kind == entry_kind::directory ? "/" : ""),
                   {},
                   kind,
                   target});
  return out;
}

/// `format`: "zip", "zip-stored" (members stored, not deflated, as many zip tools write PDFs),
/// "tar" or "7z" (LZMA); `gzip`: a .tar.gz; `passphrase`: a ZipCrypto-encrypted zip.
inline std::string make_archive(const std::string& format, const std::vector<archive_file>& files,
                                bool gzip = false, const std::string& passphrase = {}) {
  archive* a = archive_write_new();
  if (format == "zip" || format == "zip-stored")
    archive_write_set_format_zip(a);
  else if (format == "tar")
    archive_write_set_format_pax_restricted(a);
  else if (format == "7z")
    archive_write_set_format_7zip(a);
  else
    throw std::invalid_argument("make_archive: no format " + format);
  if (format == "zip-stored" && archive_write_set_options(a, "zip:compression=store") != ARCHIVE_OK)
    throw std::runtime_error(std::string{"no stored zip: "} + archive_error_string(a));
  if (gzip)
    archive_write_add_filter_gzip(a);
  if (!passphrase.empty()) {
    if (archive_write_set_options(a, "zip:encryption=zipcrypt") != ARCHIVE_OK
        || archive_write_set_passphrase(a, passphrase.c_str()) != ARCHIVE_OK)
      throw std::runtime_error(std::string{"no zip encryption: "} + archive_error_string(a));
  }
  size_t size = 1u << 20;
  for (auto& f : files)
    size += f.bytes.size() + 1024;
  std::vector<char> buffer(size);
  size_t used = 0;
  if (archive_write_open_memory(a, buffer.data(), buffer.size(), &used) != ARCHIVE_OK)
    throw std::runtime_error(archive_error_string(a));
  for (auto& f : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, f.name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(f.bytes.size()));
    switch (f.kind) {
    case entry_kind::file:
      archive_entry_set_filetype(e, AE_IFREG);
      break;
    case entry_kind::directory:
      archive_entry_set_filetype(e, AE_IFDIR);
      break;
    case entry_kind::symlink:
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, f.target.c_str());
      break;
    case entry_kind::hardlink:
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_hardlink(e, f.target.c_str());
      break;
    }
    archive_entry_set_perm(e, f.kind == entry_kind::directory ? 0755 : 0644);
    if (archive_write_header(a, e) != ARCHIVE_OK)
      throw std::runtime_error(archive_error_string(a));
    if (!f.bytes.empty() && archive_write_data(a, f.bytes.data(), f.bytes.size()) < 0)
      throw std::runtime_error(archive_error_string(a));
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  return std::string(buffer.data(), used);
}

/// A small PDF-looking file (intake and the unpacker recognise it by "%PDF-").
inline std::string pdf_bytes(const std::string& text) {
  return "%PDF-1.4\n% " + text + "\n%%EOF\n";
}

inline std::string base64(const std::string& in) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16)
                 | (static_cast<unsigned char>(in[i + 1]) << 8)
                 | static_cast<unsigned char>(in[i + 2]);
    out += {table[(v >> 18) & 63], table[(v >> 12) & 63], table[(v >> 6) & 63], table[v & 63]};
    if ((out.size() % 77) == 76)
      out += "\r\n";
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size())
      v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < in.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

/// An RFC 822 e-mail with a text body and base64 attachments; its Message-ID `message_id`, or
/// the subject's first 8 characters at example.com.
inline std::string make_email(const std::string& subject, const std::string& body,
                              const std::vector<std::pair<std::string, std::string>>& attachments,
                              const std::string& from = "Alice <alice@example.com>",
                              const std::string& message_id = "") {
  std::string m = "From: " + from + "\r\nTo: Bob <bob@example.com>\r\nSubject: " + subject
                  + "\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\nMessage-ID: <"
                  + (message_id.empty() ? subject.substr(0, 8) + "@example.com" : message_id)
                  + ">\r\nMIME-Version: 1.0\r\n"
                    "Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
                    "--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
                  + body + "\r\n";
  for (const auto& [name, bytes] : attachments) {
    m.append("--b1\r\nContent-Type: application/octet-stream; name=\"").append(name);
    m.append("\"\r\nContent-Disposition: attachment; filename=\"").append(name);
    m.append("\"\r\nContent-Transfer-Encoding: base64\r\n\r\n")
        .append(base64(bytes))
        .append("\r\n");
  }
  m += "--b1--\r\n";
  return m;
}

} // namespace ingestd::test
