# Writes <prefix>/share/gpucts/tests.json at install time: CTest's --show-only=json-v1 of the build
# tree, made independent of the build and source trees so that `gpucts qualify` runs it in an image
# that has neither. Included by install(CODE) in cli/CMakeLists.txt with GPUCTS_CTEST,
# GPUCTS_BUILD_DIR, GPUCTS_SOURCE_DIR, GPUCTS_SUITE_BIN_DIR, GPUCTS_DATADIR and
# GPUCTS_LIBEXEC_REL set.
#
# Paths in the installed file are relative to the install prefix (`gpucts qualify` resolves them
# against the tree it runs from): suite binaries libexec/gpucts/gpucts_*; CTest's default working
# directory (the build folder) is dropped. The per-run paths (gtest XML, journal, logs) are set by qualify for each run, so
# their build-tree values are only placeholders here. Entries that exist to test the build tree
# itself (label install-only, e.g. the install test) are left out. Anything still naming the build
# or source tree stops the install with the offending text.
set(_share "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${GPUCTS_DATADIR}/gpucts")
file(MAKE_DIRECTORY "${_share}")
execute_process(COMMAND "${GPUCTS_CTEST}" --show-only=json-v1 --test-dir "${GPUCTS_BUILD_DIR}"
                OUTPUT_VARIABLE _json RESULT_VARIABLE _rc TIMEOUT 120)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "gpucts: ctest --show-only=json-v1 failed (${_rc}): no suite list to install")
endif()

# CTest's backtrace graph names the CMakeLists files of the source tree; qualify does not read it.
string(JSON _stripped ERROR_VARIABLE _err REMOVE "${_json}" backtraceGraph)
if(NOT _err)
  set(_json "${_stripped}")
endif()

# Leave out the entries that only make sense in the build tree.
string(JSON _n LENGTH "${_json}" tests)
math(EXPR _last "${_n} - 1")
foreach(_i RANGE ${_last} 0 -1)
  string(JSON _props ERROR_VARIABLE _err GET "${_json}" tests ${_i} properties)
  if(_err)
    continue()
  endif()
  string(JSON _np LENGTH "${_props}")
  set(_drop FALSE)
  set(_wd -1)
  if(_np GREATER 0)
    math(EXPR _plast "${_np} - 1")
    foreach(_p RANGE ${_plast})
      string(JSON _pname GET "${_props}" ${_p} name)
      if(_pname STREQUAL "LABELS")
        string(JSON _labels GET "${_props}" ${_p} value)
        if(_labels MATCHES "\"install-only\"")
          set(_drop TRUE)
        endif()
      elseif(_pname STREQUAL "WORKING_DIRECTORY")
        set(_wd ${_p})
      endif()
    endforeach()
  endif()
  if(_drop)
    string(JSON _json REMOVE "${_json}" tests ${_i})
  elseif(_wd GREATER -1)
    # CTest's default (the build folder of the test) has no install counterpart: the suites find
    # their files at run time and run in qualify's folder, never writing into the install tree.
    string(JSON _json REMOVE "${_json}" tests ${_i} properties ${_wd})
  endif()
endforeach()

# Build-tree paths -> prefix-relative ones (suites) or placeholders (per-run paths qualify replaces).
string(REPLACE "\"${GPUCTS_SUITE_BIN_DIR}/gpucts_" "\"${GPUCTS_LIBEXEC_REL}/gpucts_" _json "${_json}")
string(REPLACE "=xml:${GPUCTS_BUILD_DIR}/gtest-xml/" "=xml:gtest/" _json "${_json}")
string(REPLACE "=xml:${GPUCTS_BUILD_DIR}/self-test/" "=xml:self-test/" _json "${_json}")
# The Python suites' launcher takes --junit-output=PATH (cmake/GpuctsAddPythonSuite.cmake).
string(REPLACE "--junit-output=${GPUCTS_BUILD_DIR}/gtest-xml/" "--junit-output=gtest/" _json "${_json}")
string(REPLACE "--junit-output=${GPUCTS_BUILD_DIR}/self-test/" "--junit-output=self-test/" _json "${_json}")
string(REPLACE "=${GPUCTS_BUILD_DIR}/journal" "=journal" _json "${_json}")
string(REPLACE "=${GPUCTS_BUILD_DIR}/rank-logs" "=rank-logs" _json "${_json}")
foreach(_tree "${GPUCTS_BUILD_DIR}/" "${GPUCTS_SOURCE_DIR}/")
  string(FIND "${_json}" "${_tree}" _at)
  if(_at GREATER -1)
    string(SUBSTRING "${_json}" ${_at} 160 _what)
    message(FATAL_ERROR "gpucts: the suite list still names ${_tree} (make the test find it at run time, "
                        "fixtures/probe/paths.hpp): ...${_what}...")
  endif()
endforeach()
file(WRITE "${_share}/tests.json" "${_json}")
message(STATUS "Installing: ${_share}/tests.json")
