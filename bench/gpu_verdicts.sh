#!/usr/bin/env bash
# The verdicts on the GPU machine (device tool): what check says of the stack, a full qualify as a
# gate sees it, the same with the known NCCL defect accepted, and an injected corruption in a case
# no defect explains, which must still fail with the waiver given.
#   bench/gpu_verdicts.sh [build-dir]     (after bench/gpu_session.sh build)
# VERDICTS_SKIP_DEFAULT=1 leaves out the default qualify (the waived one runs the same suites).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
B=${1:-$B}
t0=$SECONDS
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }
gate() { "$@"; echo "exit $?"; }

stamp "check"
gate "$B/cli/gpucts" check >"$OUT/check.log" 2>&1
grep -E "^gpucts check|^ERROR|^exit" "$OUT/check.log" | cut -c1-300

if [ "${VERDICTS_SKIP_DEFAULT:-0}" != 1 ]; then
  stamp "qualify (default)"
  gate "$B/cli/gpucts" qualify --build-dir "$B" --output "$OUT/q-default" 2>&1 | tail -4
fi
stamp "qualify --accept-known nccl-1950"
gate "$B/cli/gpucts" qualify --build-dir "$B" --accept-known nccl-1950 --output "$OUT/q-waived" 2>&1 | tail -4
stamp "qualify, injected corruption in i32 sum (no known defect), waiver given"
GPUCTS_INJECT='corrupt:^AllReduce\.i32_sum_61_outofplace_w1$:7' \
  gate "$B/cli/gpucts" qualify --build-dir "$B" --tests '^gpucts_collectives$' --accept-known nccl-1950 \
  --output "$OUT/q-inject" 2>&1 | tail -4
qs=()
for q in q-default q-waived q-inject; do
  [ -d "$OUT/$q" ] || continue
  qs+=("$q")
  echo "--- $q summary (head)"; sed -n 1,40p "$OUT/$q/summary.md" | cut -c1-240
done
tar czf "$OUT/bundles.tgz" -C "$OUT" "${qs[@]}" && rm -rf "$OUT"/q-*
stamp done
