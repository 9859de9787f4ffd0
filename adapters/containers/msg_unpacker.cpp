// Outlook messages (.msg, an OLE2 compound file of MAPI properties) read with libgsf: the subject,
// sender, recipients, date and plain body from the message's property streams, each attachment's
// data as a member under its file name. An attached Outlook message (an embedded storage) is
// named in the problems, not read.
#include <gsf/gsf-infile-msole.h>
#include <gsf/gsf-infile.h>
#include <gsf/gsf-input-memory.h>
#include <gsf/gsf-input.h>
#include <gsf/gsf-utils.h>

#include <mutex>

#include "adapters/containers/gobject_ptr.hpp"
#include "adapters/containers/member_budget.hpp"
#include "adapters/containers/unpacker.hpp"

namespace ingestd {

namespace {

/// The bytes of a stream, or nullopt when it is larger than `max` (not read then).
std::optional<std::string> read_stream(GsfInput* in, uint64_t max) {
  auto size = gsf_input_size(in);
  if (size < 0 || static_cast<uint64_t>(size) > max)
    return std::nullopt;
  std::string out(static_cast<size_t>(size), '\0');
  if (size > 0
      && gsf_input_read(in, static_cast<size_t>(size), reinterpret_cast<guint8*>(out.data()))
             == nullptr)
    return std::nullopt;
  return out;
}

/// A property's text: UTF-16LE (type 001F) as UTF-8, 8-bit (001E) as it is.
std::string property_text(const std::string& bytes, bool wide) {
  if (!wide) {
    auto end = bytes.find('\0');
    return bytes.substr(0, end);
  }
  std::basic_string<gunichar2> units;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    auto u = static_cast<gunichar2>(static_cast<unsigned char>(bytes[i])
                                    | (static_cast<unsigned char>(bytes[i + 1]) << 8));
    if (u == 0)
      break;
    units.push_back(u);
  }
  return take_gstring(
      g_utf16_to_utf8(units.data(), static_cast<glong>(units.size()), nullptr, nullptr, nullptr));
}

/// The text of property `tag` ("0037": the subject) of `storage`, in either string type; "" when
/// it has none. Strings larger than `max` bytes are not read.
std::string text_property(GsfInfile* storage, const char* tag, uint64_t max) {
  for (bool wide : {true, false}) {
    auto name = std::string{"__substg1.0_"} + tag + (wide ? "001F" : "001E");
    gobject_ptr<GsfInput> in{gsf_infile_child_by_name(storage, name.c_str())};
    if (in.p == nullptr)
      continue;
    if (auto bytes = read_stream(in.p, max))
      return property_text(*bytes, wide);
  }
  return {};
}

/// A header's value in the message's transport headers (property 007D), or "".
std::string header_value(const std::string& headers, const std::string& name) {
  size_t pos = 0;
  while (pos < headers.size()) {
    auto end = headers.find('\n', pos);
    auto line = headers.substr(pos, end == std::string::npos ? end : end - pos);
    pos = end == std::string::npos ? headers.size() : end + 1;
    if (line.size() > name.size() && line[name.size()] == ':'
        && g_ascii_strncasecmp(line.c_str(), name.c_str(), name.size()) == 0) {
      auto value = line.substr(name.size() + 1);
      auto first = value.find_first_not_of(" \t");
      auto last = value.find_last_not_of(" \t\r");
      return first == std::string::npos ? std::string{} : value.substr(first, last - first + 1);
    }
  }
  return {};
}

} // namespace

msg_unpacker::msg_unpacker() {
  static std::once_flag once;
  std::call_once(once, [] { gsf_init(); });
}

result<unpacked> msg_unpacker::unpack(std::string_view bytes, container_kind kind,
                                      const unpack_limits& limits) const {
  if (kind != container_kind::msg)
    return error::make_permanent("container.unsupported", "not an Outlook message");
  gobject_ptr<GsfInput> input{gsf_input_memory_new(reinterpret_cast<const guint8*>(bytes.data()),
                                                   static_cast<gsf_off_t>(bytes.size()), FALSE)};
  GError* err = nullptr;
  gobject_ptr<GsfInfile> message{gsf_infile_msole_new(input.p, &err)};
  if (message.p == nullptr) {
    std::string why = err != nullptr ? err->message : "unknown";
    if (err != nullptr)
      g_error_free(err);
    return error::make_permanent("container.corrupt",
                                 "not a readable Outlook message (OLE2: " + why + ")");
  }
  unpacked out;
  member_budget budget{limits, out};
  auto text_max = limits.max_member_bytes;
  out.subject = text_property(message.p, "0037", text_max);
  out.body_text = text_property(message.p, "1000", limits.max_total_bytes);
  if (auto r = budget.count_entry(out.body_text.size()); !r)
    return r.error();
  auto headers = text_property(message.p, "007D", text_max);
  out.from = header_value(headers, "From");
  if (out.from.empty()) {
    auto name = text_property(message.p, "0C1A", text_max);
    auto address = text_property(message.p, "5D01", text_max);
    if (address.empty())
      address = text_property(message.p, "0C1F", text_max);
    out.from = address.empty() ? name : name.empty() ? address : name + " <" + address + ">";
  }
  out.to = header_value(headers, "To");
  if (out.to.empty())
    out.to = text_property(message.p, "0E04", text_max);
  out.date = header_value(headers, "Date");

  int children = gsf_infile_num_children(message.p);
  for (int i = 0; i < children; ++i) {
    const char* entry = gsf_infile_name_by_index(message.p, i);
    if (entry == nullptr || g_str_has_prefix(entry, "__attach_version1.0_#") == FALSE)
      continue;
    gobject_ptr<GsfInput> child{gsf_infile_child_by_index(message.p, i)};
    if (child.p == nullptr || !GSF_IS_INFILE(child.p))
      continue;
    auto* attachment = GSF_INFILE(child.p);
    auto name = member_file_name(text_property(attachment, "3707", text_max));
    if (name.empty())
      name = member_file_name(text_property(attachment, "3704", text_max));
    if (name.empty())
      name = member_file_name(text_property(attachment, "3001", text_max));
    if (name.empty())
      name = "attachment-" + std::to_string(budget.count() + 1) + ".bin";
    gobject_ptr<GsfInput> embedded{gsf_infile_child_by_name(attachment, "__substg1.0_3701000D")};
    if (embedded.p != nullptr) {
      if (auto r = budget.count_entry(0); !r)
        return r.error();
      out.problems.push_back("attachment \"" + name
                             + "\" is an attached Outlook message: not unpacked");
      continue;
    }
    gobject_ptr<GsfInput> data{gsf_infile_child_by_name(attachment, "__substg1.0_37010102")};
    if (data.p == nullptr) {
      if (auto r = budget.count_entry(0); !r)
        return r.error();
      continue; // an attachment by reference (a link), no bytes
    }
    // A member too large is counted and named without its bytes being read.
    auto size = gsf_input_size(data.p);
    if (size > 0 && static_cast<uint64_t>(size) > limits.max_member_bytes) {
      if (auto r = budget.count_entry(static_cast<uint64_t>(size)); !r)
        return r.error();
      out.problems.push_back("member \"" + name + "\" is larger than "
                             + std::to_string(limits.max_member_bytes)
                             + " bytes (containers.max_member_bytes): skipped");
      continue;
    }
    auto content = read_stream(data.p, limits.max_member_bytes);
    if (!content) {
      out.problems.push_back("attachment \"" + name + "\" could not be read: skipped");
      continue;
    }
    if (auto r = budget.add(std::move(name), std::move(*content)); !r)
      return r.error();
  }
  return out;
}

} // namespace ingestd
