// Outlook data files (.pst, and the .ost of Outlook's offline cache, ANSI, Unicode and 4 KiB-page
// formats) read with libpst from memory: every message of every folder becomes an .eml member
// (headers, plain body, attachments as MIME parts, written with GMime), which the unpack stage
// takes apart in turn like any e-mail. Contacts, appointments and tasks are counted, not kept.
#include <gmime/gmime.h>
#include <libpst/libpst.h>
#include <libpst/timeconv.h>
// vbuf.h (pst_unicode_init) is the one libpst header without its own extern "C".
extern "C" {
#include <libpst/vbuf.h>
}

#include <cstdio>
#include <cstring>
#include <mutex>

#include "adapters/containers/gobject_ptr.hpp"
#include "adapters/containers/member_budget.hpp"
#include "adapters/containers/unpacker.hpp"

namespace ingestd {

namespace {

/// Folders inside folders deeper than this are not read (a hostile file's loop ends here too).
constexpr int max_folder_depth = 32;

// The file header's fields (MS-PST 2.2.2.6): the index type says which of two layouts follows.
constexpr uint32_t pst_signature = 0x4E444221; // "!BDN"
constexpr size_t index_type_at = 0x0A;
struct header_layout {
  size_t file_size, index_pointer, index_back, second_pointer, second_back, encryption;
};
constexpr header_layout ansi_layout{0xA8, 0xC4, 0xC0, 0xBC, 0xB8, 0x1CD};
constexpr header_layout unicode_layout{0xB8, 0xF0, 0xE8, 0xE0, 0xD8, 0x201};

uint64_t little_endian(std::string_view bytes, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

/// libpst opens files by name only; the decoder helpers may not write files, so the pst_file is
/// opened here from the header's fields as pst_open reads them, on a read-only stream over the
/// bytes. pst_close frees it like any other.
bool open_in_memory(pst_file& pf, std::string_view bytes) {
  std::memset(&pf, 0, sizeof pf);
  if (bytes.size() < 0x200 + 8 || little_endian(bytes, 0, 4) != pst_signature)
    return false;
  pf.ind_type = static_cast<unsigned char>(bytes[index_type_at]);
  switch (pf.ind_type) {
  case 0x0E: // ANSI (Outlook 97 to 2002)
  case 0x0F:
    pf.do_read64 = 0;
    break;
  case 0x15: // Unicode (Outlook 2003 on)
  case 0x17:
    pf.do_read64 = 1;
    break;
  case 0x24: // Unicode with 4 KiB pages (Outlook 2013's .ost)
    pf.do_read64 = 2;
    break;
  default:
    return false;
  }
  const auto& at = pf.do_read64 != 0 ? unicode_layout : ansi_layout;
  size_t width = pf.do_read64 != 0 ? 8 : 4;
  pf.encryption = static_cast<unsigned char>(bytes[at.encryption]);
  pf.index2_back = little_endian(bytes, at.second_back, width);
  pf.index2 = little_endian(bytes, at.second_pointer, width);
  pf.size = little_endian(bytes, at.file_size, width);
  pf.index1_back = little_endian(bytes, at.index_back, width);
  pf.index1 = little_endian(bytes, at.index_pointer, width);
  pf.fp = ::fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "rb");
  if (pf.fp == nullptr)
    return false;
  pf.cwd = ::strdup("/");
  pf.fname = ::strdup("document.pst");
  return true;
}

struct pst_closer {
  pst_file* pf;
  ~pst_closer() {
    if (pf->fp != nullptr)
      pst_close(pf);
  }
};

struct item_ptr {
  pst_item* p;
  explicit item_ptr(pst_item* item) : p(item) {}
  item_ptr(const item_ptr&) = delete;
  item_ptr& operator=(const item_ptr&) = delete;
  ~item_ptr() {
    if (p != nullptr)
      pst_freeItem(p);
  }
};

/// A string of the item in UTF-8 ("" when it has none).
std::string text(pst_item* item, pst_string& s) {
  if (s.str == nullptr)
    return {};
  pst_convert_utf8(item, &s);
  return s.str;
}

/// A folder's name as one component of a member's name: no separators, never "." or "..".
std::string folder_component(std::string name) {
  for (auto& c : name)
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20)
      c = '_';
  if (name.empty() || name == "." || name == "..")
    return "folder";
  return name.size() > 80 ? name.substr(0, 80) : name;
}

/// A property's text for a header: line breaks and control characters become spaces, blanks at
/// either end go, a long value is cut.
std::string header_value(std::string value) {
  for (auto& c : value)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = ' ';
  auto first = value.find_first_not_of(' ');
  if (first == std::string::npos)
    return {};
  value = value.substr(first, value.find_last_not_of(' ') - first + 1);
  if (value.size() > 900)
    value.resize(900);
  return value;
}

/// "Name: value\n" with the words outside ASCII encoded (RFC 2047), or "" for no value. Written
/// here rather than by GMime, which would parse the value as addresses: Outlook keeps display
/// names ("Lee  Dennis; Watson  Kimberly"), not addresses.
std::string header_line(const char* name, const std::string& value) {
  auto v = header_value(value);
  if (v.empty())
    return {};
  return std::string{name} + ": "
         + take_gstring(g_mime_utils_header_encode_text(nullptr, v.c_str(), "utf-8")) + "\n";
}

/// The From line: "Name <address>" when the sender has an address, else whichever is known.
std::string from_line(const std::string& name, const std::string& address) {
  auto a = header_value(address);
  auto n = header_value(name);
  if (a.find('@') == std::string::npos || a.find_first_of("<>\" ") != std::string::npos)
    return header_line("From", n.empty() ? a : n);
  if (n.empty())
    return "From: " + a + "\n";
  return "From: " + take_gstring(g_mime_utils_header_encode_phrase(nullptr, n.c_str(), "utf-8"))
         + " <" + a + ">\n";
}

class reader {
public:
  reader(pst_file& pf, const unpack_limits& limits, unpacked& out)
      : pf_(pf), limits_(limits), out_(out), budget_(limits, out) {}

  /// The messages of the folders under `d` (its children), `path` their folder's name.
  result<void> folder(pst_desc_tree* d, const std::string& path, int depth) {
    if (depth > max_folder_depth) {
      out_.problems.push_back("folder \"" + path + "\" is nested deeper than "
                              + std::to_string(max_folder_depth) + " folders: not read");
      return {};
    }
    for (; d != nullptr; d = d->next) {
      if (d->desc == nullptr) {
        ++unreadable_;
        continue;
      }
      item_ptr item{pst_parse_item(&pf_, d, nullptr)};
      if (item.p == nullptr) {
        ++unreadable_;
        continue;
      }
      if (item.p->folder != nullptr) {
        auto inner = path;
        if (!inner.empty())
          inner += '/';
        inner += folder_component(text(item.p, item.p->file_as));
        if (d->child != nullptr)
          if (auto r = folder(d->child, inner, depth + 1); !r)
            return r;
        continue;
      }
      if (item.p->email == nullptr
          || (item.p->type != PST_TYPE_NOTE && item.p->type != PST_TYPE_REPORT)) {
        // Contacts, appointments, tasks, notes: nothing to ingest, but they were read.
        if (auto r = budget_.count_entry(0); !r)
          return r;
        ++others_;
        continue;
      }
      if (auto r = message(item.p, path); !r)
        return r;
    }
    return {};
  }

  /// What the file held besides its messages, for the container's problems.
  void summarise() const {
    if (unreadable_ > 0)
      out_.problems.push_back(std::to_string(unreadable_) + " items could not be read: skipped");
    if (others_ > 0)
      out_.problems.push_back(std::to_string(others_)
                              + " contacts, appointments, tasks or notes: not documents, skipped");
  }

  size_t messages() const { return messages_; }

private:
  result<void> message(pst_item* item, const std::string& path) {
    ++messages_;
    auto* email = item->email;
    std::string headers;
    if (email->sent_date != nullptr) {
      char date[64];
      auto when = pst_fileTimeToUnixTime(email->sent_date);
      struct tm tm {};
      if (::gmtime_r(&when, &tm) != nullptr
          && std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S +0000", &tm) > 0)
        headers += header_line("Date", date);
    }
    headers += from_line(text(item, email->outlook_sender_name), text(item, email->sender_address));
    headers += header_line("To", text(item, email->sentto_address));
    headers += header_line("Cc", text(item, email->cc_address));
    headers += header_line("Subject", text(item, item->subject));
    headers += header_line("Message-ID", text(item, email->messageid));

    gobject_ptr<GMimeMultipart> parts{g_mime_multipart_new_with_subtype("mixed")};
    // The plain body; a message that has only an HTML body keeps that.
    auto body_text = text(item, item->body);
    bool html = body_text.empty() && email->htmlbody.str != nullptr;
    if (html)
      body_text = text(item, email->htmlbody);
    gobject_ptr<GMimeTextPart> body{g_mime_text_part_new_with_subtype(html ? "html" : "plain")};
    g_mime_text_part_set_text(body.p, body_text.c_str());
    g_mime_multipart_add(parts.p, GMIME_OBJECT(body.p));

    uint64_t bytes = body_text.size();
    int number = 0;
    for (auto* a = item->attach; a != nullptr; a = a->next) {
      ++number;
      auto name = member_file_name(text(item, a->filename2));
      if (name.empty())
        name = member_file_name(text(item, a->filename1));
      if (name.empty())
        name = "attachment-" + std::to_string(number) + ".bin";
      if (a->method == 5) { // an attached message
        out_.problems.push_back("message " + std::to_string(messages_) + ": attachment \"" + name
                                + "\" is an attached Outlook message: not unpacked");
        continue;
      }
      pst_binary data = pst_attach_to_mem(&pf_, a);
      std::string content(data.data != nullptr ? data.data : "", data.size);
      std::free(data.data);
      if (content.empty())
        continue; // by reference (a link), or unreadable: no bytes
      bytes += content.size();
      if (bytes > limits_.max_member_bytes)
        break; // the message is over the member limit already: named below
      gobject_ptr<GMimePart> part{g_mime_part_new_with_type("application", "octet-stream")};
      g_mime_part_set_filename(part.p, name.c_str());
      gobject_ptr<GMimeStream> stream{
          g_mime_stream_mem_new_with_buffer(content.data(), content.size())};
      gobject_ptr<GMimeDataWrapper> wrapper{
          g_mime_data_wrapper_new_with_stream(stream.p, GMIME_CONTENT_ENCODING_DEFAULT)};
      g_mime_part_set_content(part.p, wrapper.p);
      g_mime_part_set_content_encoding(part.p, GMIME_CONTENT_ENCODING_BASE64);
      g_mime_multipart_add(parts.p, GMIME_OBJECT(part.p));
    }
    auto member = (path.empty() ? std::string{} : path + "/") + "message-"
                  + std::to_string(messages_) + ".eml";
    if (bytes > limits_.max_member_bytes) {
      if (auto r = budget_.count_entry(0); !r)
        return r.error();
      out_.problems.push_back("member \"" + member + "\" is larger than "
                              + std::to_string(limits_.max_member_bytes)
                              + " bytes (containers.max_member_bytes): skipped");
      return {};
    }
    return budget_.add(std::move(member),
                       headers + "MIME-Version: 1.0\n"
                           + take_gstring(g_mime_object_to_string(GMIME_OBJECT(parts.p), nullptr)));
  }

  pst_file& pf_;
  const unpack_limits& limits_;
  unpacked& out_;
  member_budget budget_;
  size_t messages_ = 0;
  size_t unreadable_ = 0;
  size_t others_ = 0;
};

} // namespace

pst_unpacker::pst_unpacker() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_mime_init();
    pst_unicode_init();
  });
}

result<unpacked> pst_unpacker::unpack(std::string_view bytes, container_kind kind,
                                      const unpack_limits& limits) const {
  if (kind != container_kind::pst)
    return error::make_permanent("container.unsupported", "not an Outlook data file");
  pst_file pf;
  if (!open_in_memory(pf, bytes))
    return error::make_permanent("container.corrupt",
                                 "not an Outlook data file libpst reads (its header)");
  pst_closer closer{&pf};
  if (pst_load_index(&pf) != 0)
    return error::make_permanent("container.corrupt",
                                 "the Outlook data file's index is unreadable");
  pst_load_extended_attributes(&pf);
  item_ptr root{pf.d_head != nullptr ? pst_parse_item(&pf, pf.d_head, nullptr) : nullptr};
  if (root.p == nullptr || root.p->message_store == nullptr)
    return error::make_permanent("container.corrupt",
                                 "the Outlook data file has no readable message store");
  auto* top = pst_getTopOfFolders(&pf, root.p);
  if (top == nullptr)
    return error::make_permanent("container.corrupt",
                                 "the Outlook data file has no top of its folders");
  unpacked out;
  reader r{pf, limits, out};
  if (auto walked = r.folder(top->child, "", 0); !walked)
    return walked.error();
  r.summarise();
  out.subject = "Outlook data file: " + std::to_string(r.messages()) + " messages";
  return out;
}

} // namespace ingestd
