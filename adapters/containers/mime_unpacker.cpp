// E-mails read with GMime: the body as text, each attachment (decoded) and each attached message
// (as an .eml of its own) as a member; an mbox's messages each as an .eml member, which the unpack
// stage takes apart in turn.
#include <gmime/gmime.h>

#include <mutex>

#include "adapters/containers/gobject_ptr.hpp"
#include "adapters/containers/member_budget.hpp"
#include "adapters/containers/unpacker.hpp"

namespace ingestd {

namespace {

std::string take(char* s) {
  return take_gstring(s);
}

std::string str(const char* s) {
  return s != nullptr ? std::string{s} : std::string{};
}

std::string extension_of(GMimeContentType* type) {
  auto sub = str(g_mime_content_type_get_media_subtype(type));
  if (sub == "pdf")
    return ".pdf";
  if (sub == "jpeg")
    return ".jpg";
  if (sub.empty())
    return ".bin";
  return "." + sub;
}

/// The text of an HTML body, its tags dropped (enough for search and review).
std::string html_text(const std::string& html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<')
      in_tag = true;
    else if (c == '>') {
      in_tag = false;
      out.push_back(' ');
    } else if (!in_tag)
      out.push_back(c);
  }
  return out;
}

class walker {
public:
  walker(const unpack_limits& limits, unpacked& out) : budget_(limits, out), out_(out) {}

  result<void> count_entry(uint64_t bytes) { return budget_.count_entry(bytes); }
  result<void> add(std::string name, std::string bytes) {
    return budget_.add(std::move(name), std::move(bytes));
  }

  result<void> walk(GMimeObject* obj) {
    if (obj == nullptr)
      return {};
    if (GMIME_IS_MULTIPART_ENCRYPTED(obj) || GMIME_IS_APPLICATION_PKCS7_MIME(obj))
      return error::make_permanent("container.encrypted",
                                   "the e-mail holds an encrypted part; it is not read");
    if (GMIME_IS_MULTIPART(obj)) {
      if (auto r = count_entry(0); !r)
        return r;
      auto* multi = GMIME_MULTIPART(obj);
      int n = g_mime_multipart_get_count(multi);
      for (int i = 0; i < n; ++i)
        if (auto r = walk(g_mime_multipart_get_part(multi, i)); !r)
          return r;
      return {};
    }
    if (GMIME_IS_MESSAGE_PART(obj)) {
      auto* message = g_mime_message_part_get_message(GMIME_MESSAGE_PART(obj));
      if (message == nullptr)
        return count_entry(0);
      auto name
          = member_file_name(str(g_mime_object_get_content_disposition_parameter(obj, "filename")));
      if (name.empty())
        name = "message-" + std::to_string(count() + 1) + ".eml";
      return add(std::move(name), take(g_mime_object_to_string(GMIME_OBJECT(message), nullptr)));
    }
    if (!GMIME_IS_PART(obj))
      return count_entry(0); // message/partial, message/external-body: a reference, not read
    auto* part = GMIME_PART(obj);
    auto* type = g_mime_object_get_content_type(obj);
    auto file_name = member_file_name(str(g_mime_part_get_filename(part)));
    bool text = g_mime_content_type_is_type(type, "text", "*");
    if (!g_mime_part_is_attachment(part) && file_name.empty() && text && GMIME_IS_TEXT_PART(obj)) {
      auto body = take(g_mime_text_part_get_text(GMIME_TEXT_PART(obj)));
      if (auto r = count_entry(body.size()); !r)
        return r;
      bool html = g_mime_content_type_is_type(type, "text", "html");
      if (!html && plain_.empty())
        plain_ = std::move(body);
      else if (html && html_.empty())
        html_ = html_text(body);
      return {};
    }
    auto* content = g_mime_part_get_content(part);
    if (content == nullptr)
      return count_entry(0);
    gobject_ptr<GMimeStream> mem{g_mime_stream_mem_new()};
    if (g_mime_data_wrapper_write_to_stream(content, mem.p) < 0) {
      out_.problems.push_back("attachment \"" + file_name + "\" could not be decoded: skipped");
      return {};
    }
    auto* array = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(mem.p));
    std::string bytes(reinterpret_cast<const char*>(array->data), array->len);
    if (file_name.empty())
      file_name = "attachment-" + std::to_string(count() + 1) + extension_of(type);
    return add(std::move(file_name), std::move(bytes));
  }

  std::string body() const { return plain_.empty() ? html_ : plain_; }
  size_t count() const { return budget_.count(); }

private:
  member_budget budget_;
  unpacked& out_;
  std::string plain_, html_;
};

std::string address_list(InternetAddressList* list) {
  return list != nullptr ? take(internet_address_list_to_string(list, nullptr, FALSE))
                         : std::string{};
}

/// A header's addresses; where none parse (display names only, as Outlook keeps recipients:
/// "Lee  Dennis; Watson  Kimberly"), its text, decoded.
std::string addresses(GMimeMessage* message, InternetAddressList* list, const char* header) {
  auto parsed = address_list(list);
  if (!parsed.empty())
    return parsed;
  const char* raw = g_mime_object_get_header(GMIME_OBJECT(message), header);
  return raw != nullptr ? take(g_mime_utils_header_decode_text(nullptr, raw)) : std::string{};
}

} // namespace

mime_unpacker::mime_unpacker() {
  static std::once_flag once;
  std::call_once(once, [] { g_mime_init(); });
}

result<unpacked> mime_unpacker::unpack(std::string_view bytes, container_kind kind,
                                       const unpack_limits& limits) const {
  if (kind != container_kind::eml && kind != container_kind::mbox)
    return error::make_permanent("container.unsupported", "not an e-mail or mbox");
  gobject_ptr<GMimeStream> stream{g_mime_stream_mem_new_with_buffer(bytes.data(), bytes.size())};
  gobject_ptr<GMimeParser> parser{g_mime_parser_new_with_stream(stream.p)};
  unpacked out;
  walker w{limits, out};

  if (kind == container_kind::mbox) {
    g_mime_parser_set_format(parser.p, GMIME_FORMAT_MBOX);
    while (!g_mime_parser_eos(parser.p)) {
      gobject_ptr<GMimeMessage> message{g_mime_parser_construct_message(parser.p, nullptr)};
      if (message.p == nullptr) {
        if (out.members.empty() && w.count() == 0)
          return error::make_permanent("container.corrupt",
                                       "no message could be read from the mbox");
        out.problems.push_back("the mbox could not be read past message "
                               + std::to_string(w.count()));
        break;
      }
      auto name = "message-" + std::to_string(w.count() + 1) + ".eml";
      if (auto r
          = w.add(std::move(name), take(g_mime_object_to_string(GMIME_OBJECT(message.p), nullptr)));
          !r)
        return r.error();
    }
    if (w.count() == 0)
      return error::make_permanent("container.corrupt", "the mbox holds no message");
    return out;
  }

  gobject_ptr<GMimeMessage> message{g_mime_parser_construct_message(parser.p, nullptr)};
  if (message.p == nullptr)
    return error::make_permanent("container.corrupt", "not a readable RFC 822 message");
  if (auto r = w.walk(g_mime_message_get_mime_part(message.p)); !r)
    return r.error();
  out.body_text = w.body();
  out.from = addresses(message.p, g_mime_message_get_from(message.p), "From");
  out.to = addresses(message.p, g_mime_message_get_to(message.p), "To");
  out.subject = str(g_mime_message_get_subject(message.p));
  out.date = str(g_mime_object_get_header(GMIME_OBJECT(message.p), "Date"));
  return out;
}

} // namespace ingestd
