// review_desk::mount on the httplib::Server that admin_server::mount hands out to routes written
// for it (see admin/httplib_mount.hpp): the routes go to the admin endpoint's http_server.
#include <stdexcept>

#include "admin/httplib_mount.hpp"
#include "review/review_desk.hpp"

namespace ingestd {

void review_desk::mount(httplib::Server& server) {
  auto* facade = dynamic_cast<httplib_mount*>(&server);
  if (facade == nullptr)
    throw std::invalid_argument("review_desk::mount: the desk is served by an admin endpoint; "
                                "mount it through admin_server::mount");
  mount(facade->target());
}

} // namespace ingestd
