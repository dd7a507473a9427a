#!/usr/bin/env bash
# A/B of payload-kernel build variants on the GPU machine: builds gpucts_payload_bench once per
# variant (CUDA flags, e.g. the GPUCTS_CHECK_* knobs of kernels/verify_impl.cuh), in parallel, then
# runs them one after another, `rounds` times in alternation, so drift hits every variant alike.
#   bench/payload_variants.sh <rounds> <dtypes> name='flags' [name='flags' ...]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
rounds=${1:?usage: payload_variants.sh <rounds> <dtypes> name=flags...}
dtypes=${2:?usage: payload_variants.sh <rounds> <dtypes> name=flags...}
shift 2
names=()
jobs_each=$(( $(nproc) / ($# > 0 ? $# : 1) ))
[ "$jobs_each" -lt 1 ] && jobs_each=1
for v in "$@"; do
  name=${v%%=*} flags=${v#*=}
  names+=("$name")
  { cmake -S . -B "build/variant-$name" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${GPUCTS_PIN[@]}" -DCMAKE_CUDA_FLAGS="$flags" &&
    cmake --build "build/variant-$name" -j"$jobs_each" --target gpucts_payload_bench; } >"$OUT/variant-$name-build.log" 2>&1 &
done
wait
for r in $(seq 1 "$rounds"); do
  for name in "${names[@]}"; do
    bin="build/variant-$name/bench/gpucts_payload_bench"
    [ -x "$bin" ] || { echo "variant $name: build failed (variant-$name-build.log)"; continue; }
    echo "== variant $name, round $r"
    "$bin" --dtypes "$dtypes" | grep -E 'kernels|fill_input .* exact|copy rate'
  done
done
