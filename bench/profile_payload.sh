#!/usr/bin/env bash
# Where the payload kernels' time goes, on the GPU machine: builds only the payload benchmark,
# runs it, then Nsight Compute (clocks left alone) on the fill and exact-check kernels of the
# dtypes named: duration, DRAM throughput, instructions executed, issue rate. Logs under $OUT.
#   bench/profile_payload.sh [dtype,...]      (default u8,f8e4m3,bf16,f32)
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
dtypes=${1:-u8,f8e4m3,bf16,f32}
{ cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${GPUCTS_PIN[@]}" && cmake --build "$B" -j"$(nproc)" --target gpucts_payload_bench; } \
  >"$OUT/profile_build.log" 2>&1 || { tail -40 "$OUT/profile_build.log"; exit 1; }
"$B/bench/gpucts_payload_bench" --dtypes "$dtypes" 2>&1 | tee "$OUT/payload_bench.log"
# The fp8 lanes the other way (integer ops instead of the packed conversions), for comparison.
if [ "${FP8_COMPARE:-1}" = 1 ]; then
  { cmake -S . -B "$B-fp8int" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${GPUCTS_PIN[@]}" -DCMAKE_CUDA_FLAGS=-DGPUCTS_FP8_PACKED_CVT=0 &&
    cmake --build "$B-fp8int" -j"$(nproc)" --target gpucts_payload_bench; } >>"$OUT/profile_build.log" 2>&1 &&
    { echo "== GPUCTS_FP8_PACKED_CVT=0"; "$B-fp8int/bench/gpucts_payload_bench" --dtypes f8e4m3,f8e5m2; } 2>&1 | tee -a "$OUT/payload_bench.log"
fi
ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$ncu_bin" ] && [ "${NCU:-1}" = 1 ]; then
  IFS=, read -ra ds <<<"$dtypes"
  for d in "${ds[@]}"; do
    for k in fill_kernel check_exact_kernel; do
      "$ncu_bin" --clock-control none -k "regex:$k" -c 1 --section SpeedOfLight --section Occupancy \
        --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats \
        "$B/bench/gpucts_payload_bench" --dtypes "$d" --reps 1 2>&1 | grep -vE '^==PROF==|^\s*$' | grep -vE '^(cuda|kernel|poison|fill_input|verify) '
    done
  done >"$OUT/ncu.txt" 2>&1
  grep -E '^  void|Duration|DRAM Throughput|Executed Instructions  |Issued Warp Per|Registers Per|Achieved Occupancy' "$OUT/ncu.txt" \
    | sed -E 's/\(Exact.*CC [0-9.]+//' | head -80
fi
