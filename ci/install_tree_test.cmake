# CTest entry gpucts_install_tree (ci/CMakeLists.txt): `cmake --install` of this build into a fresh
# prefix, then `<prefix>/bin/gpucts qualify` of the CPU suites from a folder outside the source and
# build trees, with both trees hidden behind empty mounts where a mount namespace can be had
# (`unshare -rm`). Passes when qualify exits 0 and the bundle's summary says PASS with every
# expected suite passed; also checks that tests.json names neither tree and that the run writes
# nothing into the install tree.
#   cmake -DBUILD_DIR=.. -DSOURCE_DIR=.. -DSUITES=a,b,... [-DSCRATCH=..] -P install_tree_test.cmake
foreach(v BUILD_DIR SOURCE_DIR SUITES)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "install_tree_test: -D${v}= is required")
  endif()
endforeach()
string(REPLACE "," ";" SUITES "${SUITES}")
if(NOT SCRATCH)
  set(SCRATCH "$ENV{TMPDIR}")
  if(NOT SCRATCH)
    set(SCRATCH /tmp)
  endif()
endif()
string(RANDOM LENGTH 8 _tag)
set(root "${SCRATCH}/gpucts-install-test-${_tag}")
foreach(tree "${SOURCE_DIR}" "${BUILD_DIR}")
  cmake_path(IS_PREFIX tree "${root}" NORMALIZE _inside)
  if(_inside)
    message(FATAL_ERROR "install_tree_test: scratch ${root} lies inside ${tree}: set TMPDIR elsewhere")
  endif()
endforeach()
set(prefix "${root}/prefix")
set(work "${root}/work")
set(bundle "${root}/bundle")
file(MAKE_DIRECTORY "${work}" "${root}/tmp")

function(fail what)
  message(FATAL_ERROR "install_tree_test: ${what} (left in ${root})")
endfunction()

execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 180)
if(NOT rc EQUAL 0)
  fail("cmake --install failed (${rc}):\n${out}")
endif()

# Everything qualify needs is in the tree.
foreach(f bin/gpucts share/gpucts/tests.json share/gpucts/gpucts_gpu_needs.txt
          share/gpucts/bandwidth_thresholds.csv share/gpucts/matrix/torch.csv
          share/gpucts/test-data/check/h200_live_replay.json share/gpucts/test-data/csv/torch_bad_arch.csv)
  if(NOT EXISTS "${prefix}/${f}")
    fail("the install tree has no ${f}")
  endif()
endforeach()
set(regex "")
foreach(s IN LISTS SUITES)
  string(APPEND regex "|${s}")
endforeach()
string(SUBSTRING "${regex}" 1 -1 regex)
set(regex "^(${regex})$")

# The suite list names neither tree (the install step refuses that too; this is the proof).
file(READ "${prefix}/share/gpucts/tests.json" tests_json)
foreach(tree "${BUILD_DIR}/" "${SOURCE_DIR}/")
  string(FIND "${tests_json}" "${tree}" at)
  if(at GREATER -1)
    fail("share/gpucts/tests.json names ${tree}")
  endif()
endforeach()
if(tests_json MATCHES "gpucts_install_tree")
  fail("share/gpucts/tests.json lists the install test itself")
endif()

file(GLOB_RECURSE installed_before LIST_DIRECTORIES true RELATIVE "${prefix}" "${prefix}/*")

# Run qualify from outside both trees; hide them where a private mount namespace is allowed.
# The paths are the script's arguments ($1..$6), never spliced into its text: any path works.
set(script "cd \"$1\" && \"$2/bin/gpucts\" qualify --output \"$3\" --tests \"$4\"")
set(args "${work}" "${prefix}" "${bundle}" "${regex}" "${BUILD_DIR}" "${SOURCE_DIR}")
set(hidden "not hidden (no mount namespace here)")
execute_process(COMMAND unshare -rm true RESULT_VARIABLE urc OUTPUT_QUIET ERROR_QUIET)
if(urc EQUAL 0)
  # The build tree first: it may lie inside the source tree.
  set(script "mount -t tmpfs gpucts-hidden \"$5\" && mount -t tmpfs gpucts-hidden \"$6\" && ${script}")
  set(launch unshare -rm sh -c "${script}" sh ${args})
  set(hidden "hidden behind empty tmpfs mounts")
else()
  set(launch sh -c "${script}" sh ${args})
endif()
message(STATUS "install_tree_test: prefix ${prefix}; source and build trees ${hidden}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "TMPDIR=${root}/tmp" --unset=GPUCTS_TEST_NAME
                        --unset=GPUCTS_JOURNAL_DIR --unset=GPUCTS_LOG_DIR --unset=TEST_PREMATURE_EXIT_FILE ${launch}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 300)
message(STATUS "gpucts qualify (exit ${rc}):\n${out}")
if(NOT EXISTS "${bundle}/summary.md")
  fail("qualify wrote no summary.md")
endif()
file(READ "${bundle}/summary.md" summary)
if(NOT rc EQUAL 0)
  fail("gpucts qualify exited ${rc}; summary:\n${summary}")
endif()
if(NOT summary MATCHES "\\*\\*PASS\\*\\*")
  fail("summary.md does not say PASS:\n${summary}")
endif()
foreach(s IN LISTS SUITES)
  if(NOT summary MATCHES "\\| *${s} *\\|[^\n]*\\| *passed *\\|")
    fail("summary.md does not list ${s} as passed:\n${summary}")
  endif()
endforeach()
# Nothing is written into the install tree (it may be mounted read-only in the image).
file(GLOB_RECURSE installed_after LIST_DIRECTORIES true RELATIVE "${prefix}" "${prefix}/*")
if(NOT installed_after STREQUAL installed_before)
  list(REMOVE_ITEM installed_after ${installed_before})
  fail("qualify wrote into the install tree: ${installed_after}")
endif()
file(REMOVE_RECURSE "${root}")
message(STATUS "install_tree_test: PASS (${SUITES} passed from the install tree)")
