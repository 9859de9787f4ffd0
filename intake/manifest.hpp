// A load file (`ingestd submit --manifest FILE.csv`): a CSV with a header row, one row per
// document. The column `path` names the file (relative paths are relative to the manifest's
// folder); every other column is metadata kept with the ingestion (source_metadata.metadata),
// shown by the API and on the review desk. The HTTP intake takes the same metadata as JSON.
//
// CSV as RFC 4180 writes it and spreadsheets export it: comma-separated, fields optionally in
// double quotes (a quote inside doubled), quoted fields may hold commas and line breaks, CRLF or
// LF line ends, a UTF-8 byte-order mark at the start ignored. Bounded: the whole file, the
// columns, a name and a value have limits; a row that breaks one, or that is not UTF-8, is
// refused with its line number and the others go on.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/result.hpp"

namespace ingestd {

struct manifest_limits {
  size_t max_bytes = 64u << 20;
  size_t max_columns = 64;
  size_t max_name_bytes = 64;
  size_t max_value_bytes = 4096;
};

/// One data row: its line (1-based, where the row starts), the path (also of a refused row, when
/// it has one), the metadata in column order (empty values left out), or the reason it is
/// refused.
struct manifest_row {
  size_t line = 0;
  std::string path;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string error;
};

/// The same metadata given over HTTP (X-Metadata, or the multipart field metadata): a JSON
/// object whose values are text, e.g. {"po_number":"4711","cost centre":"A-12"}, under the same
/// limits (members as columns, names and values as a row's); empty values are left out, members
/// keep their order. Anything else is the permanent error intake.invalid_metadata saying why.
result<std::vector<std::pair<std::string, std::string>>>
parse_metadata_json(std::string_view json, const manifest_limits& limits = {});

/// The rows of a manifest. A header that is missing, has no `path` column, repeats or leaves a
/// name empty, or a file over the size limit, is an error of the whole manifest (intake.manifest).
result<std::vector<manifest_row>> parse_manifest(std::string_view text,
                                                 const manifest_limits& limits = {});

} // namespace ingestd
