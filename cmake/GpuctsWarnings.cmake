# GPUCTS_WARNINGS (default ON): -Wall -Wextra for every target this project builds, the host side
# of .cu files through nvcc's -Xcompiler. Only targets created below the including directory get
# them; third-party code comes in through imported targets, whose include directories are SYSTEM.
# The ci preset adds CMAKE_COMPILE_WARNING_AS_ERROR, so that a new warning fails CI.
include_guard(GLOBAL)
option(GPUCTS_WARNINGS "Compile the project's own code with -Wall -Wextra" ON)
if(GPUCTS_WARNINGS AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-Wall> $<$<COMPILE_LANGUAGE:C,CXX>:-Wextra>
                      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
endif()
