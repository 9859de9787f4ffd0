#include "adapters/notify/queue_event_sink.hpp"

#include <rapidjson/document.h>

namespace ingestd {

std::vector<std::pair<std::string, std::string>> event_attributes(std::string_view event_json) {
  std::vector<std::pair<std::string, std::string>> out;
  rapidjson::Document d;
  d.Parse(event_json.data(), event_json.size());
  if (d.HasParseError() || !d.IsObject())
    return out;
  auto add = [&out](const rapidjson::Value& object, const char* name) {
    auto it = object.FindMember(name);
    if (it != object.MemberEnd() && it->value.IsString() && it->value.GetStringLength() > 0)
      out.emplace_back(name, std::string{it->value.GetString(), it->value.GetStringLength()});
  };
  for (const char* name : {"type", "tenant_id", "document_id"})
    add(d, name);
  // A batch's events name it in their payload.
  if (auto payload = d.FindMember("payload"); payload != d.MemberEnd() && payload->value.IsObject())
    add(payload->value, "batch_id");
  return out;
}

void queue_event_sink::deliver(sink_event event, callback<void> done) {
  outgoing_message message{std::move(event.body), std::chrono::seconds{0}};
  message.attributes = event_attributes(message.body);
  std::vector<outgoing_message> messages;
  messages.push_back(std::move(message));
  queue_->send(std::move(messages),
               [done = std::move(done)](result<std::vector<batch_entry_result>> r) {
                 if (!r)
                   return done(r.error());
                 if (r->empty())
                   return done(error::make_transient("events.queue",
                                                     "the queue answered no entry for the event"));
                 if (r->front().failed)
                   return done(r->front().error);
                 done(result<void>{});
               });
}

} // namespace ingestd
