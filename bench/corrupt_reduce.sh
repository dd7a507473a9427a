#!/usr/bin/env bash
# A broken ncclReduce under torch, on the GPU machine: the Python suites' rooted reductions over
# ProcessGroupNCCL at 1 rank and 2 simulated hosts, first over the plain NCCL, then with
# nccl_corrupt_reduce.so preloaded (the root's last f64 element overwritten after each ncclReduce).
# The clean run must pass and the corrupted run must fail exactly the f64 reduce cases.
#   bash bench/corrupt_reduce.sh [--filter REGEX] [--worlds "1 sim2"]
set -uo pipefail
filter='^Collectives/(reduce|all_reduce)_'
worlds="1 sim2"
while [ $# -gt 0 ]; do
  case $1 in
    --filter) filter=$2; shift 2 ;;
    --worlds) worlds=$2; shift 2 ;;
    *) echo "corrupt_reduce.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
OUT_DEFAULT=corrupt-out source "$(dirname "$0")/device_env.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
shim=${TMPDIR:-/tmp}/nccl_corrupt_reduce.so
gcc -shared -fPIC -O2 -I/usr/local/cuda/include -o "$shim" "$root/bench/nccl_corrupt_reduce.c" -ldl || exit 1
export PYTHONPATH=$root/suites/python:$root/python${PYTHONPATH:+:$PYTHONPATH}
counts() {  # passed, failed (apart from known defects), known-defect failures, skipped; failed names
  python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
def bad(c):
    return c.find("failure") is not None or c.find("error") is not None
def known(c):
    return any(p.get("name") == "gpucts.known_defect" for p in c.iter("property"))
failed = [c.get("classname", "") + "/" + c.get("name", "") for c in cases if bad(c) and not known(c)]
waived = [c for c in cases if bad(c) and known(c)]
skipped = [c for c in cases if c.find("skipped") is not None]
print("passed %d failed %d known-defect %d skipped %d" % (
    len(cases) - len(failed) - len(waived) - len(skipped), len(failed), len(waived), len(skipped)))
for n in failed:
    print("  failed: " + n)
PY
}
rc=0
for w in $worlds; do
  for mode in clean corrupt; do
    xml=$OUT/reduce-$w-$mode.xml
    pre=
    [ "$mode" = corrupt ] && pre=$shim
    s=$SECONDS
    LD_PRELOAD=$pre python3 -m gpucts_suites --world="$w" --backend=nccl --filter="$filter" \
      --junit-output="$xml" >"$OUT/reduce-$w-$mode.log" 2>&1
    status=$?
    echo "world $w, $mode: exit $status in $((SECONDS - s)) s; $(counts "$xml" | head -1)"
    counts "$xml" | tail -n +2 | sort | uniq | head -40
    # The verdicts this script exists for: the clean run fails nothing but known defects, the
    # corrupted run fails f64 reduce cases and nothing else.
    if [ "$mode" = clean ] && counts "$xml" | grep -q '  failed: '; then rc=1; fi
    if [ "$mode" = corrupt ]; then
      bad=$(counts "$xml" | grep '  failed: ' | grep -vc '/reduce_[a-z_]*f64' || true)
      hit=$(counts "$xml" | grep -c '  failed: .*/reduce_[a-z_]*f64' || true)
      [ "$status" = 1 ] && [ "$hit" -gt 0 ] && [ "$bad" = 0 ] || rc=1
      echo "world $w: $hit f64 reduce case(s) caught, $bad other failure(s)"
    fi
  done
done
exit $rc
