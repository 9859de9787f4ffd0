# Writes OUTPUT: a C++ file defining ingestd::extraction_schema_json() from the JSON schema in
# INPUT (config/extraction_schema.json), so the binary needs no file at run time.
file(READ "${INPUT}" _schema)
if(_schema MATCHES "\\)ingestd_schema\"")
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )ingestd_schema\"")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from config/extraction_schema.json by adapters/llm/EmbedSchema.cmake.
#include \"adapters/llm/extraction_schema.hpp\"

namespace ingestd {

std::string_view extraction_schema_json() {
  static constexpr std::string_view text = R\"ingestd_schema(${_schema})ingestd_schema\";
  return text;
}

} // namespace ingestd
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
