# SPDX-License-Identifier: Apache-2.0
# corral_library(name SOURCES ... DEPS ...): one folder, one static library.
function(corral_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# Test code (gtest binaries, fixtures, probes) is compiled without optimisation: it is half of
# the build's compile time, and -O2 on gtest's macro-expanded bodies costs 2.3x -O0 (28.7 s
# against 12.8 s for src/policy/manifest_test.cc), while the code under test keeps the build
# type's flags. The later -O wins on gcc's and clang's command line.
set(CORRAL_TEST_COMPILE_OPTIONS -O0)

# corral_plain_test_options([TARGET t]): the sanitizer options taken off a test target, or off
# the current directory (whose later targets inherit it), so test objects match the plain build.
function(corral_plain_test_options)
  cmake_parse_arguments(ARG "" "TARGET" "" ${ARGN})
  if(NOT CORRAL_SANITIZE)
    return()
  endif()
  if(ARG_TARGET)
    get_target_property(opts ${ARG_TARGET} COMPILE_OPTIONS)
  else()
    get_directory_property(opts COMPILE_OPTIONS)
  endif()
  list(REMOVE_ITEM opts ${CORRAL_SANITIZE_COMPILE_OPTIONS})
  if(ARG_TARGET)
    set_property(TARGET ${ARG_TARGET} PROPERTY COMPILE_OPTIONS "${opts}")
  else()
    set_property(DIRECTORY PROPERTY COMPILE_OPTIONS "${opts}")
  endif()
endfunction()

# corral_test(file DEPS ... LABELS ...): a GoogleTest binary registered with ctest.
function(corral_test file)
  cmake_parse_arguments(ARG "" "" "DEPS;LABELS" ${ARGN})
  get_filename_component(name ${file} NAME_WE)
  add_executable(${name} ${file})
  corral_plain_test_options(TARGET ${name})
  target_compile_options(${name} PRIVATE ${CORRAL_TEST_COMPILE_OPTIONS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} PROPERTIES LABELS "${ARG_LABELS}" DISCOVERY_TIMEOUT 30)
endfunction()

# corral_folder(name DEPS ...): the library of one src/ folder (every *.cc but *_test.cc),
# plus one ctest binary per *_test.cc beside it (label "unit"). Globs keep parallel work
# from colliding in CMakeLists; CONFIGURE_DEPENDS re-globs on each build.
function(corral_folder name)
  cmake_parse_arguments(ARG "" "" "DEPS;TEST_DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  list(REMOVE_ITEM srcs ${tests} "")
  corral_library(${name} SOURCES ${srcs} DEPS ${ARG_DEPS})
  foreach(t ${tests})
    corral_test(${t} DEPS ${name} ${ARG_TEST_DEPS} LABELS unit)
  endforeach()
endfunction()
