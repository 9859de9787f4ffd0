// What `ingestd transcribe` shares with `ingestd extract`: the file argument, the configuration
// and the file's transcription with the configured provider.
#pragma once

#include <string>

#include "app/cli.hpp"
#include "messages/transcription.hpp"

namespace ingestd::cli {

/// A command's one FILE argument and what it needs next.
struct transcribed_file {
  config cfg;
  std::string path;
  transcription text;
};

/// Takes FILE (no option but --json), loads the configuration and transcribes the file. A problem
/// is reported on stderr as "ingestd COMMAND: ..." and its exit code returned; `ok` means `out`
/// is filled.
int transcribe_argument(const arguments& args, const char* command, transcribed_file& out);

} // namespace ingestd::cli
