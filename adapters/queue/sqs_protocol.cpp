// The Amazon SQS JSON protocol without I/O: what sqs_queue sends and how it reads the answers,
// including the awkward shapes real services send (absent keys, string numbers, header codes).
#include "adapters/queue/sqs_protocol.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "adapters/aws/encoding.hpp"
#include "messages/text.hpp"

namespace ingestd::sqs {

namespace {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

void key(json_writer& w, std::string_view k) {
  w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
}

void str(json_writer& w, std::string_view v) {
  w.String(v.data(), static_cast<rapidjson::SizeType>(v.size()));
}

/// A JSON object whose members `write_members` writes: every request body here is one.
template <class WriteMembers>
std::string json_object(WriteMembers write_members) {
  rapidjson::StringBuffer buf;
  json_writer w{buf};
  w.StartObject();
  write_members(w);
  w.EndObject();
  return std::string{buf.GetString(), buf.GetSize()};
}

/// A batch call's body: {"QueueUrl": ..., "Entries": [{"Id": ..., <the entry's own members>}]}.
template <class Entry, class WriteMembers>
std::string batch_request(std::string_view queue_url, const std::vector<Entry>& entries,
                          WriteMembers write_members) {
  return json_object([&](json_writer& w) {
    key(w, "QueueUrl");
    str(w, queue_url);
    key(w, "Entries");
    w.StartArray();
    for (auto& e : entries) {
      w.StartObject();
      key(w, "Id");
      str(w, e.id);
      write_members(w, e);
      w.EndObject();
    }
    w.EndArray();
  });
}

error bad_response(std::string what) {
  return error::make_transient("sqs.bad_response", "unexpected SQS answer: " + std::move(what));
}

result<rapidjson::Document> parse_json(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError())
    return bad_response("not JSON");
  if (!doc.IsObject())
    return bad_response("not a JSON object");
  return doc;
}

const rapidjson::Value* member(const rapidjson::Value& obj, const char* name) {
  if (!obj.IsObject())
    return nullptr;
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || it->value.IsNull())
    return nullptr;
  return &it->value;
}

std::string string_member(const rapidjson::Value& obj, const char* name) {
  auto v = member(obj, name);
  if (v == nullptr || !v->IsString())
    return {};
  return std::string{v->GetString(), v->GetStringLength()};
}

/// Attribute values are strings on the wire ("3"); tolerate numbers too, since emulators and
/// older services are not always consistent.
std::optional<int64_t> integer_value(const rapidjson::Value* v) {
  if (v == nullptr)
    return std::nullopt;
  if (v->IsInt64())
    return v->GetInt64();
  if (v->IsString()) {
    int64_t out = 0;
    auto s = std::string_view{v->GetString(), v->GetStringLength()};
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc{} && ptr == s.data() + s.size())
      return out;
  }
  return std::nullopt;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x))
                  == std::tolower(static_cast<unsigned char>(y));
         });
}

bool one_of(std::string_view code, std::initializer_list<std::string_view> codes) {
  return std::any_of(codes.begin(), codes.end(), [&](auto c) { return code == c; });
}

} // namespace

std::string target(std::string_view operation) {
  return "AmazonSQS." + std::string{operation};
}

bool valid_entry_id(std::string_view id) {
  if (id.empty() || id.size() > max_entry_id_length)
    return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

result<void> validate_body(std::string_view body) {
  if (body.size() > max_message_bytes)
    return error::make_permanent("sqs.message_too_large", "message body of "
                                                              + std::to_string(body.size())
                                                              + " bytes exceeds SQS's limit of "
                                                              + std::to_string(max_message_bytes));
  // Well-formed UTF-8: no stray continuation bytes, no overlong forms, no surrogates.
  size_t i = 0;
  while (i < body.size()) {
    auto c = static_cast<unsigned char>(body[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool ok = len != 0 && i + len <= body.size();
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; ok && k < len; ++k) {
      auto cc = static_cast<unsigned char>(body[i + k]);
      ok = (cc >> 6) == 0x2;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok)
      ok = !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000)
           && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok)
      return error::make_permanent("sqs.invalid_body", "message body is not valid UTF-8 (byte "
                                                           + std::to_string(i) + ")");
    i += len;
  }
  return {};
}

std::string receive_request(std::string_view queue_url, int max_messages, int wait_seconds,
                            int visibility_seconds) {
  return json_object([&](json_writer& w) {
    key(w, "QueueUrl");
    str(w, queue_url);
    key(w, "MaxNumberOfMessages");
    w.Int(max_messages);
    key(w, "WaitTimeSeconds");
    w.Int(wait_seconds);
    key(w, "VisibilityTimeout");
    w.Int(visibility_seconds);
    key(w, "MessageSystemAttributeNames");
    w.StartArray();
    str(w, "ApproximateReceiveCount");
    str(w, "SentTimestamp");
    w.EndArray();
  });
}

std::string delete_batch_request(std::string_view queue_url,
                                 const std::vector<receipt_entry>& entries) {
  return batch_request(queue_url, entries, [](json_writer& w, const receipt_entry& e) {
    key(w, "ReceiptHandle");
    str(w, e.receipt);
  });
}

std::string change_visibility_batch_request(std::string_view queue_url,
                                            const std::vector<visibility_entry>& entries) {
  return batch_request(queue_url, entries, [](json_writer& w, const visibility_entry& e) {
    key(w, "ReceiptHandle");
    str(w, e.receipt);
    key(w, "VisibilityTimeout");
    w.Int(e.timeout_seconds);
  });
}

std::string send_batch_request(std::string_view queue_url, const std::vector<send_entry>& entries) {
  return batch_request(queue_url, entries, [](json_writer& w, const send_entry& e) {
    key(w, "MessageBody");
    str(w, e.body);
    if (e.delay_seconds > 0) {
      key(w, "DelaySeconds");
      w.Int(e.delay_seconds);
    }
    if (!e.group.empty()) {
      key(w, "MessageGroupId");
      str(w, e.group);
    }
    bool any = std::any_of(e.attributes.begin(), e.attributes.end(),
                           [](const auto& a) { return !a.second.empty(); });
    if (!any)
      return;
    key(w, "MessageAttributes");
    w.StartObject();
    for (const auto& [name, value] : e.attributes) {
      if (value.empty())
        continue;
      key(w, name);
      w.StartObject();
      key(w, "DataType");
      str(w, "String");
      key(w, "StringValue");
      str(w, value);
      w.EndObject();
    }
    w.EndObject();
  });
}

std::string get_attributes_request(std::string_view queue_url,
                                   const std::vector<std::string>& names) {
  return json_object([&](json_writer& w) {
    key(w, "QueueUrl");
    str(w, queue_url);
    key(w, "AttributeNames");
    w.StartArray();
    for (auto& n : names)
      str(w, n);
    w.EndArray();
  });
}

std::string get_queue_url_request(std::string_view queue_name) {
  return json_object([&](json_writer& w) {
    key(w, "QueueName");
    str(w, queue_name);
  });
}

std::string create_queue_request(std::string_view queue_name,
                                 const std::map<std::string, std::string>& attributes) {
  return json_object([&](json_writer& w) {
    key(w, "QueueName");
    str(w, queue_name);
    if (!attributes.empty()) {
      key(w, "Attributes");
      w.StartObject();
      for (auto& [k, v] : attributes) {
        key(w, k);
        str(w, v);
      }
      w.EndObject();
    }
  });
}

std::string delete_queue_request(std::string_view queue_url) {
  return json_object([&](json_writer& w) {
    key(w, "QueueUrl");
    str(w, queue_url);
  });
}

std::string redrive_policy(std::string_view dead_letter_arn, int max_receive_count) {
  return json_object([&](json_writer& w) {
    key(w, "deadLetterTargetArn");
    str(w, dead_letter_arn);
    // A string, as the console and the SDK documentation write it; SQS accepts both.
    key(w, "maxReceiveCount");
    str(w, std::to_string(max_receive_count));
  });
}

result<std::vector<queue_message>> parse_receive(std::string_view body) {
  auto doc = parse_json(body);
  if (!doc)
    return doc.error();
  std::vector<queue_message> out;
  auto messages = member(*doc, "Messages");
  if (messages == nullptr)
    return out;
  if (!messages->IsArray())
    return bad_response("Messages is not an array");
  for (auto& m : messages->GetArray()) {
    if (!m.IsObject())
      return bad_response("a message is not an object");
    queue_message msg;
    msg.id = string_member(m, "MessageId");
    msg.receipt = string_member(m, "ReceiptHandle");
    msg.body = string_member(m, "Body");
    if (msg.id.empty() || msg.receipt.empty())
      return bad_response("a message without MessageId or ReceiptHandle");
    auto md5 = string_member(m, "MD5OfBody");
    if (!md5.empty() && !iequals(md5, aws::md5_hex(msg.body)))
      return bad_response("MD5OfBody does not match the body of message " + msg.id);
    if (auto attrs = member(m, "Attributes"); attrs != nullptr && attrs->IsObject()) {
      if (auto n = integer_value(member(*attrs, "ApproximateReceiveCount")))
        msg.receive_count = static_cast<int32_t>(std::clamp<int64_t>(*n, 0, INT32_MAX));
      if (auto t = integer_value(member(*attrs, "SentTimestamp")))
        msg.sent_at_ms = *t;
    }
    out.push_back(std::move(msg));
  }
  return out;
}

result<std::vector<batch_answer>> parse_batch(std::string_view body) {
  auto doc = parse_json(body);
  if (!doc)
    return doc.error();
  std::vector<batch_answer> out;
  if (auto ok = member(*doc, "Successful")) {
    if (!ok->IsArray())
      return bad_response("Successful is not an array");
    for (auto& e : ok->GetArray()) {
      batch_answer a;
      a.ok = true;
      a.id = string_member(e, "Id");
      a.message_id = string_member(e, "MessageId");
      out.push_back(std::move(a));
    }
  }
  if (auto failed = member(*doc, "Failed")) {
    if (!failed->IsArray())
      return bad_response("Failed is not an array");
    for (auto& e : failed->GetArray()) {
      batch_answer a;
      a.id = string_member(e, "Id");
      a.code = string_member(e, "Code");
      a.message = string_member(e, "Message");
      if (auto sf = member(e, "SenderFault"); sf != nullptr) {
        if (sf->IsBool())
          a.sender_fault = sf->GetBool();
        else if (sf->IsString())
          a.sender_fault
              = iequals(std::string_view{sf->GetString(), sf->GetStringLength()}, "true");
      }
      out.push_back(std::move(a));
    }
  }
  return out;
}

error entry_error(const batch_answer& failed) {
  auto code = failed.code.empty() ? std::string{"UnknownError"} : failed.code;
  return classify(code, failed.message, 200, failed.sender_fault);
}

result<std::map<std::string, std::string>> parse_attributes(std::string_view body) {
  auto doc = parse_json(body);
  if (!doc)
    return doc.error();
  std::map<std::string, std::string> out;
  auto attrs = member(*doc, "Attributes");
  if (attrs == nullptr)
    return out;
  if (!attrs->IsObject())
    return bad_response("Attributes is not an object");
  for (auto& [k, v] : attrs->GetObject()) {
    std::string value;
    if (v.IsString())
      value.assign(v.GetString(), v.GetStringLength());
    else if (v.IsInt64())
      value = std::to_string(v.GetInt64());
    else
      continue;
    out.emplace(std::string{k.GetString(), k.GetStringLength()}, std::move(value));
  }
  return out;
}

result<queue_stats> parse_stats(std::string_view body) {
  auto attrs = parse_attributes(body);
  if (!attrs)
    return attrs.error();
  auto number = [&](const char* name) -> result<int64_t> {
    auto it = attrs->find(name);
    if (it == attrs->end())
      return int64_t{0};
    int64_t out = 0;
    auto& s = it->second;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec != std::errc{} || ptr != s.data() + s.size())
      return bad_response(std::string{name} + " is not a number: '" + s + "'");
    return out;
  };
  queue_stats st;
  auto visible = number("ApproximateNumberOfMessages");
  auto in_flight = number("ApproximateNumberOfMessagesNotVisible");
  auto delayed = number("ApproximateNumberOfMessagesDelayed");
  for (auto* r : {&visible, &in_flight, &delayed})
    if (!*r)
      return r->error();
  st.visible = *visible;
  st.in_flight = *in_flight;
  st.delayed = *delayed;
  return st;
}

result<std::string> parse_queue_url(std::string_view body) {
  auto doc = parse_json(body);
  if (!doc)
    return doc.error();
  auto url = string_member(*doc, "QueueUrl");
  if (url.empty())
    return bad_response("no QueueUrl");
  return url;
}

int64_t retry_after_ms(const http_response& response) {
  return parse_retry_after_seconds(response.header("retry-after"));
}

error parse_error(const http_response& response) {
  std::string code;
  std::string message;
  std::optional<bool> sender_fault;
  // "AWS.SimpleQueueService.NonExistentQueue;Sender": the legacy query code and the fault.
  if (auto h = response.header("x-amzn-query-error"); !h.empty()) {
    auto semi = h.find(';');
    auto c = h.substr(0, semi);
    if (semi != std::string_view::npos) {
      auto fault = h.substr(semi + 1);
      if (iequals(fault, "Sender"))
        sender_fault = true;
      else if (iequals(fault, "Receiver"))
        sender_fault = false;
    }
    static constexpr std::string_view prefix = "AWS.SimpleQueueService.";
    if (c.substr(0, prefix.size()) == prefix)
      c.remove_prefix(prefix.size());
    code = std::string{c};
  }
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(response.body.data(), response.body.size());
  if (!doc.HasParseError() && doc.IsObject()) {
    if (code.empty()) {
      auto type = string_member(doc, "__type");
      if (type.empty())
        type = string_member(doc, "code");
      auto hash = type.rfind('#');
      code = hash == std::string::npos ? type : type.substr(hash + 1);
    }
    message = string_member(doc, "message");
    if (message.empty())
      message = string_member(doc, "Message");
  } else if (!response.body.empty()) {
    // A proxy or load balancer answered (HTML, plain text): keep a short excerpt.
    message = std::string{utf8_prefix(response.body, 200)};
  }
  if (code.empty())
    code = "http_" + std::to_string(response.status);
  if (message.empty())
    message = "HTTP " + std::to_string(response.status);
  auto err = classify(code, std::move(message), response.status, sender_fault);
  err.retry_after_ms = sqs::retry_after_ms(response);
  return err;
}

bool is_stale_receipt(std::string_view code) {
  return one_of(code, {"ReceiptHandleIsInvalid", "InvalidReceiptHandle", "MessageNotInflight"});
}

error classify(const std::string& code, std::string message, long status,
               std::optional<bool> sender_fault) {
  auto full = "sqs." + code;
  auto transient = [&] { return error::make_transient(std::move(full), std::move(message)); };
  auto permanent = [&] { return error::make_permanent(std::move(full), std::move(message)); };
  // Throttling comes as 400 or 403 (RequestThrottled) but is worth retrying.
  if (one_of(code, {"RequestThrottled", "ThrottlingException", "Throttling", "ThrottledException",
                    "KmsThrottled", "OverLimit", "RequestLimitExceeded", "TooManyRequestsException",
                    "ServiceUnavailable", "InternalError", "InternalFailure",
                    "ServiceUnavailableException", "RequestTimeout", "KmsUnavailable"}))
    return transient();
  if (one_of(code, {"QueueDoesNotExist",
                    "NonExistentQueue",
                    "AccessDenied",
                    "AccessDeniedException",
                    "SignatureDoesNotMatch",
                    "IncompleteSignature",
                    "InvalidClientTokenId",
                    "UnrecognizedClientException",
                    "MissingAuthenticationToken",
                    "InvalidSecurity",
                    "ExpiredToken",
                    "RequestExpired",
                    "InvalidParameterValue",
                    "InvalidParameterValueException",
                    "MissingParameter",
                    "InvalidAddress",
                    "InvalidAttributeName",
                    "InvalidMessageContents",
                    "InvalidBatchEntryId",
                    "BatchEntryIdsNotDistinct",
                    "TooManyEntriesInBatchRequest",
                    "EmptyBatchRequest",
                    "BatchRequestTooLong",
                    "ReceiptHandleIsInvalid",
                    "InvalidReceiptHandle",
                    "MessageNotInflight",
                    "QueueDeletedRecently",
                    "QueueNameExists",
                    "UnsupportedOperation",
                    "InvalidAction",
                    "OptInRequired"}))
    return permanent();
  if (status == 429 || status >= 500)
    return transient();
  if (sender_fault.has_value())
    return *sender_fault ? permanent() : transient();
  if (status >= 400)
    return permanent();
  // An entry failure without a fault hint: assume the server's side, which a retry may fix.
  return transient();
}

} // namespace ingestd::sqs
