# ingestd_add_child_directories(): add_subdirectory() for every child folder that has a
# CMakeLists.txt, so a new adapter or test area needs no edit to its parent.
function(ingestd_add_child_directories)
  file(GLOB _children LIST_DIRECTORIES true CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*")
  list(SORT _children)
  foreach(_child IN LISTS _children)
    if(IS_DIRECTORY "${_child}" AND EXISTS "${_child}/CMakeLists.txt")
      add_subdirectory("${_child}")
    endif()
  endforeach()
endfunction()
