# One helper registers every test executable with CTest, always with a TIMEOUT.
#
#   ingestd_add_test(NAME unit_config SOURCES config_test.cpp LIBS ingestd_config
#                    KIND gtest|caf TIMEOUT 60 LABELS unit [RESOURCE_LOCK postgres]
#                    [SUITES suite...] [COST seconds])
#
# GoogleTest executables link gtest_main; CAF-DSL executables define their own main through
# caf/test/unit_test_impl.hpp. The two kinds never share an executable.
#
# SUITES: one executable for several test files, compiled and linked once, and one CTest entry
# per suite: a GoogleTest suite's entry is named after it (`ctest -R e2e_daemon_crash` runs that
# suite's process alone), a CAF suite's NAME_suite (`actors_ingest_job`, the runner's
# `-s ingest_job`; no suite's name may be part of another's). An
# entry whose filter selects no test fails, so a renamed suite is noticed.
# Per-entry properties (another TIMEOUT, RUN_SERIAL) are set on the suite's name afterwards.
#
# Each label also names a target that builds its executables (ingestd_tests_unit,
# ingestd_tests_actors, ...): a build that runs only some labels (the sanitizer build's) builds
# only those.
#
# COST: about how many seconds the entry takes on a 2-core machine, for the long ones. CTest
# starts the costliest first (a fresh build has no measured times yet), so that no long entry
# starts last and runs alone at the end of the suite.
#
# Every entry runs Tesseract as the daemon does (app/main.cpp, the decoder helpers): with one
# OpenMP thread (OMP_THREAD_LIMIT=1). OpenMP's own threads only spin against the entries beside
# them: unit_ocr_preprocessing took 50 s of wall time and 55 s of CPU (24 of them in the kernel)
# with OpenMP's default, 11 s and 14 s with one thread.
#
# INGESTD_TEST_TIMEOUT_FACTOR multiplies every TIMEOUT: the sanitizer build (preset sanitize) sets
# it, as its tests run a few times slower and the test command runs them at the lowest CPU
# priority beside the suite. A deadline inside a test is not stretched.
set(INGESTD_TEST_TIMEOUT_FACTOR 1 CACHE STRING "Factor on every test's TIMEOUT (slow builds)")

function(ingestd_add_test)
  cmake_parse_arguments(T "" "NAME;KIND;TIMEOUT;COST" "SOURCES;LIBS;LABELS;RESOURCE_LOCK;ENVIRONMENT;SUITES" ${ARGN})
  if(NOT T_TIMEOUT)
    message(FATAL_ERROR "ingestd_add_test(${T_NAME}): TIMEOUT is required")
  endif()
  if(NOT T_KIND)
    set(T_KIND gtest)
  endif()
  list(LENGTH T_SOURCES sources)
  if(sources GREATER 1 AND INGESTD_UNITY_BUILD)
    # An executable of several files is compiled in batches of eight files, one translation unit
    # each, as the product's libraries: the test framework's and the project's templates are
    # instantiated and compiled once per batch (integration_db's twelve files took 77 s of compiler
    # time one by one, 23 s as one). Names in the files' anonymous namespaces must differ. The
    # batches include their files by paths relative to the source tree, not as CMake's own unity
    # build does, by absolute path: the tests' __FILE__ (every assertion's) would hold the clone's
    # path, and no fresh clone would find a batch in the compiler cache.
    set(batches)
    set(batch "")
    set(in_batch 0)
    foreach(source IN LISTS T_SOURCES)
      get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      file(RELATIVE_PATH path "${PROJECT_SOURCE_DIR}" "${path}")
      # Each CAF test file names its suite in CAF_SUITE before it includes the test DSL.
      string(APPEND batch "#undef CAF_SUITE\n#include \"${path}\"\n")
      math(EXPR in_batch "${in_batch} + 1")
      if(in_batch EQUAL 8)
        list(APPEND batches "${batch}")
        set(batch "")
        set(in_batch 0)
      endif()
    endforeach()
    if(in_batch GREATER 0)
      list(APPEND batches "${batch}")
    endif()
    set(unity_sources)
    set(index 0)
    foreach(batch IN LISTS batches)
      set(unity_source "${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_unity/batch_${index}.cpp")
      # Written only when its text changes, so that a configure run recompiles nothing.
      file(CONFIGURE OUTPUT "${unity_source}" CONTENT "${batch}" @ONLY)
      list(APPEND unity_sources "${unity_source}")
      math(EXPR index "${index} + 1")
    endforeach()
    add_executable(${T_NAME} ${unity_sources} ${T_SOURCES})
    set_source_files_properties(${T_SOURCES} TARGET_DIRECTORY ${T_NAME}
      PROPERTIES HEADER_FILE_ONLY ON)
  else()
    add_executable(${T_NAME} ${T_SOURCES})
  endif()
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} ingestd_warnings)
  # The test's own code unoptimized, as its precompiled header (see the top CMakeLists.txt).
  target_compile_options(${T_NAME} PRIVATE -O0)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  if(T_KIND STREQUAL "gtest")
    target_link_libraries(${T_NAME} PRIVATE GTest::gtest GTest::gtest_main GTest::gmock)
    target_precompile_headers(${T_NAME} REUSE_FROM ingestd_gtest_pch)
  elseif(T_KIND STREQUAL "caf")
    target_link_libraries(${T_NAME} PRIVATE CAF::core)
    target_precompile_headers(${T_NAME} REUSE_FROM ingestd_caf_test_pch)
  else()
    message(FATAL_ERROR "ingestd_add_test(${T_NAME}): unknown KIND ${T_KIND}")
  endif()
  if(T_SUITES AND T_KIND STREQUAL "caf")
    set(entries)
    foreach(suite IN LISTS T_SUITES)
      # CAF's runner takes `-s` as a regular expression (GCC) or an exact name (clang's build):
      # a name that is no part of another's selects its suite alone in both.
      foreach(other IN LISTS T_SUITES)
        string(FIND "${other}" "${suite}" at)
        if(NOT other STREQUAL suite AND at GREATER -1)
          message(FATAL_ERROR "ingestd_add_test(${T_NAME}): suite ${suite} is part of ${other}")
        endif()
      endforeach()
      add_test(NAME ${T_NAME}_${suite} COMMAND ${T_NAME} -s ${suite})
      # CAF's summary counts the suites it ran ("suites:  0", colours aside).
      set_tests_properties(${T_NAME}_${suite} PROPERTIES
        FAIL_REGULAR_EXPRESSION "suites: +(.\\[[0-9;]*m)?0[^0-9]")
      list(APPEND entries ${T_NAME}_${suite})
    endforeach()
  elseif(T_SUITES)
    set(entries)
    foreach(suite IN LISTS T_SUITES)
      # Plain and typed/parameterized suites (Prefix/suite.case).
      add_test(NAME ${suite} COMMAND ${T_NAME} --gtest_filter=${suite}.*:*/${suite}.*)
      set_tests_properties(${suite} PROPERTIES FAIL_REGULAR_EXPRESSION "Running 0 tests from")
      list(APPEND entries ${suite})
    endforeach()
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME})
    set(entries ${T_NAME})
  endif()
  math(EXPR timeout "${T_TIMEOUT} * ${INGESTD_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(${entries} PROPERTIES TIMEOUT ${timeout}
    ENVIRONMENT "INGESTD_SOURCE_DIR=${PROJECT_SOURCE_DIR};INGESTD_BINARY=$<TARGET_FILE:ingestd>;OMP_THREAD_LIMIT=1;${T_ENVIRONMENT}")
  if(T_LABELS)
    set_tests_properties(${entries} PROPERTIES LABELS "${T_LABELS}")
  endif()
  foreach(label IN LISTS T_LABELS)
    if(NOT TARGET ingestd_tests_${label})
      add_custom_target(ingestd_tests_${label})
    endif()
    add_dependencies(ingestd_tests_${label} ${T_NAME})
  endforeach()
  if(T_RESOURCE_LOCK)
    set_tests_properties(${entries} PROPERTIES RESOURCE_LOCK "${T_RESOURCE_LOCK}")
  endif()
  if(T_COST)
    set_tests_properties(${entries} PROPERTIES COST ${T_COST})
  endif()
endfunction()
