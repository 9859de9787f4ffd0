// Office and web documents (DOCX, XLSX, ODT, ODS, RTF, HTML) converted to PDF by LibreOffice
// headless, in a confined process of its own per document:
//
//   daemon ──fork/exec──► `ingestd converter WORKDIR PROGRAM INPUT` (its own process group,
//   limits: RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_CPU, RLIMIT_CORE 0, RLIMIT_NOFILE; an environment of
//   HOME, TMPDIR (both the work folder), PATH and LANG alone)
//       └─ new user, mount, PID, IPC and network namespaces where the kernel allows them: the
//          whole file system read-only but the work folder, no network device, no other
//          process to see
//       └─ the converter's seccomp filter (adapters/sandbox/sandbox.hpp): no socket but local
//          ones, no connect, no tracing, not the kernel's wider surface
//       └─ exec LibreOffice: `--headless --convert-to pdf`, a fresh profile in the work folder
//
// The work folder (under TMPDIR) holds the document, the profile and the PDF, and is removed after
// each conversion. A conversion that outlives its deadline has its whole process group killed.
// The readers then read the PDF like any other (adapters/convert/converting_transcriber.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "messages/file_type.hpp"
#include "messages/result.hpp"

namespace ingestd {

struct office_converter_options {
  /// LibreOffice's program (found on PATH when it has no slash).
  std::string program = "soffice";
  /// The confining launcher: this program's `converter` subcommand.
  std::vector<std::string> launcher = {"/proc/self/exe", "converter"};
  /// Where work folders are made; empty: TMPDIR, or /tmp. Folders there that a killed node left
  /// (unchanged for an hour) are removed before the first conversion.
  std::string work_root;
  /// RLIMIT_AS of the conversion's processes.
  uint64_t memory_limit_bytes = uint64_t{4} << 30;
  /// The largest PDF (and any file the conversion writes: RLIMIT_FSIZE).
  uint64_t max_output_bytes = uint64_t{256} << 20;
};

/// The PDF `bytes` (a document of `type`, one that needs_conversion) converts to, by `deadline`.
/// Errors: convert.unavailable (LibreOffice is not installed, or the launcher could not start;
/// transient when this machine ran short of a work folder, a pipe or a process),
/// convert.failed (LibreOffice could not read the document: damaged, encrypted, not what its
/// signature says; its own words included), convert.too_large (the PDF is over the bound), all
/// permanent; convert.timeout (killed at the deadline) and convert.crashed (LibreOffice died on
/// a signal), transient and counted like a decoder helper's crash (errc::decoder_crash).
result<std::string> convert_to_pdf(std::string_view bytes, const file_type& type,
                                   const office_converter_options& options,
                                   std::chrono::steady_clock::time_point deadline);

/// `<program> converter WORKDIR PROGRAM INPUT`: confines itself as above and runs LibreOffice on
/// INPUT, the PDF written to WORKDIR/out. Returns (or exits with) LibreOffice's exit code; 127
/// when it cannot be run, 126 when the confinement could not be installed.
int converter_main(int argc, char** argv, int first);

} // namespace ingestd
