# Finds every dependency once. Required: a C++17 compiler, nlohmann_json, GoogleTest, CLI11.
# Optional (each missing one says in one line what will not be built): CUDA+NCCL, MPI, Torch.
include_guard(GLOBAL)

find_package(nlohmann_json 3.9 REQUIRED)
find_package(Threads REQUIRED)
# System GoogleTest first, never a download at configure time.
find_package(GTest 1.10 CONFIG QUIET)
if(NOT GTest_FOUND)
  find_package(GTest 1.10 REQUIRED)
endif()
include(GoogleTest)
# CLI11 (header-only) parses the options of `gpucts` and the flags of the suite binaries. Debian's
# libcli11-dev has a CMake config; a copy unpacked elsewhere (dpkg -x libcli11-dev_*.deb DIR) is
# found through CLI11_ROOT=DIR or CMAKE_PREFIX_PATH, with or without its usr/ level.
set(_gpucts_cli11_hints "")
foreach(root IN ITEMS "${CLI11_ROOT}" "$ENV{CLI11_ROOT}")
  if(root)
    list(APPEND _gpucts_cli11_hints "${root}" "${root}/usr")
  endif()
endforeach()
find_package(CLI11 CONFIG QUIET HINTS ${_gpucts_cli11_hints})
if(NOT TARGET CLI11::CLI11)
  # A copy without the config (the headers alone): the target made here.
  find_path(GPUCTS_CLI11_INCLUDE_DIR CLI/CLI.hpp HINTS ${_gpucts_cli11_hints} PATH_SUFFIXES include)
  if(NOT GPUCTS_CLI11_INCLUDE_DIR)
    message(FATAL_ERROR "gpucts: CLI11 not found: install libcli11-dev (apt-get install libcli11-dev) or set CLI11_ROOT to an unpacked copy")
  endif()
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  set_target_properties(CLI11::CLI11 PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${GPUCTS_CLI11_INCLUDE_DIR}")
endif()

# --- CUDA toolkit, CCCL, NCCL ---------------------------------------------------------------
option(GPUCTS_ENABLE_CUDA "Build the GPU parts (kernels, NCCL suites)" ON)
set(GPUCTS_HAVE_CUDA OFF)
if(GPUCTS_ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Never "native": it is a configure error on a host without a GPU.
      set(CMAKE_CUDA_ARCHITECTURES 80 90 100)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # CUDA 13 keeps CCCL under include/cccl; CCCL::CCCL puts it on the path for g++ too.
    find_package(CCCL CONFIG QUIET HINTS "${CUDAToolkit_LIBRARY_DIR}/cmake")
    find_package(NCCL 2.7 QUIET)
    if(NOT CCCL_FOUND)
      message(STATUS "gpucts: CCCL not found in ${CUDAToolkit_LIBRARY_DIR}/cmake: GPU suites will not be built")
    elseif(NOT NCCL_FOUND)
      message(STATUS "gpucts: NCCL not found (set NCCL_HOME or install nvidia-nccl-*): NCCL suites will not be built")
    else()
      set(GPUCTS_HAVE_CUDA ON)
      message(STATUS "gpucts: CUDA ${CUDAToolkit_VERSION}, NCCL header ${NCCL_VERSION} (${NCCL_LIBRARY}), archs ${CMAKE_CUDA_ARCHITECTURES}")
    endif()
  else()
    message(STATUS "gpucts: no CUDA compiler/toolkit found: GPU kernels and NCCL suites will not be built")
  endif()
else()
  message(STATUS "gpucts: GPUCTS_ENABLE_CUDA=OFF: GPU kernels and NCCL suites will not be built")
endif()

# --- MPI -------------------------------------------------------------------------------------
option(GPUCTS_ENABLE_MPI "Build the multi-process suites over MPI" ON)
set(GPUCTS_HAVE_MPI OFF)
if(GPUCTS_ENABLE_MPI)
  set(MPI_DETERMINE_LIBRARY_VERSION ON)   # tells Open MPI (which needs --oversubscribe) from others
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
    set(GPUCTS_HAVE_MPI ON)
    message(STATUS "gpucts: MPI ${MPI_CXX_VERSION} via ${MPIEXEC_EXECUTABLE}")
  else()
    message(STATUS "gpucts: MPI not found (install libopenmpi-dev): multi-process suites will not be built")
  endif()
endif()

# --- Torch -----------------------------------------------------------------------------------
option(GPUCTS_ENABLE_TORCH "Build the libtorch suite" ON)
set(GPUCTS_HAVE_TORCH OFF)
if(GPUCTS_ENABLE_TORCH)
  include(GpuctsFindTorch)
endif()
