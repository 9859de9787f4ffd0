# Every external dependency of the project, found in one place. All come from Debian 12's
# packages; deploy/install-deps.sh installs them.
find_package(Threads REQUIRED)
find_package(CAF 0.17 REQUIRED)
find_package(PostgreSQL REQUIRED)
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)
# The tests' compressed bodies (zlib1g-dev).
find_package(ZLIB REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(RapidJSON REQUIRED)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs photo)
find_package(GTest REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(Tesseract REQUIRED IMPORTED_TARGET tesseract lept)
pkg_check_modules(Poppler REQUIRED IMPORTED_TARGET poppler-cpp)
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# The HTTP server of the intake, admin and review endpoints (cpp-httplib stays for test clients).
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
# Containers: archives through libarchive, e-mails through GMime, Outlook files through libgsf
# (.msg) and libpst (.pst, .ost).
find_package(LibArchive REQUIRED)
pkg_check_modules(GMime REQUIRED IMPORTED_TARGET gmime-3.0)
pkg_check_modules(GSF REQUIRED IMPORTED_TARGET libgsf-1)
pkg_check_modules(PST REQUIRED IMPORTED_TARGET libpst)
# The decoder helpers' seccomp filter (libseccomp-dev).
pkg_check_modules(Seccomp REQUIRED IMPORTED_TARGET libseccomp)

# The memory allocator of every executable (libjemalloc-dev), through ingestd_allocator, which
# ingestd_support links: a job allocates and frees small objects on every step, on every thread,
# and glibc's malloc took about a quarter of the node's CPU (bench/orchestration: 80-82 us of node
# CPU per document with glibc's, 61-63 with jemalloc). Off in the sanitizer build, whose
# AddressSanitizer brings its own allocator.
option(INGESTD_JEMALLOC "Link every executable with jemalloc" ON)
add_library(ingestd_allocator INTERFACE)
if(INGESTD_JEMALLOC)
  pkg_check_modules(Jemalloc REQUIRED IMPORTED_TARGET jemalloc)
  target_link_libraries(ingestd_allocator INTERFACE PkgConfig::Jemalloc)
endif()

# RapidJSON's Debian config exports variables, not a target.
if(NOT TARGET RapidJSON::RapidJSON)
  add_library(RapidJSON::RapidJSON INTERFACE IMPORTED)
  set_target_properties(RapidJSON::RapidJSON PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${RAPIDJSON_INCLUDE_DIRS}")
endif()
