# One helper registers every test executable with CTest, always with a TIMEOUT.
#
#   ingestd_add_test(NAME unit_config SOURCES config_test.cpp LIBS ingestd_config
#                    KIND gtest|caf TIMEOUT 60 LABELS unit [RESOURCE_LOCK postgres])
#
# GoogleTest executables link gtest_main; CAF-DSL executables define their own main through
# caf/test/unit_test_impl.hpp. The two kinds never share an executable.
function(ingestd_add_test)
  cmake_parse_arguments(T "" "NAME;KIND;TIMEOUT" "SOURCES;LIBS;LABELS;RESOURCE_LOCK;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    message(FATAL_ERROR "ingestd_add_test(${T_NAME}): TIMEOUT is required")
  endif()
  if(NOT T_KIND)
    set(T_KIND gtest)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} ingestd_warnings)
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  if(T_KIND STREQUAL "gtest")
    target_link_libraries(${T_NAME} PRIVATE GTest::gtest GTest::gtest_main GTest::gmock)
  elseif(T_KIND STREQUAL "caf")
    target_link_libraries(${T_NAME} PRIVATE CAF::core)
    target_precompile_headers(${T_NAME} REUSE_FROM ingestd_caf_pch)
  else()
    message(FATAL_ERROR "ingestd_add_test(${T_NAME}): unknown KIND ${T_KIND}")
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "INGESTD_SOURCE_DIR=${PROJECT_SOURCE_DIR};INGESTD_BINARY=$<TARGET_FILE:ingestd>;${T_ENVIRONMENT}")
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
  if(T_RESOURCE_LOCK)
    set_tests_properties(${T_NAME} PROPERTIES RESOURCE_LOCK "${T_RESOURCE_LOCK}")
  endif()
endfunction()
