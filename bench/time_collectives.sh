#!/usr/bin/env bash
# Times the whole collectives suite (communicator setup included) against the 60 s target.
#   bench/time_collectives.sh <build-dir> [world-size]   (world size default 1)
set -euo pipefail
build="${1:?usage: time_collectives.sh <build-dir> [world-size]}"
world="${2:-1}"
bin="$build/suites/gpucts_collectives"
[[ -x "$bin" ]] || { echo "time_collectives.sh: $bin not built" >&2; exit 2; }
xml="$build/gtest-xml/bench_collectives_w${world}.xml"
start=$(date +%s%N)
set +e
timeout --kill-after=10 900 "$bin" --world-size="$world" --gtest_brief=1 --gtest_output="xml:$xml" | tail -n 20
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s%N)
wall=$(( (end - start) / 1000000 ))
cases=$(grep -c '<testcase ' "$xml" || true)
echo "time_collectives: world $world, exit $rc, $cases JUnit cases, wall ${wall} ms (target <= 60 s on one H200)"
exit "$rc"
