// Outlook messages (.msg) made by the tests (header-only; link PkgConfig::GSF): the layout Outlook
// writes (MS-OXMSG), an OLE2 compound file written with libgsf: the message's property streams
// (subject, body, sender, transport headers) and one storage per attachment (its file name and
// data), or per attached Outlook message.
#pragma once

#include <gsf/gsf-outfile-msole.h>
#include <gsf/gsf-outfile.h>
#include <gsf/gsf-output-memory.h>
#include <gsf/gsf-utils.h>

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ingestd::test {

struct outlook_attachment {
  std::string name;
  std::string bytes;
  /// An attached Outlook message (an embedded storage) instead of a file.
  bool embedded_message = false;
};

namespace outlook_detail {

/// UTF-8 as UTF-16LE, as a 001F property holds it (with its terminating zero).
inline std::string utf16le(const std::string& text) {
  glong n = 0;
  gunichar2* units
      = g_utf8_to_utf16(text.c_str(), static_cast<glong>(text.size()), nullptr, &n, nullptr);
  if (units == nullptr)
    throw std::runtime_error("not UTF-8: " + text);
  std::string out;
  for (glong i = 0; i <= n; ++i) {
    gunichar2 u = i < n ? units[i] : 0;
    out.push_back(static_cast<char>(u & 0xff));
    out.push_back(static_cast<char>(u >> 8));
  }
  g_free(units);
  return out;
}

inline void write_stream(GsfOutfile* parent, const std::string& name, const std::string& bytes) {
  GsfOutput* s = gsf_outfile_new_child(parent, name.c_str(), FALSE);
  gsf_output_write(s, bytes.size(), reinterpret_cast<const guint8*>(bytes.data()));
  gsf_output_close(s);
  g_object_unref(s);
}

inline void write_text(GsfOutfile* parent, const char* tag, const std::string& text) {
  write_stream(parent, std::string{"__substg1.0_"} + tag + "001F", utf16le(text));
}

/// The fixed-size properties stream (its header only: the reader does not need its entries).
inline void write_properties(GsfOutfile* parent, size_t header_bytes) {
  write_stream(parent, "__properties_version1.0", std::string(header_bytes, '\0'));
}

} // namespace outlook_detail

inline std::string make_outlook_message(const std::string& subject, const std::string& body,
                                        const std::vector<outlook_attachment>& attachments,
                                        const std::string& from = "Alice <alice@example.com>",
                                        const std::string& to = "Bob <bob@example.com>") {
  using namespace outlook_detail;
  static std::once_flag once;
  std::call_once(once, [] { gsf_init(); });
  GsfOutput* mem = gsf_output_memory_new();
  GsfOutfile* msg = gsf_outfile_msole_new(mem);
  write_properties(msg, 32);
  write_text(msg, "0037", subject);
  write_text(msg, "1000", body);
  write_text(msg, "0C1A", from);
  write_text(msg, "0E04", to);
  write_text(msg, "007D",
             "From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject
                 + "\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n");
  for (size_t i = 0; i < attachments.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "__attach_version1.0_#%08zX", i);
    auto* storage = GSF_OUTFILE(gsf_outfile_new_child(msg, name, TRUE));
    write_properties(storage, 8);
    const auto& a = attachments[i];
    write_text(storage, "3707", a.name);
    write_text(storage, "3001", a.name);
    if (a.embedded_message) {
      auto* inner = GSF_OUTFILE(gsf_outfile_new_child(storage, "__substg1.0_3701000D", TRUE));
      write_properties(inner, 24);
      write_text(inner, "0037", a.name);
      gsf_output_close(GSF_OUTPUT(inner));
      g_object_unref(inner);
    } else {
      write_stream(storage, "__substg1.0_37010102", a.bytes);
    }
    gsf_output_close(GSF_OUTPUT(storage));
    g_object_unref(storage);
  }
  gsf_output_close(GSF_OUTPUT(msg));
  g_object_unref(msg);
  std::string out(
      reinterpret_cast<const char*>(gsf_output_memory_get_bytes(GSF_OUTPUT_MEMORY(mem))),
      static_cast<size_t>(gsf_output_size(mem)));
  g_object_unref(mem);
  return out;
}

} // namespace ingestd::test
