#!/usr/bin/env bash
# The preflight's cost (python -m gpucts_preflight, check only) at 2, 4 and 8 ranks on one GPU, each rank
# a simulated host (its own NCCL_HOSTID), beside the same ranks only importing torch: the difference is
# what the preflight adds to a job's start. Prints one line per (ranks, round) and a median per ranks.
#   bench/preflight_cost.sh [--rounds N] [--ranks "2 4 8"] [--python EXE]
# With gpucts on PATH (or GPUCTS_HOME) it measures the gpucts-backed path, else the package's own probe.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 ranks="2 4 8" py=${PYTHON:-python3}
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "preflight_cost.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
"$py" -c 'import torch' 2>/dev/null || { echo "preflight_cost.sh: $py has no torch" >&2; exit 77; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# run_ranks N PORT CMD...: starts N ranks, waits for all; prints the wall seconds, fails if one failed.
run_ranks() {
  local n=$1 port=$2; shift 2
  local t0 pids=() rc=0
  t0=$(date +%s.%N)
  for ((r = 0; r < n; r++)); do
    env RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 NODE_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        NCCL_HOSTID="$(hostname)-simhost$r" NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
        PYTHONPATH="$here/preflight:$here/python${PYTHONPATH:+:$PYTHONPATH}" "$@" >"$logs/r$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN {printf "%.3f\n", a - b}'
  [ "$rc" -eq 0 ] || { echo "preflight_cost.sh: a rank exited $rc:" >&2; cat "$logs"/r*.log >&2; return 1; }
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
port=$((29000 + RANDOM % 2000))
for n in $ranks; do
  : >"$logs/pre.$n" && : >"$logs/base.$n"
  for ((i = 1; i <= rounds; i++)); do
    port=$((port + 7))
    base=$(run_ranks "$n" "$port" "$py" -c 'import torch, torch.distributed; torch.cuda.device_count()')
    port=$((port + 7))
    pre=$(run_ranks "$n" "$port" "$py" -m gpucts_preflight)
    said=$(grep -hoE 'PASS \(.*\) in [0-9.]+ s' "$logs"/r0.log || true)
    printf 'ranks %d round %d: torch import %.2f s, preflight %.2f s (%s)\n' "$n" "$i" "$base" "$pre" "$said"
    echo "$base" >>"$logs/base.$n"; echo "$pre" >>"$logs/pre.$n"
  done
  b=$(median <"$logs/base.$n") p=$(median <"$logs/pre.$n")
  printf 'ranks %d median: torch import %.2f s, preflight %.2f s, the preflight adds %.2f s\n' "$n" "$b" "$p" \
    "$(awk -v a="$p" -v b="$b" 'BEGIN {print a - b}')"
done
