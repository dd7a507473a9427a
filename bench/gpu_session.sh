#!/usr/bin/env bash
# One call on the GPU machine (device tool): build, run every suite and the benchmarks, keep logs.
#   bench/gpu_session.sh [stage...]   stages: build ctest collectives payload repro wheel mpcheck check qualify
#   (not run by default: levels = `gpucts qualify --level quick|standard|full`, each timed;
#    vsnccl = bench/vs_nccl_tests.sh on the nccl-tests source carried in .nccl-tests/)
# Logs go to $OUT (the device tool's folder) or ./gpu-out; at most 8 files come back, so the XML
# and journals are packed into one tarball.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build ctest collectives payload repro wheel mpcheck check qualify)
has() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
t0=$SECONDS
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }

if has build; then
  stamp build
  { cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${GPUCTS_PIN[@]}" && cmake --build "$B" -j"$(nproc)"; } >"$OUT/build.log" 2>&1 \
    || { tail -60 "$OUT/build.log"; exit 1; }
  grep -E '^-- gpucts' "$OUT/build.log"
fi
if has ctest; then
  stamp ctest
  ctest --test-dir "$B" -j4 --output-junit ctest-junit.xml --timeout 600 >"$OUT/ctest.log" 2>&1
  grep -E 'tests passed|tests failed|\(Failed\)|\(Skipped\)|\(Timeout\)|Not Run|Total Test' "$OUT/ctest.log" | tail -40
fi
if has collectives; then
  stamp collectives
  bash bench/time_collectives.sh "$B" 1 2>&1 | tail -25 | tee "$OUT/collectives.log"
fi
if has payload; then
  stamp payload
  "$B/bench/gpucts_payload_bench" 2>&1 | tail -30 | tee "$OUT/payload_bench.log"
fi
# The NCCL of torch's wheel, where one is installed beside the system's.
wheel_nccl=$(python3 -c "import nvidia.nccl as n, os; print(os.path.join(list(n.__path__)[0], 'lib'))" 2>/dev/null)
if has repro; then
  stamp "repro (system NCCL, then the wheel's: $wheel_nccl)"
  { "$B/bench/gpucts_repro_onerank_tail"; echo "exit $?";
    [ -n "$wheel_nccl" ] && LD_LIBRARY_PATH=$wheel_nccl "$B/bench/gpucts_repro_onerank_tail"; echo "exit $?"; } 2>&1 | tee "$OUT/repro.log" | grep -E 'NCCL runtime|WRONG|case\(s\)|exit'
fi
if has wheel && [ -n "$wheel_nccl" ]; then
  stamp "collectives against the wheel's NCCL"
  LD_LIBRARY_PATH=$wheel_nccl "$B/suites/gpucts_collectives" --world-size=1 --gtest_brief=1 \
    --gtest_output="xml:$B/gtest-xml/wheel_collectives_w1.xml" 2>&1 | tail -22 | tee "$OUT/wheel_collectives.log"
fi
if has mpcheck && [ -n "$wheel_nccl" ]; then
  stamp "gpucts check under mpirun, rank 1 on the wheel's NCCL"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  mpirun --oversubscribe -np 1 "$B/cli/gpucts" check : -np 1 -x LD_LIBRARY_PATH="$wheel_nccl" "$B/cli/gpucts" check 2>&1 | tee "$OUT/mpcheck.log" | head -20
  echo "mpirun check exit ${PIPESTATUS[0]}"
fi
if has check; then
  stamp check
  "$B/cli/gpucts" fingerprint --output "$OUT/fingerprint.json"
  { "$B/cli/gpucts" check; echo "exit $?"; "$B/cli/gpucts" check --json; } >"$OUT/check.log" 2>&1
  head -40 "$OUT/check.log"
fi
if has qualify; then
  stamp qualify
  "$B/cli/gpucts" qualify --build-dir "$B" --output "$OUT/bundle" 2>&1 | tail -30
  tar czf "$OUT/bundle.tgz" -C "$OUT" bundle && rm -rf "$OUT/bundle"
fi
if has levels; then
  for level in quick standard full; do
    stamp "qualify --level $level"
    s0=$SECONDS
    "$B/cli/gpucts" qualify --build-dir "$B" --level "$level" --accept-known nccl-1950 \
      --output "$OUT/level-$level" >"$OUT/level-$level.log" 2>&1
    echo "level $level: exit $?, $((SECONDS - s0)) s wall" | tee -a "$OUT/levels.txt"
    tail -4 "$OUT/level-$level.log"
    rm -rf "$OUT/level-$level"
  done
fi
if has vsnccl; then
  stamp "gpucts_bandwidth beside nccl-tests"
  bash bench/vs_nccl_tests.sh --nccl-tests .nccl-tests --build "$B" --out "$OUT/vs_nccl_tests" 2>&1 | tail -40
fi
tar czf "$OUT/xml.tgz" -C "$B" gtest-xml journal rank-logs ctest-junit.xml 2>/dev/null
stamp done
