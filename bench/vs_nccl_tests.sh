#!/usr/bin/env bash
# gpucts_bandwidth beside nccl-tests on the GPU machine, in one call: builds nccl-tests from its
# source, runs both on the same sizes and the same NCCL, interleaved (per round and collective the
# two tools one after the other, the order alternating from round to round, so that clock and load
# drift reach both), and writes per collective and size the median of the per-round ratios and
# their range.
#   bash bench/vs_nccl_tests.sh --nccl-tests DIR | --nccl-tests-bin DIR [--build DIR | --gpucts-bin FILE]
#        [--out DIR] [--ranks N] [--rounds N] [--reps N]
#        [--nccl-home DIR] [--nccl-lib DIR] [--colls LIST] [--sweep B:E:F] [--iters N] [--warmup N]
#        [--no-nonblocking] [--no-cputime] [--pin CPUS] [--require]
#   --nccl-tests DIR  the NVIDIA/nccl-tests source (never committed here: carry it as .nccl-tests/)
#   --build DIR       gpucts build folder (default build/gpu; configured if absent; gpucts_bandwidth built)
#   --gpucts-bin FILE gpucts_bandwidth as it is (e.g. an install tree's libexec/gpucts/): nothing built
#   --nccl-tests-bin DIR  nccl-tests' binaries as they are (DIR/all_reduce_perf ...), instead of
#                     --nccl-tests: nothing built
#   --out DIR         where logs and the table go (default $OUT of the device tool, or ./gpu-out)
#   --ranks N         the simulated multi-rank mode: N processes on the one GPU, each its own
#                     NCCL_HOSTID, over NCCL's socket transport on lo (nccl-tests built with MPI=1,
#                     run under mpirun); gpucts' side is gpucts_mp_bandwidth (beside
#                     gpucts_bandwidth) under the same mpirun, GPUCTS_SIMULATED_HOSTS=1.
#   --reps N          gpucts' repetitions whose median it reports (default 5; nccl-tests runs once)
#   --rounds N        rounds of the two tools alternating (default 5, at least 5 for RESULTS.md)
#   --nccl-home DIR   NCCL headers (DIR/include) and library (DIR/lib) nccl-tests is built with
#                     (default /usr, the system NCCL); --nccl-lib DIR is put first on
#                     LD_LIBRARY_PATH for both tools (default: the loader's choice)
#   --colls LIST      nccl-tests binaries (default all_reduce,all_gather,broadcast,reduce_scatter,
#                     reduce,alltoall,scatter,gather,sendrecv)
#   --sweep B:E:F     sizes, nccl-tests' -b/-e/-f (default 8:1G:2); -n/-w: --iters (20), --warmup (5)
#   --no-nonblocking  leave out gpucts' nonblocking variant (default: run it too, a column of its own)
#   --no-cputime      leave out nccl-tests' second run per round at the small goal size with -C 1
#                     (its host time of the calls alone, set beside gpucts' host-clock figures in
#                     the table's section on what runs between two timed calls)
#   --pin CPUS        run both tools under taskset -c CPUS (at several ranks the whole mpirun):
#                     a small point's time is host-bound, and moves with where each new process lands
#   --require         exit 1 when a blocking goal point (out of place at 8 B, or 16 B per rank where
#                     nccl-tests runs nothing smaller, and at 1 GiB) misses 0.9-1.1x or was not run
# Output: $OUT/vs_nccl_tests.md (the table, also printed last between two marker lines: paste it
# into bench/RESULTS.md as it is), .csv, nccl-tests/<binary>.rN.log, gpucts/<mode>.rN.<binary>.json
# and their logs. About 2 minutes a round on one H200 with one rank, plus nccl-tests' build.
# Simulated ranks move data over sockets (about 1.8 GB/s at 2 ranks): keep to the goal sizes,
# e.g. --ranks 2 --sweep 8:1G:134217728 --iters 5 --warmup 1 --reps 1 (8 B and 1 GiB only).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src="" nt_bin="" gpucts_bin="" ranks=1 nccl_home=/usr nccl_lib="" colls="all_reduce,all_gather,broadcast,reduce_scatter,reduce,alltoall,scatter,gather,sendrecv"
sweep="8:1G:2" iters=20 warmup=5 reps=5 nonblocking=1 cputime=1 require=0 build="" rounds=5 pin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nccl-tests) src=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --gpucts-bin) gpucts_bin=$2; shift 2 ;;
    --nccl-tests-bin) nt_bin=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --nccl-home) nccl_home=$2; shift 2 ;;
    --nccl-lib) nccl_lib=$2; shift 2 ;;
    --colls) colls=$2; shift 2 ;;
    --sweep) sweep=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --no-nonblocking) nonblocking=0; shift ;;
    --no-cputime) cputime=0; shift ;;
    --require) require=1; shift ;;
    --pin) pin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "vs_nccl_tests.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$nt_bin" ]; then
  [ -d "$nt_bin" ] || { echo "vs_nccl_tests.sh: --nccl-tests-bin '$nt_bin' is not a folder" >&2; exit 2; }
  nt_bin=$(cd "$nt_bin" && pwd)
else
  [ -n "$src" ] && [ -f "$src/src/Makefile" ] || { echo "vs_nccl_tests.sh: --nccl-tests DIR must be nccl-tests' source (DIR/src/Makefile)" >&2; exit 2; }
fi
case "$ranks" in ''|*[!0-9]*|0) echo "vs_nccl_tests.sh: --ranks '$ranks': expected a number >= 1" >&2; exit 2 ;; esac
case "$reps" in ''|*[!0-9]*|0) echo "vs_nccl_tests.sh: --reps '$reps': expected a number >= 1" >&2; exit 2 ;; esac
case "$rounds" in ''|*[!0-9]*|0) echo "vs_nccl_tests.sh: --rounds '$rounds': expected a number >= 1" >&2; exit 2 ;; esac
pinned=()
if [ -n "$pin" ]; then
  command -v taskset >/dev/null || { echo "vs_nccl_tests.sh: --pin needs taskset (util-linux)" >&2; exit 2; }
  taskset -c "$pin" true 2>/dev/null || { echo "vs_nccl_tests.sh: --pin '$pin': not CPUs this machine has (taskset -c)" >&2; exit 2; }
  pinned=(taskset -c "$pin")
fi
IFS=: read -r b e f <<<"$sweep"
[ -n "$b" ] && [ -n "$e" ] && [ -n "$f" ] || { echo "vs_nccl_tests.sh: --sweep '$sweep': expected B:E:F" >&2; exit 2; }
[ -n "$src" ] && src=$(cd "$src" && pwd)
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
[ -n "$build" ] && mkdir -p "$build" && build=$(cd "$build" && pwd)
cd "$here/.."  # the repository root: gpucts builds from here, nccl-tests into build/
OUT_DEFAULT=gpu-out source "$here/device_env.sh"
[ -n "$build" ] && B=$build
t0=$SECONDS
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }
[ -n "$nccl_lib" ] && export LD_LIBRARY_PATH="$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# nccl-tests, built out of its source tree (which may be read-only) into $OUT's sibling folder.
ntb=$PWD/build/nccl-tests-$([ "$ranks" -gt 1 ] && echo mpi || echo single)
[ -n "$nt_bin" ] && ntb=$nt_bin
mkdir -p "$ntb" "$OUT/nccl-tests"
if [ -z "$nt_bin" ]; then
  stamp "build nccl-tests ($src -> $ntb)"
  mpi_args=(MPI=0)
  if [ "$ranks" -gt 1 ]; then
    # Open MPI's headers and libraries where its wrapper says (Debian/Ubuntu keep them outside
    # one prefix): a folder with include/ and lib/ links for the Makefile's MPI_HOME.
    mh=$ntb/mpi-home
    mkdir -p "$mh"
    ln -sfn "$(mpicc --showme:incdirs | awk '{print $1}')" "$mh/include"
    ln -sfn "$(mpicc --showme:libdirs | awk '{print $1}')" "$mh/lib"
    mpi_args=(MPI=1 MPI_HOME="$mh")
  fi
  # A wheel's lib/ has libnccl.so.2 only: the link needs libnccl.so beside it.
  nh=$nccl_home
  if [ ! -e "$nccl_home/lib/libnccl.so" ] && [ -e "$nccl_home/lib/libnccl.so.2" ]; then
    nh=$ntb/nccl-home
    mkdir -p "$nh/lib"
    ln -sfn "$nccl_home/include" "$nh/include"
    ln -sfn "$nccl_home/lib/libnccl.so.2" "$nh/lib/libnccl.so"
  fi
  make -C "$src/src" -j"$(nproc)" BUILDDIR="$ntb" "${mpi_args[@]}" NCCL_HOME="$nh" CUDA_HOME=/usr/local/cuda \
    NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 >"$OUT/nccl-tests-build.log" 2>&1 \
    || { tail -40 "$OUT/nccl-tests-build.log"; exit 1; }
fi

# gpucts_bandwidth up to date in $B (configured first where the folder has no build), or as given.
# With --ranks N > 1 gpucts' side is gpucts_mp_bandwidth, beside gpucts_bandwidth.
targets=(gpucts_bandwidth)
[ "$ranks" -gt 1 ] && targets+=(gpucts_mp_bandwidth)
if [ -n "$gpucts_bin" ]; then
  [ -x "$gpucts_bin" ] || { echo "vs_nccl_tests.sh: --gpucts-bin '$gpucts_bin' is not an executable" >&2; exit 2; }
  gb=$(cd "$(dirname "$gpucts_bin")" && pwd)/$(basename "$gpucts_bin")
else
  stamp "build ${targets[*]} in $B"
  { [ -f "$B/CMakeCache.txt" ] || cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${GPUCTS_PIN[@]}"; } >"$OUT/gpucts-build.log" 2>&1 \
    && cmake --build "$B" $(printf -- '-t %s ' "${targets[@]}") -j"$(nproc)" >>"$OUT/gpucts-build.log" 2>&1 \
    || { tail -40 "$OUT/gpucts-build.log"; exit 1; }
  gb=$B/suites/gpucts_bandwidth
fi
gmb=$(dirname "$gb")/gpucts_mp_bandwidth
[ "$ranks" -eq 1 ] || [ -x "$gmb" ] || { echo "vs_nccl_tests.sh: --ranks $ranks needs $gmb (built only where CMake found MPI)" >&2; exit 2; }

# Per round and collective: nccl-tests' binary and gpucts_bandwidth's cases of the same row, the
# same sizes, iterations and warm-up, one after the other; odd rounds nccl-tests first, even rounds
# gpucts first.
# Where nccl-tests runs nothing below 16 B per rank, both tools start the sweep there, ending at
# the same last size (vs_nccl_tests.py's sweep_for).
declare -A row_of sweep_of
for c in ${colls//,/ }; do
  [ -x "$ntb/${c}_perf" ] || { echo "vs_nccl_tests.sh: no $ntb/${c}_perf (--colls names nccl-tests binaries)" >&2; exit 2; }
  read -r row cb cf < <(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import vs_nccl_tests as v
r = v.BINARY_ROWS[sys.argv[2]]
try: print(r, *v.sweep_for(r, int(sys.argv[3]), *sys.argv[4:7]))
except v.ParseError as x: sys.exit("vs_nccl_tests.sh: --sweep %s:%s:%s: %s" % (*sys.argv[4:7], x))' "$here" "$c" "$ranks" "$b" "$e" "$f") \
    || exit 2
  row_of[$c]=$row
  sweep_of[$c]="$cb $cf"
done
mkdir -p "$OUT/gpucts"
logs=() ours=() cpulogs=()
# Simulated ranks of both tools: one mpirun over NCCL's socket transport on lo. nccl-tests picks
# its GPU by the process's rank among those of its host (hostname and boot id, not NCCL_HOSTID):
# NCCL_TESTS_DEVICE=0 keeps every rank on the one GPU.
sim_mpirun=(mpirun --oversubscribe -np "$ranks" -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 -x NCCL_NVLS_ENABLE
  -x LD_LIBRARY_PATH -x NCCL_TESTS_DEVICE=0)
nccl_tests_once() {  # binary log args...: one nccl-tests run (under mpirun with simulated ranks)
  local binary=$ntb/${1}_perf log=$2
  shift 2
  if [ "$ranks" -gt 1 ]; then
    "${pinned[@]}" "${sim_mpirun[@]}" sh -c 'NCCL_HOSTID=simhost$OMPI_COMM_WORLD_RANK exec "$0" "$@"' "$binary" "$@" >"$log" 2>&1
  else
    "${pinned[@]}" "$binary" "$@" >"$log" 2>&1
  fi
  echo "exit $?" >>"$log"
}
run_nccl_tests() {  # collective round
  local log=$OUT/nccl-tests/${1}_perf.r$2.log cb cf
  read -r cb cf <<<"${sweep_of[$1]}"
  nccl_tests_once "$1" "$log" -b "$cb" -e "$e" -f "$cf" -g 1 -n "$iters" -w "$warmup" -c 0
  logs+=(--nccl-tests "$log")
  [ "$cputime" = 1 ] || return 0
  # Again at the small goal size with -C 1: its time column is then the calls alone, before the
  # stream wait, beside gpucts' enqueue_us (what runs between two timed calls).
  log=$OUT/nccl-tests/${1}_perf.cpu.r$2.log
  nccl_tests_once "$1" "$log" -b "$cb" -e "$cb" -f 2 -g 1 -n "$iters" -w "$warmup" -c 0 -C 1
  cpulogs+=(--nccl-tests-cputime "$log")
}
run_gpucts() {  # collective round
  local modes=(blocking) m out cb cf
  read -r cb cf <<<"${sweep_of[$1]}"
  local gb_args=(-g 1 -b "$cb" -e "$e" -f "$cf" -n "$iters" -w "$warmup" --reps "$reps" --gtest_brief=1)
  [ "$nonblocking" = 1 ] && modes+=(nonblocking)
  for m in "${modes[@]}"; do
    out=$OUT/gpucts/$m.r$2.$1
    if [ "$ranks" -gt 1 ]; then
      # The MPI suite takes its settings from the environment (its main parses GoogleTest's flags only).
      GPUCTS_BW_SWEEP="$cb:$e:$cf" GPUCTS_BW_ITERS=$iters GPUCTS_BW_WARMUP=$warmup GPUCTS_BW_REPS=$reps \
        GPUCTS_BW_NONBLOCKING=$([ "$m" = nonblocking ] && echo 1 || echo 0) GPUCTS_BW_OUTPUT=$out \
        GPUCTS_SIMULATED_HOSTS=1 GPUCTS_BW_LINK=socket \
        "${pinned[@]}" "${sim_mpirun[@]}" -x GPUCTS_BW_SWEEP -x GPUCTS_BW_ITERS -x GPUCTS_BW_WARMUP -x GPUCTS_BW_REPS \
        -x GPUCTS_BW_NONBLOCKING -x GPUCTS_BW_OUTPUT -x GPUCTS_SIMULATED_HOSTS -x GPUCTS_BW_LINK \
        "$gmb" --gtest_brief=1 --gtest_filter="${row_of[$1]}.*" >"$out.log" 2>&1
    else
      "${pinned[@]}" "$gb" "${gb_args[@]}" --gtest_filter="${row_of[$1]}.*" \
        $([ "$m" = nonblocking ] && echo --nonblocking) --output="$out" >"$out.log" 2>&1
    fi
    echo "exit $?" >>"$out.log"
    [ -f "$out.json" ] && ours+=(--gpucts "$out.json")
  done
}
for r in $(seq 1 "$rounds"); do
  stamp "round $r of $rounds ($([ $((r % 2)) = 1 ] && echo "nccl-tests first" || echo "gpucts first"))"
  for c in ${colls//,/ }; do
    if [ $((r % 2)) = 1 ]; then run_nccl_tests "$c" "$r"; run_gpucts "$c" "$r"
    else run_gpucts "$c" "$r"; run_nccl_tests "$c" "$r"; fi
  done
done

stamp "ratio table"
req=()
[ "$require" = 1 ] && req=(--require)
ntv=$(sed -n 's/^# nccl-tests version \([^ ]*\).*/\1/p' "$OUT/nccl-tests/"*_perf.r1.log | head -1)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
python3 "$here/vs_nccl_tests.py" compare "${logs[@]}" "${ours[@]}" "${cpulogs[@]}" --out "$OUT/vs_nccl_tests" \
  --title "gpucts_bandwidth beside nccl-tests ${ntv:-?}, $(date -u +%F), ${gpu:-GPU ?}, $ranks rank(s), sizes $sweep, -n $iters -w $warmup (gpucts --reps $reps), $rounds rounds interleaved${pin:+, both tools on CPU(s) $pin}" \
  "${req[@]}" >"$OUT/vs_nccl_tests.stdout"
rc=$?
stamp "done (exit $rc): $OUT/vs_nccl_tests.md"
echo "==== the table for bench/RESULTS.md ===="
cat "$OUT/vs_nccl_tests.md"
echo "==== end of the table ===="
exit $rc
