# The layer check against small trees: one that passes, and one per hole it must catch.
#   cmake -DSOURCE_DIR=<gpucts source root> -DWORK_DIR=<scratch> -P tests/check_layers_test.cmake
cmake_minimum_required(VERSION 3.25)
set(check "${SOURCE_DIR}/cmake/CheckLayers.cmake")

# A tree with the given "path=content" files, every one listed in its folder's README.
function(make_tree dir)
  file(REMOVE_RECURSE "${dir}")
  foreach(spec IN LISTS ARGN)
    string(FIND "${spec}" "=" eq)
    string(SUBSTRING "${spec}" 0 ${eq} path)
    math(EXPR from "${eq} + 1")
    string(SUBSTRING "${spec}" ${from} -1 content)
    file(WRITE "${dir}/${path}" "${content}\n")
    get_filename_component(folder "${path}" DIRECTORY)
    string(REGEX REPLACE "/.*" "" top "${folder}")
    get_filename_component(name "${path}" NAME)
    file(APPEND "${dir}/${top}/README.md" "`${name}`\n")
  endforeach()
endfunction()

function(expect dir want)
  execute_process(COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${dir} -P ${check}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(want STREQUAL "pass")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${dir}: expected the check to pass, it said:\n${out}")
    endif()
  elseif(rc EQUAL 0 OR NOT out MATCHES "${want}")
    message(FATAL_ERROR "${dir}: expected a failure matching '${want}', got status ${rc}:\n${out}")
  endif()
  message(STATUS "${dir}: as expected")
endfunction()

set(w "${WORK_DIR}/check_layers")
make_tree("${w}/good" "results/a.hpp=#include \"matrix/m.hpp\"" "matrix/m.hpp=// m"
          "report/r.cpp=#include \"results/a.hpp\"" "fixtures/probe/p.cpp=#include <vector>")
expect("${w}/good" pass)
make_tree("${w}/upward" "results/a.hpp=#include \"report/r.hpp\"" "report/r.hpp=// r")
expect("${w}/upward" "results/a.hpp: #include \"report/r.hpp\": results/ may use only matrix")
make_tree("${w}/angled" "fixtures/gtest/g.cpp=#include <cli/args.hpp>" "cli/args.hpp=// a")
expect("${w}/angled" "fixtures/gtest/g.cpp: #include <cli/args.hpp>: a project header")
make_tree("${w}/loose" "fixtures/loose.cpp=// belongs to no layer")
expect("${w}/loose" "fixtures/loose.cpp: directly in fixtures/")
# gpucts starts where MPI is absent: cli/ never includes the MPI bootstrap (gpucts_check_ranks does).
make_tree("${w}/cli_mpi" "cli/c.cpp=#include \"fixtures/mpi/mpi_world.hpp\"" "fixtures/mpi/mpi_world.hpp=// w")
expect("${w}/cli_mpi" "cli/c.cpp: #include \"fixtures/mpi/mpi_world.hpp\": cli/ may use only")
make_tree("${w}/harness_up" "fixtures/nccl/n.cpp=#include \"report/bundle.hpp\"" "report/bundle.hpp=// b")
expect("${w}/harness_up" "fixtures/nccl/n.cpp: #include \"report/bundle.hpp\"")
