# The Python suites (suites/python/gpucts_suites: torch.distributed, DDP, FSDP2, Lightning) as
# CTest entries, run by the launcher script gpucts_python_suites with the image's python3.
#
#   gpucts_add_python_suite(<name> [LABELS l...] [GPUS n] [TIMEOUT s] [ARGS a...])
#     registers the CTest entry gpucts_py_<name>:
#     <build>/suites/gpucts_python_suites --junit-output=<build>/gtest-xml/gpucts_py_<name>.xml
#       --deadline=<TIMEOUT - 30> ARGS...
#
# The entry gets what gpucts_add_suite() gives a C++ suite: the same environment (test name,
# journal and log folders, NVLink multicast off), SKIP_RETURN_CODE 77, TIMEOUT and GPU resource
# groups (GPUS n). The launcher is installed into libexec/gpucts beside the C++ suites and finds the
# package under share/gpucts/python, so `gpucts qualify` runs the entries from an install tree.
# The package stands on gpucts_common (python/): the launcher puts both on PYTHONPATH.
include_guard(GLOBAL)
include(GpuctsAddSuite)

set(GPUCTS_PY_SOURCE_DIR "${PROJECT_SOURCE_DIR}/suites/python")
set(GPUCTS_PY_LAUNCHER "${PROJECT_BINARY_DIR}/suites/gpucts_python_suites")
# The folder holding gpucts_common in the build tree; every CTest entry that runs Python from the
# source tree puts it on PYTHONPATH (python/CMakeLists.txt installs it beside the packages).
set(GPUCTS_PY_COMMON_DIR "${PROJECT_SOURCE_DIR}/python")

# Build tree: the launcher finds the packages in the source tree. Install tree: relative to libexec,
# both in share/gpucts/python.
function(_gpucts_python_launchers)
  set(GPUCTS_PY_PACKAGE_DIR "${GPUCTS_PY_SOURCE_DIR}")
  set(GPUCTS_PY_COMMON_PACKAGE_DIR "${GPUCTS_PY_COMMON_DIR}")
  set(GPUCTS_PY_WHERE "in the source tree")
  configure_file("${GPUCTS_PY_SOURCE_DIR}/gpucts_python_suites.in" "${GPUCTS_PY_LAUNCHER}" @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  file(RELATIVE_PATH rel "${CMAKE_INSTALL_FULL_LIBEXECDIR}/gpucts" "${CMAKE_INSTALL_FULL_DATADIR}/gpucts/python")
  set(GPUCTS_PY_PACKAGE_DIR "${rel}")
  set(GPUCTS_PY_COMMON_PACKAGE_DIR "${rel}")
  set(GPUCTS_PY_WHERE "under share/gpucts/python of the install tree")
  configure_file("${GPUCTS_PY_SOURCE_DIR}/gpucts_python_suites.in"
                 "${PROJECT_BINARY_DIR}/python-install/gpucts_python_suites" @ONLY)
  install(PROGRAMS "${PROJECT_BINARY_DIR}/python-install/gpucts_python_suites"
          DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/gpucts)
  install(DIRECTORY "${GPUCTS_PY_SOURCE_DIR}/gpucts_suites" DESTINATION ${CMAKE_INSTALL_DATADIR}/gpucts/python
          PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
endfunction()

function(gpucts_add_python_suite name)
  cmake_parse_arguments(P "" "GPUS;TIMEOUT" "LABELS;ARGS" ${ARGN})
  get_property(done GLOBAL PROPERTY GPUCTS_PY_LAUNCHERS_DONE)
  if(NOT done)
    _gpucts_python_launchers()
    set_property(GLOBAL PROPERTY GPUCTS_PY_LAUNCHERS_DONE TRUE)
  endif()
  set(test gpucts_py_${name})
  _gpucts_check_labels("gpucts_add_python_suite(${name})" ${P_LABELS})
  if(NOT P_TIMEOUT)
    set(P_TIMEOUT ${GPUCTS_DEFAULT_TIMEOUT})
  endif()
  # The world's own deadline ends it (and writes what finished) before CTest kills it.
  math(EXPR deadline "${P_TIMEOUT} - 30")
  if(deadline LESS 30)
    set(deadline 30)
  endif()
  _gpucts_result_xml(${test} "${P_LABELS}" xml)
  add_test(NAME ${test} COMMAND "${GPUCTS_PY_LAUNCHER}" "--junit-output=${xml}" "--deadline=${deadline}" ${P_ARGS})
  _gpucts_entry_properties(${test} LABELS ${P_LABELS} TIMEOUT ${P_TIMEOUT} GPUS "${P_GPUS}")
endfunction()
