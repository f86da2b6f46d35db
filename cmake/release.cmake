# SPDX-License-Identifier: Apache-2.0
# Release builds (issue 25, scripts/release.sh): build identity for `corral version`, and,
# with -DCORRAL_RELEASE=ON only, the flags that make corral and corral-core reproducible.
# An ordinary dev or test build gets the generated header and nothing else: its flags, and
# so its ccache hits, are unchanged.

option(CORRAL_RELEASE "Reproducible release build of the shipped binaries (scripts/release.sh)" OFF)
set(CORRAL_GIT_COMMIT "" CACHE STRING "git commit the release is built from (scripts/release.sh sets it)")
set(CORRAL_SBOM_SHA256 "" CACHE STRING "SHA-256 of the release's SPDX SBOM (scripts/release.sh sets it)")
if(CORRAL_RELEASE)
  set(CORRAL_RELEASE_FLAG 1)
  # (CMake's regular expressions have no {n}: the lengths are checked apart.)
  string(REGEX REPLACE "-dirty$" "" commit_hex "${CORRAL_GIT_COMMIT}")
  string(LENGTH "${commit_hex}" commit_len)
  string(LENGTH "${CORRAL_SBOM_SHA256}" sbom_len)
  if(NOT commit_hex MATCHES "^[0-9a-f]+$" OR NOT commit_len EQUAL 40)
    message(FATAL_ERROR "CORRAL_RELEASE needs -DCORRAL_GIT_COMMIT=<40 hex digits> (scripts/release.sh passes it)")
  endif()
  if(NOT CORRAL_SBOM_SHA256 MATCHES "^[0-9a-f]+$" OR NOT sbom_len EQUAL 64)
    message(FATAL_ERROR "CORRAL_RELEASE needs -DCORRAL_SBOM_SHA256=<64 hex digits> (scripts/release.sh passes it)")
  endif()
else()
  set(CORRAL_RELEASE_FLAG 0)
endif()

# Only version.cc includes the header, so a new commit or SBOM recompiles one file.
configure_file(${PROJECT_SOURCE_DIR}/cmake/build_info.h.in ${CMAKE_BINARY_DIR}/generated/build_info.h @ONLY)
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/cli/version.cc TARGET_DIRECTORY corral_cli
                            PROPERTIES INCLUDE_DIRECTORIES ${CMAKE_BINARY_DIR}/generated)

if(CORRAL_RELEASE)
  # The compile flags (-ffile-prefix-map for both folders, Debian's hardening flags) come in
  # CMAKE_C_FLAGS/CMAKE_CXX_FLAGS from scripts/release.sh: this file is included after the
  # targets exist, too late for add_compile_options. Refuse a release configure without them.
  if(NOT CMAKE_CXX_FLAGS MATCHES "-ffile-prefix-map=${PROJECT_SOURCE_DIR}=")
    message(FATAL_ERROR "CORRAL_RELEASE needs -ffile-prefix-map=${PROJECT_SOURCE_DIR}=... in CMAKE_CXX_FLAGS (use scripts/release.sh)")
  endif()
  # `corral claims` finds scripts/claims.py through CORRAL_SOURCE_DIR, the source folder's
  # absolute path: a release binary must not carry it (claims.cc then looks in ".", and
  # `corral claims` is a developer's command, run from a source tree).
  get_target_property(cli_defs corral_cli COMPILE_DEFINITIONS)
  if(cli_defs)
    list(FILTER cli_defs EXCLUDE REGEX "^CORRAL_SOURCE_DIR=")
    set_property(TARGET corral_cli PROPERTY COMPILE_DEFINITIONS ${cli_defs})
  endif()
endif()

# verify_release_test (src/cli) builds its damaged releases with the audit tests' helpers.
if(TARGET verify_release_test)
  target_link_libraries(verify_release_test PRIVATE corral_audit_test_fixture)
endif()

# The linker's map of each shipped binary: every archive member and shared library that went
# into it. scripts/release-sbom.py checks the SBOM against these (a library the SBOM misses
# fails the release). The map is a side file; the binary does not change.
if(CORRAL_RELEASE)
  foreach(bin corral corral-core)
    target_link_options(${bin} PRIVATE "LINKER:-Map=${CMAKE_BINARY_DIR}/${bin}.map")
  endforeach()
endif()
