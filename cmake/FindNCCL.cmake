# FindNCCL: imported target NCCL::nccl, NCCL_VERSION (from nccl.h), NCCL_INCLUDE_DIR, NCCL_LIBRARY.
# Search order: NCCL_HOME / $ENV{NCCL_HOME}, a pip nvidia-nccl-* wheel (site-packages/nvidia/nccl)
# of the Python found on PATH, the CUDA toolkit, then the system.
include(FindPackageHandleStandardArgs)

# Library first, then the header from the same prefix, so that the two always belong together.
set(_nccl_hints "")
foreach(_h IN ITEMS "${NCCL_HOME}" "$ENV{NCCL_HOME}" "${NCCL_ROOT}" "$ENV{NCCL_ROOT}")
  if(_h)
    list(APPEND _nccl_hints "${_h}")
  endif()
endforeach()
# A pip wheel (nvidia-nccl-cu12/cu13) is searched after the system: on an image with both, the
# suites test the system NCCL, and the fingerprint reports which one a process really loaded.
set(_nccl_pip_paths "")
if(NOT NCCL_IGNORE_PIP)
  find_program(_nccl_python NAMES python3 python)
  if(_nccl_python)
    execute_process(COMMAND "${_nccl_python}" -c
      "import nvidia.nccl as n, os; print(list(n.__path__)[0])"
      OUTPUT_VARIABLE _nccl_pip OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _nccl_rc)
    if(_nccl_rc EQUAL 0 AND EXISTS "${_nccl_pip}/include/nccl.h")
      list(APPEND _nccl_pip_paths "${_nccl_pip}")
    endif()
  endif()
endif()

find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
             HINTS ${_nccl_hints} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64
             PATHS ${_nccl_pip_paths})
if(NCCL_LIBRARY)
  get_filename_component(_nccl_libdir "${NCCL_LIBRARY}" DIRECTORY)
  find_path(NCCL_INCLUDE_DIR nccl.h NO_DEFAULT_PATH
            HINTS "${_nccl_libdir}/.." "${_nccl_libdir}/../.." "${_nccl_libdir}/../../.." PATH_SUFFIXES include)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
endif()

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_defs REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _m "${_nccl_defs}")
    set(NCCL_VERSION_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${NCCL_VERSION_MAJOR}.${NCCL_VERSION_MINOR}.${NCCL_VERSION_PATCH}")
endif()

find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl SHARED IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION "${NCCL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
