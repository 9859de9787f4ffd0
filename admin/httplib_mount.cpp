// admin_server::mount for routes registered through an httplib::Server (see httplib_mount.hpp).
#include "admin/httplib_mount.hpp"

#include "admin/admin_server.hpp"

namespace ingestd {

void admin_server::mount(const std::function<void(httplib::Server&)>& routes, int threads) {
  httplib_mount facade{*server_};
  routes(facade);
  server_->add_worker_threads(threads);
}

} // namespace ingestd
