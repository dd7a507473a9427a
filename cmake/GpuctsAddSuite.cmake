# One helper registers every suite (see README "Labels").
#
#   gpucts_add_suite(<suite> SOURCES f.cpp... [LIBRARIES t...] [LABELS l...]
#                    [GPUS n] [RANKS n] [TIMEOUT s] [ARGS a...] [MAIN target] [NO_TEST])
#     builds gpucts_<suite> and registers one CTest entry, also named gpucts_<suite>.
#   gpucts_add_suite_run(<suite> <suffix> [LABELS l...] [GPUS n] [RANKS n] [TIMEOUT s] [ARGS a...])
#     registers one more CTest entry gpucts_<suite>_<suffix> of the same binary
#     (for example one entry per world size).
#
# GPUS n    : n CTest resource groups of "gpus:1", set when ctest runs together with a resource
#             spec generated from the GPUs it sees (cmake/GpuctsCtestInclude.cmake.in). Where fewer
#             than n are visible the test asks for what there is and skips itself with the reason.
# RANKS n   : run under ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} n.
# Every binary exits 77 (SKIP_RETURN_CODE) when each of its cases skipped, writes its gtest XML to
# <build>/gtest-xml/<test>.xml (a self-test, which fails on purpose, to
# <build>/self-test/<test>.expected-failures.junit) and an append-only journal to <build>/journal/.
include_guard(GLOBAL)

set(GPUCTS_SKIP_RETURN_CODE 77)
# install-only: an entry that needs the build or source tree, left out of the install tree's tests.json.
set(GPUCTS_KNOWN_LABELS cpu single-gpu multi-gpu multi-process matrix torch perf self-test install-only)
# harness: a test of gpucts itself (tests/): ci/test runs it, `gpucts qualify` only when --label asks.
list(APPEND GPUCTS_KNOWN_LABELS harness)
# quick: the entries of `gpucts qualify --level quick` (cli/qualify_run.hpp), with the environment it sets.
list(APPEND GPUCTS_KNOWN_LABELS quick)
# multi-rank-sim: N ranks on one GPU, each its own host to NCCL (GPUCTS_SIMULATED_HOSTS=1).
list(APPEND GPUCTS_KNOWN_LABELS multi-rank-sim)
set(GPUCTS_XML_DIR "${CMAKE_BINARY_DIR}/gtest-xml")
set(GPUCTS_JOURNAL_DIR "${CMAKE_BINARY_DIR}/journal")
set(GPUCTS_LOG_DIR "${CMAKE_BINARY_DIR}/rank-logs")
set(GPUCTS_DEFAULT_TIMEOUT 600 CACHE STRING "Default CTest TIMEOUT (s) of a suite entry")
# Every NCCL_*, TORCH_* and NVSHMEM_* setting comes from the environment of whoever runs the entry:
# gpucts sets none of them. A site that must pin one for every entry (a shared NVSwitch host that
# keeps NVLink multicast off) names it here, e.g. -DGPUCTS_PIN_ENV="NCCL_NVLS_ENABLE=0;NVSHMEM_DISABLE_NVLS=1".
set(GPUCTS_PIN_ENV "" CACHE STRING "NAME=VALUE list set in the environment of every test entry (empty: none)")
foreach(kv IN LISTS GPUCTS_PIN_ENV)
  if(NOT kv MATCHES "^[A-Za-z_][A-Za-z0-9_]*=")
    message(FATAL_ERROR "GPUCTS_PIN_ENV: '${kv}' is not NAME=VALUE")
  endif()
endforeach()
option(GPUCTS_MPI_OVERSUBSCRIBE "Pass --oversubscribe to Open MPI's mpiexec (more ranks than cores)" ON)

# Shared by every kind of entry (C++ suites here, Python suites in GpuctsAddPythonSuite.cmake).
# Refuses a label outside GPUCTS_KNOWN_LABELS, naming `caller`.
function(_gpucts_check_labels caller)
  foreach(l IN LISTS ARGN)
    if(NOT l IN_LIST GPUCTS_KNOWN_LABELS)
      message(FATAL_ERROR "${caller}: unknown label '${l}' (known: ${GPUCTS_KNOWN_LABELS})")
    endif()
  endforeach()
endfunction()

# The file an entry writes its JUnit to. A self-test fails on purpose: its XML stays out of a CI
# server's **/*.xml glob.
function(_gpucts_result_xml test labels out)
  set(xml "${GPUCTS_XML_DIR}/${test}.xml")
  if("self-test" IN_LIST labels)
    set(xml "${CMAKE_BINARY_DIR}/self-test/${test}.expected-failures.junit")
  endif()
  set(${out} "${xml}" PARENT_SCOPE)
endfunction()

# LABELS, TIMEOUT, SKIP_RETURN_CODE and the environment every entry has (its journal, logs and
# premature-exit file, the site's GPUCTS_PIN_ENV) with ENV added; GPUS for the resource spec.
function(_gpucts_entry_properties test)
  cmake_parse_arguments(E "" "GPUS;TIMEOUT" "LABELS;ENV" ${ARGN})
  set(env
    "GPUCTS_TEST_NAME=${test}"
    "GPUCTS_JOURNAL_DIR=${GPUCTS_JOURNAL_DIR}"
    "GPUCTS_LOG_DIR=${GPUCTS_LOG_DIR}"
    "TEST_PREMATURE_EXIT_FILE=${GPUCTS_JOURNAL_DIR}/${test}.premature"
    "CUDA_DEVICE_ORDER=PCI_BUS_ID"
    ${E_ENV}
    ${GPUCTS_PIN_ENV})
  set_tests_properties(${test} PROPERTIES
    LABELS "${E_LABELS}"
    TIMEOUT ${E_TIMEOUT}
    SKIP_RETURN_CODE ${GPUCTS_SKIP_RETURN_CODE}
    ENVIRONMENT "${env}")
  if(E_GPUS AND E_GPUS GREATER 0)
    # RESOURCE_GROUPS are set when ctest runs, from the GPUs it sees (GpuctsCtestInclude.cmake.in).
    set_property(GLOBAL APPEND PROPERTY GPUCTS_GPU_TESTS "${test}=${E_GPUS}")
  endif()
endfunction()

function(_gpucts_register_test test_name target)
  cmake_parse_arguments(T "" "GPUS;RANKS;TIMEOUT" "LABELS;ARGS" ${ARGN})
  # GPUCTS_FOLDER_LABELS: labels every entry of the calling folder carries (tests/ sets harness).
  list(APPEND T_LABELS ${GPUCTS_FOLDER_LABELS})
  _gpucts_check_labels("gpucts_add_suite(${test_name})" ${T_LABELS})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT ${GPUCTS_DEFAULT_TIMEOUT})
  endif()
  _gpucts_result_xml(${test_name} "${T_LABELS}" xml)
  set(cmd $<TARGET_FILE:${target}> --gtest_output=xml:${xml} ${T_ARGS})
  if(T_RANKS)
    if(NOT GPUCTS_HAVE_MPI)
      message(STATUS "gpucts: ${test_name} needs MPI: not registered")
      return()
    endif()
    set(pre ${MPIEXEC_PREFLAGS})
    if(GPUCTS_MPI_OVERSUBSCRIBE AND MPI_CXX_LIBRARY_VERSION_STRING MATCHES "Open MPI")
      list(APPEND pre --oversubscribe)
    endif()
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS} ${pre} ${cmd} ${MPIEXEC_POSTFLAGS})
  endif()
  add_test(NAME ${test_name} COMMAND ${cmd})
  # Open MPI refuses root without these; harmless elsewhere.
  set(env "OMPI_ALLOW_RUN_AS_ROOT=1" "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
  if(T_RANKS)
    list(APPEND env "GPUCTS_EXPECT_RANKS=${T_RANKS}")
  endif()
  # Under ASan (the asan preset) Open MPI's plugins leak what they allocate once and are unloaded
  # before LeakSanitizer can name them: leak checks stay off where MPI runs, every other check on.
  if("address" IN_LIST GPUCTS_SANITIZE AND (T_RANKS OR "multi-process" IN_LIST T_LABELS))
    list(APPEND env "ASAN_OPTIONS=detect_leaks=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1")
  endif()
  _gpucts_entry_properties(${test_name} LABELS ${T_LABELS} TIMEOUT ${T_TIMEOUT} GPUS "${T_GPUS}" ENV ${env})
  if(T_RANKS)
    set_property(GLOBAL APPEND PROPERTY GPUCTS_MPI_TESTS "${test_name}=${T_RANKS}")
  endif()
  if("install-only" IN_LIST T_LABELS)
    set_property(GLOBAL APPEND PROPERTY GPUCTS_INSTALL_ONLY_TARGETS ${target})
  else()
    set_property(GLOBAL APPEND PROPERTY GPUCTS_INSTALLED_TARGETS ${target})
  endif()
endfunction()

function(gpucts_add_suite suite)
  cmake_parse_arguments(S "NO_TEST" "GPUS;RANKS;TIMEOUT;MAIN" "SOURCES;LIBRARIES;LABELS;ARGS" ${ARGN})
  set(target gpucts_${suite})
  if(NOT S_MAIN)
    set(S_MAIN gpucts::gtest_main)   # MPI suites pass MAIN gpucts::gtest_main_mpi
  endif()
  add_executable(${target} ${S_SOURCES})
  # One folder of test binaries (suites/ and tests/ alike): they find each other beside themselves.
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/suites")
  target_link_libraries(${target} PRIVATE ${S_MAIN} gpucts::fixtures ${S_LIBRARIES})
  # A program only an entry of the install tree runs is installed (gpucts_finalize_suites); one with
  # no entry of its own (NO_TEST) is a helper an entry runs, installed now.
  if(S_NO_TEST)
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/gpucts)
  endif()
  set_property(GLOBAL APPEND PROPERTY GPUCTS_SUITES ${target})
  if(NOT S_NO_TEST)
    _gpucts_register_test(${target} ${target} GPUS "${S_GPUS}" RANKS "${S_RANKS}"
      TIMEOUT "${S_TIMEOUT}" LABELS ${S_LABELS} ARGS ${S_ARGS})
  endif()
endfunction()

function(gpucts_add_suite_run suite suffix)
  cmake_parse_arguments(S "" "GPUS;RANKS;TIMEOUT" "LABELS;ARGS" ${ARGN})
  _gpucts_register_test(gpucts_${suite}_${suffix} gpucts_${suite} GPUS "${S_GPUS}" RANKS "${S_RANKS}"
    TIMEOUT "${S_TIMEOUT}" LABELS ${S_LABELS} ARGS ${S_ARGS})
endfunction()

# Called once at the end of the top-level CMakeLists: writes the include file that ctest runs
# on every invocation to generate the resource spec from the GPUs it sees.
function(gpucts_finalize_suites)
  # The install tree holds the programs its tests.json runs: an install-only entry's is left out.
  get_property(installed GLOBAL PROPERTY GPUCTS_INSTALLED_TARGETS)
  list(REMOVE_DUPLICATES installed)
  if(installed)
    install(TARGETS ${installed} RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/gpucts)
  endif()
  get_property(gpu_tests GLOBAL PROPERTY GPUCTS_GPU_TESTS)
  file(MAKE_DIRECTORY "${GPUCTS_XML_DIR}" "${GPUCTS_JOURNAL_DIR}" "${GPUCTS_LOG_DIR}")
  set(GPUCTS_GPU_TESTS "${gpu_tests}")
  set(GPUCTS_GPU_COUNT_COMMAND "$<TARGET_FILE:gpucts>")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/GpuctsCtestInclude.cmake.in"
                 "${CMAKE_BINARY_DIR}/gpucts_ctest_include.cmake.in" @ONLY)
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/gpucts_ctest_include.cmake"
                INPUT "${CMAKE_BINARY_DIR}/gpucts_ctest_include.cmake.in")
  # Every suite's parameterised cases print their parameters by name (cmake/CheckParamNames.cmake).
  get_property(suites GLOBAL PROPERTY GPUCTS_SUITES)
  # A suite with a source or build path compiled in fails in an install tree on another machine,
  # where that path is absent or holds something else: it must stay out of the install's tests.
  get_property(install_only GLOBAL PROPERTY GPUCTS_INSTALL_ONLY_TARGETS)
  foreach(t IN LISTS suites)
    get_target_property(defs ${t} COMPILE_DEFINITIONS)
    if(defs AND NOT t IN_LIST install_only
       AND (defs MATCHES "TARGET_FILE" OR defs MATCHES "${PROJECT_SOURCE_DIR}/" OR defs MATCHES "${PROJECT_BINARY_DIR}/"))
      message(FATAL_ERROR "${t} compiles in a source or build path (${defs}): label it install-only "
                          "or find the file at run time (fixtures/probe/paths.hpp)")
    endif()
  endforeach()
  set(bins "")
  foreach(t IN LISTS suites)
    list(APPEND bins "$<TARGET_FILE:${t}>")
  endforeach()
  list(JOIN bins "|" bins)
  add_test(NAME gpucts_param_names
           COMMAND ${CMAKE_COMMAND} "-DBINARIES=${bins}" -P "${PROJECT_SOURCE_DIR}/cmake/CheckParamNames.cmake")
  # A check of gpucts itself, run in the build tree only (it names the build folder).
  set_tests_properties(gpucts_param_names PROPERTIES LABELS "cpu;self-test;install-only" TIMEOUT 300)
  # ctest includes a directory's TEST_INCLUDE_FILES before that directory's tests and subdirs, so
  # the file hangs on the last subdirectory (ci/), after every suite's tests exist.
  set_property(DIRECTORY "${PROJECT_SOURCE_DIR}/ci" APPEND PROPERTY TEST_INCLUDE_FILES
               "${CMAKE_BINARY_DIR}/gpucts_ctest_include.cmake")
endfunction()
