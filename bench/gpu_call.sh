#!/usr/bin/env bash
# One device call over one shared build (build/qualify, the tree ci/qualify uses), so that a later
# call on the same warm machine skips the build. Steps run in the order given, each bounded; every
# log is packed into $OUT/logs.tgz at the end (the device tool brings back at most 8 files).
#   bash bench/gpu_call.sh [--limit S] STEP...
# Steps: build py seeds transport quick (bench/round3.sh's stages), seedsp (every seed cause, 4 at a
# time, outside ctest), probe (bench/py_parity_probe.py under NCCL's COLL log), full (ci/qualify
# --level full; FULL_JOBS=N side by side), fresh (full in a copy without build/, the build in its
# wall time), campaign (2.27.7 against the system NCCL), preflight (bench/preflight_cost.sh),
# install (a moved install tree with a runtime PATH, bench/field_round.sh), vs1 / vs2 (bench/vs_nccl_tests.sh at one
# rank and at two simulated ranks, the goal sizes only; vs2a, vs2b, vs2c: vs2's collectives in
# three parts, one call each; vs1s, vs2s: the small goal points with many timed calls, vs2l: 1 GiB
# alone; vs1p: vs1s on one CPU; vs2r: the rooted small points at two ranks with nccl-tests -C 1;
# VS_PREBUILT=TARBALL uses binaries built elsewhere).
set -uo pipefail
limit=570
[ "${1:-}" = --limit ] && { limit=$2; shift 2; }
final=${OUT:-$PWD/gpu-out}
export OUT=/tmp/gpu-call-logs && rm -rf "$OUT" && mkdir -p "$OUT" "$final"
export GPUCTS_BUILD=build/qualify OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
source "$(dirname "$0")/device_env.sh"
t0=$SECONDS
left() { echo $((limit - (SECONDS - t0))); }
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }
pack() { tar czf "$final/logs.tgz" -C "$OUT" . 2>/dev/null; cp "$OUT"/*.md "$final/" 2>/dev/null; }
trap pack EXIT

ensure_build() {
  if [ ! -f "$B/CMakeCache.txt" ]; then
    cmake --preset qualify -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/configure.log" 2>&1 ||
      { tail -30 "$OUT/configure.log"; return 1; }
  fi
  local s=$SECONDS
  cmake --build --preset qualify -j"$(nproc)" >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; return 1; }
  echo "build: $((SECONDS - s)) s, $(grep -c 'warning:' "$OUT/build.log") warning lines"
}

for step in "$@"; do
  [ "$(left)" -lt 20 ] && { echo "not run (no time left): $step"; continue; }
  stamp "$step ($(left) s left)"
  case $step in
    build) ensure_build || exit 1 ;;
    py | seeds | transport | quick) timeout -k 5 "$(left)" bash bench/round3.sh "$step" ;;
    seedsp)  # every seed cause at once, 4 at a time, outside ctest (whose GPU resource runs them one by one)
      py=$(sed -n 's/^GPUCTS_PYTHON3:[A-Z]*=//p' "$B/CMakeCache.txt"); mkdir -p "$OUT/seeds"
      nccl_cache_from_carried
      "$py" preflight/repro/seed_causes.py --list | GPUCTS_SEED_BOUND_S=${GPUCTS_SEED_BOUND_S:-30} timeout -k 5 "$(left)" \
        xargs -P4 -I{} sh -c "'$py' preflight/repro/seed_causes.py {} --logdir /tmp/seedlogs/{} >'$OUT/seeds/{}.log' 2>&1; echo \"{} exit \$?\""
      grep -h '^| ' "$OUT"/seeds/*.log ;;
    probe)
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL timeout -k 5 120 python3 bench/py_parity_probe.py >"$OUT/probe.log" 2>&1
      echo "probe exit $?"; grep -E '^(rs|pl):' "$OUT/probe.log"
      grep -cE 'ReduceScatter' "$OUT/probe.log" | sed 's/^/NCCL ReduceScatter log lines: /'
      grep -cE 'AllReduce' "$OUT/probe.log" | sed 's/^/NCCL AllReduce log lines: /' ;;
    full | fresh)
      # FULL_ACCEPT: the waivers (default: the NCCL defect and the two torch defects of torch 2.11);
      # FULL_JOBS: gpucts qualify --jobs (suites side by side). "fresh" runs it in a copy of this tree
      # without build/ (a new user's build included in the wall time), "full" in this tree.
      dir=$PWD
      if [ "$step" = fresh ]; then
        dir=/tmp/fresh-$SECONDS && mkdir -p "$dir" && tar --exclude=./build --exclude=./.campaign -cf - . | tar -C "$dir" -xf -
      fi
      rm -rf /tmp/q-full
      s=$SECONDS
      (cd "$dir" && timeout -k 10 "$(left)" ci/qualify --level full --expect-gpus 1 --jobs "${FULL_JOBS:-1}" \
        --accept-known "${FULL_ACCEPT:-nccl-1950,torch-190745,torch-rs1-premulsum}" --output /tmp/q-full) \
        >"$OUT/$step.log" 2>&1
      echo "ci/qualify --level full --jobs ${FULL_JOBS:-1} ($step) exit $? in $((SECONDS - s)) s"
      cp "$OUT/$step.log" "$OUT/full.log"
      grep -E '^(PASS|FAIL|NO GPU|NOT RUN|INTERRUPTED)|because|suite\(s\)|cases' "$OUT/full.log" | cut -c1-220 | head -12
      cp /tmp/q-full/manifest.json "$OUT/full-manifest.json" 2>/dev/null
      cp /tmp/q-full/summary.md "$OUT/full-summary.md" 2>/dev/null ;;
    campaign)
      CAMPAIGN_SKIP_BUILD=1 CAMPAIGN_NO_BISECT=1 CAMPAIGN_LIMIT_S=$(left) OUT=$OUT/campaign \
        timeout -k 5 "$(left)" bash bench/campaign.sh 2.27.7 2.28.3 >"$OUT/campaign-run.log" 2>&1
      echo "campaign.sh exit $?"; grep -E 'campaign exit|verdict|PASS|FAIL' "$OUT/campaign-run.log" | head -12 ;;
    preflight) timeout -k 5 "$(left)" bash bench/preflight_cost.sh --rounds "${PREFLIGHT_ROUNDS:-3}" 2>&1 | tee "$OUT/preflight.log" ;;
    install) FIELD_ACCEPT=${FULL_ACCEPT:-nccl-1950,torch-190745,torch-rs1-premulsum} FIELD_STAGES=install timeout -k 5 "$(left)" bash bench/field_round.sh "$(left)" ;;
    vs1 | vs2 | vs2a | vs2b | vs2c | vs1s | vs1p | vs2r | vs2s | vs2l)
      # VS_PREBUILT=TARBALL: gpucts_bandwidth, gpucts_mp_bandwidth and nccl-tests built elsewhere
      # (inst/libexec/gpucts/, nt-bin/, nt-bin-mpi/), nothing built here; else both built from source.
      tools=(--nccl-tests .nccl-tests --build "$B")
      if [ -n "${VS_PREBUILT:-}" ]; then
        rm -rf /tmp/vs-prebuilt && mkdir -p /tmp/vs-prebuilt && tar -C /tmp/vs-prebuilt -xJf "$VS_PREBUILT" || exit 1
        nt=/tmp/vs-prebuilt/nt-bin
        case $step in vs1 | vs1s | vs1p) ;; *) nt=/tmp/vs-prebuilt/nt-bin-mpi ;; esac
        tools=(--nccl-tests-bin "$nt" --gpucts-bin /tmp/vs-prebuilt/inst/libexec/gpucts/gpucts_bandwidth)
      fi
      # Two simulated ranks move 1 GiB over sockets in about 0.6 s (some 20 s per collective and
      # round): vs2a, vs2b and vs2c split the collectives over three calls; vs_nccl_tests.py
      # compare --from joins them, and the rounds of a call cut short.
      sim=(--ranks 2 --rounds 5 --iters 5 --warmup 1 --reps 1 --no-cputime)
      small1=(--rounds 5 --reps 1 --no-cputime --iters 2000 --warmup 100 --sweep 8:16:2)
      case $step in
        vs1) what=(--rounds 5 --require) ;;
        vs2) what=("${sim[@]}") ;;
        vs2a) what=("${sim[@]}" --colls all_reduce,all_gather,broadcast) ;;
        vs2b) what=("${sim[@]}" --colls reduce_scatter,reduce,alltoall) ;;
        vs2c) what=("${sim[@]}" --colls scatter,gather,sendrecv) ;;
        # The goal sizes apart, each with its own count of timed calls: a small point of 20 calls
        # lasts some 150 us, inside the host's jitter; a 1 GiB point over sockets lasts 0.6 s a call.
        # One repetition, as nccl-tests times one batch.
        vs1s) what=("${small1[@]}") ;;
        # vs1s with both tools on one CPU: does the launch-to-launch change of a small point follow
        # where the process lands?
        vs1p) what=("${small1[@]}" --pin 4 --colls all_reduce,all_gather,reduce_scatter,reduce,scatter,sendrecv) ;;
        # The rooted small points at two ranks again, with nccl-tests' -C 1 run: what runs between
        # two calls where nccl-tests' own time moves most between its runs.
        vs2r) what=(--ranks 2 --rounds 7 --reps 1 --iters 500 --warmup 50 --sweep 8:8:2 --colls reduce,broadcast) ;;
        vs2s) what=("${sim[@]}" --iters 500 --warmup 50 --sweep 8:32:2) ;;
        vs2l) what=("${sim[@]}" --iters 2 --warmup 1 --sweep 1G:1G:2) ;;
      esac
      # The goal sizes alone unless the step names its own sweep (vs_nccl_tests.sh takes the last).
      timeout -k 5 "$(left)" bash bench/vs_nccl_tests.sh "${tools[@]}" --out "$OUT/$step" --sweep 8:1G:134217728 \
        "${what[@]}" --no-nonblocking 2>&1 | grep -v "no data moves" | tail -40 ;;
    *) echo "gpu_call.sh: unknown step $step" >&2; exit 2 ;;
  esac
done
stamp done
