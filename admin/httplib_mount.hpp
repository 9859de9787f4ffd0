// An httplib::Server that stands for an admin endpoint's http_server::server, for code that
// registers its routes through an httplib::Server& (admin_server::mount's overload for it, and
// review_desk::mount(httplib::Server&), which finds the real server through it). Nothing is ever
// served by the httplib::Server itself.
#pragma once

#include <httplib.h>

#include "adapters/http_server/server.hpp"

namespace ingestd {

class httplib_mount final : public httplib::Server {
public:
  explicit httplib_mount(http_server::server& target) : target_(target) {}

  http_server::server& target() const { return target_; }

private:
  http_server::server& target_;
};

} // namespace ingestd
