# CTest entry gpucts_install_tree (ci/CMakeLists.txt): `cmake --install` of this build into a fresh
# prefix, moved elsewhere, then `<prefix>/bin/gpucts qualify` of the CPU suites from a folder outside
# the source and build trees, with both trees hidden behind empty mounts where a mount namespace can
# be had (`unshare -rm`). Passes when qualify exits 0 and the bundle's summary says PASS with every
# expected suite passed; also checks that tests.json names neither tree and that the run writes
# nothing into the install tree, and that the tree holds no program its entries do not run. With CXX given, the tree also holds an entry as another machine's
# build would: its program linked against a library made absent afterwards; it must be reported
# not run, naming that library and what the build linked, and the verdict is then NOT RUN (exit 4):
# a suite that applies here and did not run is never a pass.
#   cmake -DBUILD_DIR=.. -DSOURCE_DIR=.. -DSUITES=a,b,... [-DCXX=..] [-DSCRATCH=..] -P install_tree_test.cmake
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
# Every program of the tree is one an entry runs: named in tests.json, or a helper run by what is
# (gpucts_check_ranks by `gpucts check` under MPI, gpucts_fault_child by gpucts_faults).
file(GLOB programs RELATIVE "${prefix}/libexec/gpucts" "${prefix}/libexec/gpucts/*")
foreach(p IN LISTS programs)
  string(FIND "${tests_json}" "libexec/gpucts/${p}\"" named)
  if(named EQUAL -1 AND NOT p MATCHES "^(gpucts_check_ranks|gpucts_fault_child)$")
    fail("the install tree holds libexec/gpucts/${p}, which no entry of tests.json runs")
  endif()
endforeach()
file(GLOB programs RELATIVE "${prefix}/bin" "${prefix}/bin/*")
if(NOT programs STREQUAL "gpucts")
  fail("bin/ holds ${programs}; only gpucts is run from there")
endif()
foreach(tree "${BUILD_DIR}/" "${SOURCE_DIR}/")
  string(FIND "${tests_json}" "${tree}" at)
  if(at GREATER -1)
    fail("share/gpucts/tests.json names ${tree}")
  endif()
endforeach()
if(tests_json MATCHES "gpucts_install_tree")
  fail("share/gpucts/tests.json lists the install test itself")
endif()

# A suite of another machine's build: gpucts_needs_gone, linked against libgpucts_gone.so.1, which
# is then deleted (as a libtorch of the build machine is absent from the image).
set(gone_suite gpucts_needs_gone)
if(CXX)
  set(gone "${root}/gone")
  file(MAKE_DIRECTORY "${gone}")
  file(WRITE "${gone}/gone.cpp" "int gpucts_gone() { return 0; }\n")
  file(WRITE "${gone}/needs.cpp" "int gpucts_gone();\nint main() { return gpucts_gone(); }\n")
  execute_process(COMMAND "${CXX}" -shared -fPIC -Wl,-soname,libgpucts_gone.so.1 -o "${gone}/libgpucts_gone.so.1"
                          "${gone}/gone.cpp" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    execute_process(COMMAND "${CXX}" -o "${prefix}/libexec/gpucts/${gone_suite}" "${gone}/needs.cpp"
                            "${gone}/libgpucts_gone.so.1" "-Wl,-rpath,${gone}" RESULT_VARIABLE rc OUTPUT_VARIABLE out
                            ERROR_VARIABLE out)
  endif()
  if(NOT rc EQUAL 0)
    fail("cannot build the stand-in suite with ${CXX}:\n${out}")
  endif()
  execute_process(COMMAND "${prefix}/libexec/gpucts/${gone_suite}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("the stand-in suite does not run while its library is there (${rc})")
  endif()
  file(REMOVE_RECURSE "${gone}")
  string(JSON n LENGTH "${tests_json}" tests)
  string(JSON tests_json SET "${tests_json}" tests ${n} "{\"name\": \"${gone_suite}\", \"command\": \
[\"libexec/gpucts/${gone_suite}\"], \"properties\": [{\"name\": \"LABELS\", \"value\": [\"cpu\"]}]}")
  file(WRITE "${prefix}/share/gpucts/tests.json" "${tests_json}")
  file(APPEND "${prefix}/share/gpucts/gpucts_built_against.txt" "libgpucts_gone=gpucts-gone 1.0\n")
  list(APPEND SUITES ${gone_suite})
  string(REPLACE ")$" "|${gone_suite})$" regex "${regex}")
endif()

# The tree works wherever it is copied: moved away from where it was installed.
file(RENAME "${prefix}" "${root}/moved")
set(prefix "${root}/moved")

file(GLOB_RECURSE installed_before LIST_DIRECTORIES true RELATIVE "${prefix}" "${prefix}/*")

# Run qualify from outside both trees; hide them where a private mount namespace is allowed.
# The paths are the script's arguments ($1..$6), never spliced into its text: any path works.
# --label brings gpucts's own tests (label harness) in beside the stack's CPU suites.
set(script "cd \"$1\" && \"$2/bin/gpucts\" qualify --output \"$3\" --tests \"$4\" --label \"cpu|harness\"")
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
set(want_rc 0)
set(want_verdict "PASS")
if(CXX)
  set(want_rc 4)
  set(want_verdict "NOT RUN")
endif()
if(NOT rc EQUAL want_rc)
  fail("gpucts qualify exited ${rc}, expected ${want_rc}; summary:\n${summary}")
endif()
if(NOT summary MATCHES "\\*\\*${want_verdict}")
  fail("summary.md does not say ${want_verdict}:\n${summary}")
endif()
foreach(s IN LISTS SUITES)
  if(s STREQUAL gone_suite)
    continue()
  endif()
  if(NOT summary MATCHES "\\| *${s} *\\|[^\n]*\\| *passed *\\|")
    fail("summary.md does not list ${s} as passed:\n${summary}")
  endif()
endforeach()
if(CXX)
  # Not run, with the library and what the build linked; neither failed nor an error.
  file(READ "${bundle}/manifest.json" manifest)
  string(JSON ns LENGTH "${manifest}" suites)
  math(EXPR last "${ns} - 1")
  set(gone_status "absent from the manifest")
  foreach(i RANGE ${last})
    string(JSON name GET "${manifest}" suites ${i} name)
    if(name STREQUAL gone_suite)
      string(JSON gone_status GET "${manifest}" suites ${i} status)
      string(JSON gone_reason ERROR_VARIABLE err GET "${manifest}" suites ${i} reason)
    endif()
  endforeach()
  set(want "needs libgpucts_gone.so.1 (built against gpucts-gone 1.0), absent here")
  if(NOT gone_status STREQUAL "not_run" OR NOT gone_reason STREQUAL want)
    fail("${gone_suite}: status ${gone_status}, reason '${gone_reason}'; expected not_run, '${want}'")
  endif()
  string(FIND "${summary}" "not run: ${want}" at)
  if(at EQUAL -1)
    fail("summary.md does not say why ${gone_suite} did not run:\n${summary}")
  endif()
endif()
# Nothing is written into the install tree (it may be mounted read-only in the image).
file(GLOB_RECURSE installed_after LIST_DIRECTORIES true RELATIVE "${prefix}" "${prefix}/*")
if(NOT installed_after STREQUAL installed_before)
  list(REMOVE_ITEM installed_after ${installed_before})
  fail("qualify wrote into the install tree: ${installed_after}")
endif()
# The preflight package from the moved tree, the trees hidden as for qualify: it imports gpucts_common
# beside it (the bad RANK is named by gpucts_common's launcher module, exit 2).
find_program(python3 NAMES python3)
if(python3)
  set(pre "cd \"$1\" && RANK=x PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=\"$2/share/gpucts/python\" \"$7\" -m gpucts_preflight")
  if(urc EQUAL 0)
    set(pre unshare -rm sh -c "mount -t tmpfs gpucts-hidden \"$5\" && mount -t tmpfs gpucts-hidden \"$6\" && ${pre}")
  else()
    set(pre sh -c "${pre}")
  endif()
  execute_process(COMMAND ${pre} sh ${args} "${python3}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
                  TIMEOUT 60)
  if(NOT rc EQUAL 2 OR NOT out MATCHES "gpucts preflight: RANK='x' is not an integer")
    fail("python3 -m gpucts_preflight from the install tree exited ${rc} (expected 2, naming RANK):\n${out}")
  endif()
endif()
file(REMOVE_RECURSE "${root}")
message(STATUS "install_tree_test: PASS (${SUITES} from the install tree, moved; ${gone_suite} not run as expected)")
