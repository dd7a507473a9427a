#!/usr/bin/env bash
# CTest entry gpucts_slurm_node_check: ci/slurm/gpucts_node_check under a Slurm-like environment
# (SLURMD_NODENAME, SLURM_SCRIPT_CONTEXT, SLURM_JOB_ID set; scontrol a stub on PATH that records
# its arguments): this machine's check, a failing fingerprint, a check past its time bound, and a
# gpucts that is missing.   node_check_test.sh <gpucts> <failing fingerprint.json>
set -u
gpucts=$1 failing=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >> "%s/scontrol.log"\n' "$work" > "$work/bin/scontrol"
printf '#!/bin/sh\nsleep 30\n' > "$work/bin/slow-gpucts"
chmod +x "$work/bin/scontrol" "$work/bin/slow-gpucts"
export PATH="$work/bin:$PATH" SLURMD_NODENAME=node-a SLURM_SCRIPT_CONTEXT=prolog_slurmd SLURM_JOB_ID=42
fails=0
expect() {  # expect <what> <rc wanted> <rc got> <scontrol line wanted or "">
  local log=""
  [ -f "$work/scontrol.log" ] && log=$(cat "$work/scontrol.log")
  if [ "$2" != "$3" ] || [ "$log" != "$4" ]; then
    echo "FAIL $1: exit $3 (wanted $2), scontrol: '${log}' (wanted '$4')"
    fails=$((fails + 1))
  else
    echo "ok   $1"
  fi
  rm -f "$work/scontrol.log"
}

# This machine: the prolog answers as gpucts check does, and drains only when it fails.
GPUCTS=$gpucts "$gpucts" check --no-python >/dev/null 2>&1
check_rc=$?
GPUCTS=$gpucts "$here/gpucts_node_check" 2>/dev/null
rc=$?
if [ "$check_rc" = 0 ]; then expect "this machine" 0 "$rc" ""; else expect "this machine" 1 "$rc" "$(cat "$work/scontrol.log" 2>/dev/null)"; fi

GPUCTS=$gpucts GPUCTS_NODE_CHECK_ARGS="--fingerprint $failing" "$here/gpucts_node_check" 2>/dev/null
expect "error finding" 1 $? "update nodename=node-a state=drain reason=gpucts check (prolog): driver-too-old-for-cuda-runtime"

start=$SECONDS
GPUCTS=$work/bin/slow-gpucts GPUCTS_NODE_CHECK_TIMEOUT_S=1 SLURM_SCRIPT_CONTEXT=epilog_slurmd \
  "$here/gpucts_node_check" 2>/dev/null
expect "time bound" 1 $? "update nodename=node-a state=drain reason=gpucts check (epilog): no answer in 1 s"
[ $((SECONDS - start)) -lt 15 ] || { echo "FAIL the time bound took $((SECONDS - start)) s"; fails=$((fails + 1)); }

GPUCTS=$work/bin/no-such-gpucts "$here/gpucts_node_check" 2>/dev/null
expect "gpucts missing: logged, not drained" 0 $? ""
exit $((fails > 0))
