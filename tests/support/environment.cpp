// Test surroundings: environment, source tree and fresh names.
#include "tests/support/environment.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ingestd::test {

std::string env_or(const char* name, const std::string& fallback) {
  auto value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string{value} : fallback;
}

std::string source_dir() {
  auto dir = env_or("INGESTD_SOURCE_DIR", "");
  if (dir.empty())
    throw std::runtime_error("INGESTD_SOURCE_DIR is not set: run the tests through ctest");
  return dir;
}

std::string corpus_bytes(const std::string& name) {
  auto path = source_dir() + "/tests/fixtures/corpus/" + name;
  std::ifstream in{path, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in)
    throw std::runtime_error("cannot read the corpus file " + path);
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary};
  out << bytes;
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

std::string ingestd_binary() {
  auto path = env_or("INGESTD_BINARY", "");
  if (path.empty())
    throw std::runtime_error("INGESTD_BINARY is not set: run the tests through ctest");
  return path;
}

std::string unique_name(const std::string& prefix) {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 gen{std::random_device{}() ^ static_cast<uint64_t>(::getpid())};
  static constexpr char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string name = prefix + "_";
  auto bits = gen();
  for (int i = 0; i < 10; ++i, bits /= 36)
    name.push_back(digits[bits % 36]);
  name += std::to_string(counter++);
  return name;
}

std::string make_temp_dir(const std::string& prefix) {
  auto dir = std::filesystem::temp_directory_path() / unique_name(prefix);
  std::filesystem::create_directories(dir);
  return dir.string();
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return q + "'";
}

} // namespace

cli_result run_ingestd(const std::vector<std::string>& args, const std::vector<std::string>& env,
                       int timeout_seconds) {
  auto dir = make_temp_dir("ingestd_cli");
  std::string cmd = "env -u INGESTD_CONFIG";
  for (const auto& e : env)
    cmd.append(" ").append(shell_quote(e));
  cmd.append(" timeout ")
      .append(std::to_string(timeout_seconds))
      .append(" ")
      .append(shell_quote(ingestd_binary()));
  for (const auto& a : args)
    cmd.append(" ").append(shell_quote(a));
  cmd.append(" >")
      .append(shell_quote(dir + "/out"))
      .append(" 2>")
      .append(shell_quote(dir + "/err"))
      .append(" </dev/null");
  int status = std::system(cmd.c_str());
  cli_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir + "/out");
  r.err = slurp(dir + "/err");
  std::filesystem::remove_all(dir);
  return r;
}

shell_result run_shell(const std::string& command) {
  shell_result r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr)
    return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p))
    r.output.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

int free_tcp_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0
            && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (fd >= 0)
    ::close(fd);
  if (!ok)
    throw std::runtime_error("no free TCP port on 127.0.0.1");
  return ntohs(addr.sin_port);
}

} // namespace ingestd::test
