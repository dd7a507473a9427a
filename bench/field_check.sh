#!/usr/bin/env bash
# One GPU-machine call as a user of an offline image: the README's ci/qualify from this fresh copy
# (no registry, no xmllint), then nccl-tests beside the bandwidth suite on the build it made, then
# simulated hosts. Each stage is capped so the call ends inside the device tool's limit.
#   bench/field_check.sh [qualify_s vs_s sim_s]
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
cap_q=${1:-300} cap_vs=${2:-170} cap_sim=${3:-110}
t0=$SECONDS
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }
stamp "ci/qualify --expect-gpus 1 --accept-known nccl-1950 (xmllint: $(command -v xmllint || echo absent))"
timeout -k 10 "$cap_q" ci/qualify --expect-gpus 1 --accept-known nccl-1950 --output "$OUT/q" >"$OUT/qualify.log" 2>&1
echo "ci/qualify exit $? after $((SECONDS - t0)) s"
grep -E '^\[gpucts|^gpucts qualify|^(PASS|FAIL|NO GPU)|because:|warning:' "$OUT/qualify.log" | cut -c1-220 | tail -25
[ -d "$OUT/q" ] && tar czf "$OUT/qualify-bundle.tgz" -C "$OUT" q && rm -rf "$OUT/q"
stamp "nccl-tests beside gpucts_bandwidth (one rank)"
timeout -k 10 "$cap_vs" bash bench/vs_nccl_tests.sh --nccl-tests .nccl-tests --build build/qualify --out "$OUT/vs" \
  >"$OUT/vs.log" 2>&1
echo "vs_nccl_tests exit $?"; cat "$OUT/vs/vs_nccl_tests.md" 2>/dev/null | head -60
[ -d "$OUT/vs" ] && tar czf "$OUT/vs.tgz" -C "$OUT" vs && rm -rf "$OUT/vs"
stamp "simulated hosts"
SIM_TIMEOUT_S=$cap_sim SIM_TESTS=${SIM_TESTS:-"gpucts_mp_collectives_sim2_inject_corrupt gpucts_mp_collectives_sim8 gpucts_torch_c10d_sim2"} \
  bash bench/sim_hosts.sh build/qualify ctest faults check 2>&1 | tail -40
stamp done
