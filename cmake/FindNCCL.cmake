# FindNCCL: imported target NCCL::nccl, NCCL_VERSION (from nccl.h), NCCL_INCLUDE_DIR, NCCL_LIBRARY.
# Search order: NCCL_HOME / $ENV{NCCL_HOME}, a pip nvidia-nccl-* wheel (site-packages/nvidia/nccl)
# of the Python found on PATH, the CUDA toolkit, then the system.
include(FindPackageHandleStandardArgs)

set(_nccl_hints "")
foreach(_h IN ITEMS "${NCCL_HOME}" "$ENV{NCCL_HOME}" "${NCCL_ROOT}" "$ENV{NCCL_ROOT}")
  if(_h)
    list(APPEND _nccl_hints "${_h}")
  endif()
endforeach()
if(NOT NCCL_HOME AND NOT DEFINED ENV{NCCL_HOME} AND NOT NCCL_IGNORE_PIP)
  find_program(_nccl_python NAMES python3 python)
  if(_nccl_python)
    execute_process(COMMAND "${_nccl_python}" -c
      "import importlib.util,os;s=importlib.util.find_spec('nvidia.nccl');print(os.path.dirname(s.origin) if s and s.origin else (list(s.submodule_search_locations)[0] if s else ''))"
      OUTPUT_VARIABLE _nccl_pip OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _nccl_rc)
    if(_nccl_rc EQUAL 0 AND _nccl_pip AND EXISTS "${_nccl_pip}/include/nccl.h")
      list(APPEND _nccl_hints "${_nccl_pip}")
    endif()
  endif()
endif()
if(CUDAToolkit_INCLUDE_DIRS)
  list(APPEND _nccl_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include
          PATHS ${CUDAToolkit_INCLUDE_DIRS})
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64
             PATHS ${CUDAToolkit_LIBRARY_DIR})

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
