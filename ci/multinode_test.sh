#!/usr/bin/env bash
# CTest entry gpucts_multinode: ci/multinode on this machine with mpirun over localhost (2 ranks of
# gpucts_mp_preflight): it writes a bundle as qualify writes it, exits with the bundle's verdict,
# copies its junit.xml beside it, forwards to the ranks what qualify sets, and refuses an --out
# that already holds a bundle.   multinode_test.sh <build dir>
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
check() {  # check <what> <condition...>
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

timeout 240 "$here/multinode" --launcher mpirun --hosts localhost --ranks-per-node 2 --build "$build" \
  --suite mp_preflight --timeout 120 --out "$work/run" >"$work/log" 2>&1
rc=$?
cat "$work/log"
b="$work/run/bundle"
check "a bundle with summary, manifest and junit" test -f "$b/summary.html" -a -f "$b/manifest.json" -a -f "$b/junit.xml"
verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$b/manifest.json" 2>/dev/null)
case "$verdict" in pass | waived) want=0 ;; fail) want=1 ;; no_gpu) want=3 ;; *) want=4 ;; esac
check "exit $rc is the verdict's ($verdict)" test "$rc" = "$want"
check "the suite ran as an entry, 2 ranks" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
s = [x for x in m["suites"] if x["name"] == "gpucts_mp_preflight_multinode"]
sys.exit(0 if s and s[0]["status"] == "passed" else 1)' "$b/manifest.json"
check "rank 1 wrote its own journal" test -n "$(ls "$b/journal" | grep 'rank1')"
check "junit.xml beside the bundle is the bundle's" cmp -s "$work/run/junit.xml" "$b/junit.xml"
check "every forwarded variable was set" bash -c "! grep -q 'could not find environment variable' '$work/log'"
"$here/multinode" --launcher mpirun --hosts localhost --build "$build" --suite mp_preflight \
  --out "$work/run" >"$work/again" 2>&1
again=$?
check "an --out holding a bundle is refused (exit $again)" test "$again" = 2
[ "$fails" = 0 ] && echo "multinode_test: PASS" || echo "multinode_test: $fails failed"
[ "$fails" = 0 ]
