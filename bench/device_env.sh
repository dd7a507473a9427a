# Sourced by the GPU-machine scripts here: the output folder, CUDA on PATH, NVLink multicast off,
# the build folder.   OUT_DEFAULT=<folder> source bench/device_env.sh
OUT=${OUT:-$PWD/${OUT_DEFAULT:-gpu-out}}   # the device tool's $OUT, or a folder here
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
# Several GPUs here may share a host with others: NVLink multicast stays off, for this shell and
# pinned into every test entry of a build configured with "${GPUCTS_PIN[@]}" (gpucts itself sets none).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
GPUCTS_PIN=("-DGPUCTS_PIN_ENV=NCCL_NVLS_ENABLE=0;TORCH_SYMM_MEM_DISABLE_MULTICAST=1;NVSHMEM_DISABLE_NVLS=1")
B=${GPUCTS_BUILD:-build/gpu}
# Another NCCL release for the seed entries: the pruned archives carried in .campaign/, unpacked into
# GPUCTS_NCCL_CACHE unless the caller named one.
nccl_cache_from_carried() {
  [ -z "${GPUCTS_NCCL_CACHE:-}" ] && ls .campaign/nccl-*.tar.xz >/dev/null 2>&1 || return 0
  export GPUCTS_NCCL_CACHE=/tmp/gpucts-nccl-cache && mkdir -p "$GPUCTS_NCCL_CACHE"
  local t
  for t in .campaign/nccl-*.tar.xz; do tar -xJf "$t" -C "$GPUCTS_NCCL_CACHE"; done
}
