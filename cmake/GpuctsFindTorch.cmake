# Finds libtorch: Torch_DIR if given, else the prefix of the Python torch on PATH
# (torch.utils.cmake_prefix_path), else the system (Debian's libtorch-dev).
include_guard(GLOBAL)
if(NOT Torch_DIR)
  find_program(_torch_python NAMES python3 python)
  if(_torch_python)
    execute_process(COMMAND "${_torch_python}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _torch_rc)
    if(_torch_rc EQUAL 0 AND _torch_prefix AND EXISTS "${_torch_prefix}/Torch/TorchConfig.cmake")
      set(Torch_DIR "${_torch_prefix}/Torch")
      # Else the wheel's TorchConfig may resolve Caffe2 to another libtorch (Debian's) on the path.
      if(EXISTS "${_torch_prefix}/Caffe2")
        set(Caffe2_DIR "${_torch_prefix}/Caffe2")
      endif()
    endif()
  endif()
endif()
# Torch's config (Caffe2/public/cuda.cmake) appends its own -gencode flags to CMAKE_CUDA_FLAGS and
# sets CMAKE_CUDA_ARCHITECTURES to OFF: our kernels would then be built for nvcc's default (sm_75
# PTX with CUDA 13), JIT-compiled on first use (15.7 s on a fresh H200, bench/RESULTS.md run 19).
# Both are put back.
set(_gpucts_cuda_flags "${CMAKE_CUDA_FLAGS}")
set(_gpucts_cuda_archs "${CMAKE_CUDA_ARCHITECTURES}")
find_package(Torch QUIET)
set(CMAKE_CUDA_FLAGS "${_gpucts_cuda_flags}")
set(CMAKE_CUDA_ARCHITECTURES "${_gpucts_cuda_archs}")
if(Torch_FOUND)
  set(GPUCTS_HAVE_TORCH ON)
  message(STATUS "gpucts: Torch found at ${Torch_DIR}")
else()
  message(STATUS "gpucts: Torch not found (pip torch or libtorch-dev): the libtorch suite will not be built")
endif()
