// Small synchronous helpers for the integration tests: one GET through the real engine, answered
// within a deadline, and the stub's per-model request count.
#pragma once

#include <chrono>
#include <future>
#include <string>

#include <rapidjson/document.h>

#include "adapters/http/http_client.hpp"

namespace ingestd::test {

inline result<http_response> get_sync(http_client& http, const std::string& url) {
  auto p = std::make_shared<std::promise<result<http_response>>>();
  auto f = p->get_future();
  http_request req;
  req.url = url;
  req.total_timeout = std::chrono::seconds{5};
  http.submit(std::move(req), [p](result<http_response> r) { p->set_value(std::move(r)); });
  if (f.wait_for(std::chrono::seconds{10}) != std::future_status::ready)
    return error::make_transient("test.timeout", "no answer from " + url);
  return f.get();
}

/// A number field of the JSON object that GET `url` returns, or -1.
inline int get_count(http_client& http, const std::string& url) {
  auto r = get_sync(http, url);
  if (!r || r->status != 200)
    return -1;
  rapidjson::Document d;
  d.Parse(r->body.c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("count") || !d["count"].IsInt())
    return -1;
  return d["count"].GetInt();
}

} // namespace ingestd::test
