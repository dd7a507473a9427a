#!/usr/bin/env bash
# One device call for the Python suites, the seeds' causes, the transport check and the verdicts:
#   bash bench/round3.sh [stage...]   stages: build py seeds transport quick full (default: all but full)
# Logs go to $OUT (or ./gpu-out); every stage is bounded so the call stays inside the device limit.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build py seeds transport quick)
has() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
t0=$SECONDS
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }
G=$B/cli/gpucts
summ() { grep -E 'tests passed|tests failed|\(Failed\)|\(Skipped\)|\(Timeout\)|Not Run|Total Test|Test +#' "$1" | tail -40; }

if has build; then
  stamp build
  { cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DGPUCTS_PIN_ENV="NCCL_NVLS_ENABLE=0;TORCH_SYMM_MEM_DISABLE_MULTICAST=1;NVSHMEM_DISABLE_NVLS=1" &&
    cmake --build "$B" -j"$(nproc)"; } >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
  grep -E '^-- gpucts' "$OUT/build.log" | head
fi
if has py; then
  stamp "python suites (1, 2, 4 ranks; injected corruption)"
  timeout 420 ctest --test-dir "$B" -R '^gpucts_py_(torch_w1|torch_sim2|torch_sim4|sim2_inject|logic_w1)$' -j1 -V \
    >"$OUT/py.log" 2>&1
  summ "$OUT/py.log"
  grep -hE 'cases|passed|failed|skipped' "$OUT/py.log" | grep -E '^(gpucts_py|\[py|world)' | tail -20
fi
if has seeds; then
  stamp "seed causes"
  nccl_cache_from_carried
  timeout 420 ctest --test-dir "$B" -R "^gpucts_seed_(${SEEDS:-.*})$" -j3 --timeout 150 -V >"$OUT/seeds.log" 2>&1
  summ "$OUT/seeds.log"
  grep -hE '^\| ' "$OUT/seeds.log" | sort -u
fi
if has transport; then
  stamp "transport on simulated hosts"
  timeout 240 ctest --test-dir "$B" -R '^gpucts_mp_collectives_sim2$' --output-on-failure >"$OUT/transport.log" 2>&1
  summ "$OUT/transport.log"
  grep -ho 'gpucts.transport" value="[^"]*' "$B"/gtest-xml/gpucts_mp_collectives_sim2*.xml 2>/dev/null | head -2
  grep -h -A3 'ChannelsMatchTheWorld' "$B"/gtest-xml/gpucts_mp_collectives_sim2*.xml 2>/dev/null | head -8
  mkdir -p "$OUT/transport-xml" && cp "$B"/gtest-xml/gpucts_mp_collectives_sim2*.xml "$B"/rank-logs/*sim2*nccl* \
    "$OUT/transport-xml/" 2>/dev/null; ls "$B"/gtest-xml | grep -i sim2 | head
fi
if has quick; then
  stamp "qualify --level quick, then the same with one case corrupted"
  rm -rf q-quick q-inject
  timeout 240 "$G" qualify --level quick --output q-quick >"$OUT/quick.log" 2>&1; echo "quick exit $?"
  grep -E 'PASS|FAIL|NO GPU|NOT RUN|because' "$OUT/quick.log" | head -5
  GPUCTS_INJECT='corrupt:^AllReduce\.f32_sum:7' timeout 240 "$G" qualify --level quick --output q-inject \
    >"$OUT/inject.log" 2>&1; echo "inject exit $?"
  grep -E 'PASS|FAIL|NO GPU|NOT RUN|because' "$OUT/inject.log" | head -5
  tar czf "$OUT/quick-bundles.tgz" q-quick/manifest.json q-quick/summary.md q-inject/manifest.json q-inject/summary.md 2>/dev/null
fi
if has full; then
  stamp "qualify --level full --expect-gpus 1 --accept-known nccl-1950"
  rm -rf q-full
  timeout 560 "$G" qualify --level full --expect-gpus 1 --accept-known nccl-1950 --output q-full >"$OUT/full.log" 2>&1
  echo "full exit $?"
  grep -E 'PASS|FAIL|NO GPU|NOT RUN|because|warning' "$OUT/full.log" | head -8
  tar czf "$OUT/full-bundle.tgz" q-full/manifest.json q-full/summary.md q-full/check.txt 2>/dev/null
fi
stamp done
