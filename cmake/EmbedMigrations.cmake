# Writes OUTPUT: a C++ file defining ingestd::embedded_migrations() from the SQL files in
# SOURCES (a ;-list of NNN_name.sql). Run by the ingestd_config target at build time.
string(REPLACE " " ";" SOURCES "${SOURCES}")
set(_body "")
foreach(_file IN LISTS SOURCES)
  get_filename_component(_name "${_file}" NAME)
  string(REGEX MATCH "^([0-9]+)_" _match "${_name}")
  if(NOT _match)
    message(FATAL_ERROR "migration ${_name} does not start with a number and '_'")
  endif()
  math(EXPR _version "${CMAKE_MATCH_1}")
  file(READ "${_file}" _sql)
  string(APPEND _body "    {${_version}, \"${_name}\", R\"ingestd_sql(${_sql})ingestd_sql\"},\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from config/migrations/ by cmake/EmbedMigrations.cmake.
#include \"adapters/db/migrator.hpp\"

namespace ingestd {

const std::vector<migration>& embedded_migrations() {
  static const std::vector<migration> all{
${_body}  };
  return all;
}

} // namespace ingestd
")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
