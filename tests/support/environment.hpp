// What the tests know about their surroundings: the source tree, the services the local stack
// started (deploy/local-stack.sh), and fresh names so that tests never share state.
#pragma once

#include <string>
#include <vector>

namespace ingestd::test {

/// The environment variable's value, or `fallback` when unset or empty.
std::string env_or(const char* name, const std::string& fallback);

/// The project's source directory (set by CTest as INGESTD_SOURCE_DIR).
std::string source_dir();

/// The bytes of a file of the test corpus (tests/fixtures/corpus/`name`); throws
/// std::runtime_error when it cannot be read.
std::string corpus_bytes(const std::string& name);

/// Writes `bytes` to `path`; throws std::runtime_error when it cannot.
void write_file(const std::string& path, const std::string& bytes);

/// The ingestd binary built alongside the tests (set by CTest as INGESTD_BINARY).
std::string ingestd_binary();

/// A name no other test uses, e.g. "t_1a2b3c4d5e6f": lower case, digits and '_', starting with
/// `prefix`, usable as a schema, queue or bucket name.
std::string unique_name(const std::string& prefix = "t");

/// A fresh empty directory under the system temp dir; the caller removes it.
std::string make_temp_dir(const std::string& prefix = "ingestd");

/// How a run of the ingestd binary ended, and what it printed.
struct cli_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs the built binary with `args` and `env` assignments ("KEY=value"), as a user would: no
/// stdin, the configuration from the built-in defaults (INGESTD_CONFIG unset), killed after
/// `timeout_seconds`.
cli_result run_ingestd(const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {}, int timeout_seconds = 120);

/// What a shell command printed (standard output and error together) and its exit code (-1 when
/// it could not run or was killed by a signal).
struct shell_result {
  int code = -1;
  std::string output;
};

/// Runs `command` with /bin/sh and waits for it.
shell_result run_shell(const std::string& command);

/// A loopback TCP port nobody listens on now (the kernel's pick), for a server the test starts.
int free_tcp_port();

} // namespace ingestd::test
