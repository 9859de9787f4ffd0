#include "tests/support/http/connections.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace ingestd::test {

int connections_to(int port) {
  std::set<std::string> own;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    auto target = std::filesystem::read_symlink(fd.path(), ec).native();
    if (!ec && target.starts_with("socket:["))
      own.insert(target.substr(8, target.size() - 9));
  }
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line); // the header
  std::set<std::string> connected;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout
        >> inode;
    auto colon = remote.find(':');
    if (colon != std::string::npos && state == "01"
        && std::stoi(remote.substr(colon + 1), nullptr, 16) == port && own.contains(inode))
      connected.insert(inode);
  }
  return static_cast<int>(connected.size());
}

} // namespace ingestd::test
