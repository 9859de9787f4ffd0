# Finds the C++ Actor Framework 0.17 as Debian's libcaf-dev installs it (no CMake config, no
# pkg-config file) and defines the imported targets CAF::core and CAF::io.
find_path(CAF_INCLUDE_DIR NAMES caf/all.hpp)
find_library(CAF_CORE_LIBRARY NAMES caf_core)
find_library(CAF_IO_LIBRARY NAMES caf_io)

if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
       REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE "^#define CAF_VERSION ([0-9]+).*" "\\1" _caf_version "${_caf_version_line}")
  math(EXPR _caf_major "${_caf_version} / 10000")
  math(EXPR _caf_minor "(${_caf_version} / 100) % 100")
  math(EXPR _caf_patch "${_caf_version} % 100")
  set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION)

if(CAF_FOUND AND NOT TARGET CAF::core)
  find_package(Threads REQUIRED)
  add_library(CAF::core SHARED IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
  add_library(CAF::io SHARED IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
    INTERFACE_LINK_LIBRARIES CAF::core)
endif()
mark_as_advanced(CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY)
