#!/usr/bin/env bash
# The multi-rank paths on ONE GPU as simulated hosts (each rank its own NCCL_HOSTID, NCCL's socket
# transport on loopback), on the GPU machine (device tool), over a build that exists:
#   bench/sim_hosts.sh BUILD [stage...]
# stages: label (`ctest -L multi-rank-sim` as a user runs it, then each entry's counts), ctest (the
#         MPI entries one by one, wall time each), torch (ProcessGroupNCCL through
#         the libtorch suite's own launcher, its output kept as it comes), faults (the NCCL peer
#         crash), check (gpucts check under mpirun), multinode (ci/multinode --launcher mpirun)
# SIM_TESTS: the ctest entries, each NAME or NAME:CAP_S (default cap SIM_TIMEOUT_S, else the entry's
# own TIMEOUT). SIM_TORCH_RANKS (default "2 4"), SIM_TORCH_DEADLINE_S (the launcher's, default 150),
# SIM_TORCH_FILTER (default '*nccl*'), SIM_TORCH_REPEAT (gtest rounds, default 1).
# Logs, XML and journals go to $OUT (SIM_LOG_DIR keeps the logs in a folder of your choice too).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
B=${1:?usage: bench/sim_hosts.sh BUILD [stage...]}
shift
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(ctest torch faults check multinode)
has() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
L=${SIM_LOG_DIR:-$(mktemp -d)}; mkdir -p "$L"  # logs, packed into $OUT/sim-logs.tgz at the end (few files come back)
t0=$SECONDS
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }

# Counts from the XML of rank 0 (gtest's own), whatever CTest made of the exit status.
counts_of() {
  local x
  x=$(ls "$B"/gtest-xml/$1.xml "$B"/gtest-xml/$1.rank0.xml "$B"/self-test/$1.expected-failures.junit 2>/dev/null | head -1)
  python3 - "$x" <<'EOF' 2>/dev/null || echo "no XML"
import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
p = f = s = 0
for c in r.iter('testcase'):
    if c.find('failure') is not None: f += 1
    elif c.find('skipped') is not None or c.get('result') == 'skipped': s += 1
    else: p += 1
print(f"passed {p} failed {f} skipped {s}")
EOF
}

if has label; then
  stamp "ctest -L multi-rank-sim (cap ${SIM_LABEL_CAP_S:-1900} s)"
  s=$SECONDS
  timeout -k 10 "${SIM_LABEL_CAP_S:-1900}" ctest --test-dir "$B" -L multi-rank-sim --output-on-failure \
    --output-junit sim-ctest-junit.xml >"$L/label.log" 2>&1
  echo "ctest -L multi-rank-sim: rc=$?, $((SECONDS - s)) s"
  pkill -f "^[^ ]*$B/suites/gpucts_" 2>/dev/null
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|Total Test' "$L/label.log"
  for t in $(ctest --test-dir "$B" -N -L multi-rank-sim | sed -n 's/^ *Test *#[0-9]*: //p'); do
    echo "  $t: $(counts_of "$t")"
  done
  grep -E '^\[  FAILED  \] [A-Z]' "$L/label.log" | sort -u | head -15
  cp "$B/sim-ctest-junit.xml" "$L/" 2>/dev/null
fi
if has ctest; then
  for spec in ${SIM_TESTS:-gpucts_mp_collectives_sim2 gpucts_mp_collectives_sim2_inject_corrupt \
      gpucts_mp_collectives_sim8 gpucts_mp_collectives_sim4}; do
    t=${spec%%:*} cap=${SIM_TIMEOUT_S:-1900}
    [ "$spec" != "$t" ] && cap=${spec#*:}
    stamp "$t (cap $cap s)"
    s=$SECONDS
    # An entry's own TIMEOUT wins over ctest --timeout: the cap is a kill from outside.
    timeout -k 10 "$cap" ctest --test-dir "$B" -R "^$t\$" --output-on-failure >"$L/$t.log" 2>&1
    rc=$?
    pkill -f "^[^ ]*$B/suites/gpucts_" 2>/dev/null
    [ $rc -eq 124 ] && { echo "$t: capped at $cap s; last lines:"; tail -5 "$L/$t.log"; }
    counts=$(counts_of "$t")
    echo "$t: ctest rc=$rc, $((SECONDS - s)) s, $counts; $(grep -E 'tests passed|\((Failed|Skipped|Timeout)\)' "$L/$t.log" | head -2 | tr '\n' ' ')"
    grep -E '^\[  FAILED  \] [A-Z]' "$L/$t.log" | sort -u | head -15
  done
fi
if has torch; then
  for n in ${SIM_TORCH_RANKS:-2 4}; do
    stamp "ProcessGroupNCCL, $n ranks on one GPU (launcher deadline ${SIM_TORCH_DEADLINE_S:-150} s)"
    s=$SECONDS
    GPUCTS_SIMULATED_HOSTS=1 timeout -k 10 $((${SIM_TORCH_DEADLINE_S:-150} + 30)) \
      "$B/suites/gpucts_torch_c10d" --gpucts-nproc="$n" --gpucts-deadline="${SIM_TORCH_DEADLINE_S:-150}" \
      --gtest_filter="${SIM_TORCH_FILTER:-*nccl*}" --gtest_repeat="${SIM_TORCH_REPEAT:-1}" --gtest_output="xml:$L/torch_c10d_sim$n.xml" >"$L/torch_c10d_sim$n.log" 2>&1
    rc=$?
    echo "torch_c10d sim$n: exit $rc, $((SECONDS - s)) s; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$L/torch_c10d_sim$n.log" | head -3 | tr '\n' ' ')"
    grep -E '^\[  FAILED  \] [A-Z]' "$L/torch_c10d_sim$n.log" | sort -u | head -10
    [ $rc -ne 0 ] && grep -vE '^\[ +OK +\]|^\[ RUN +\]' "$L/torch_c10d_sim$n.log" | tail -15 | cut -c1-300
    pkill -f "^[^ ]*$B/suites/gpucts_torch_c10d" 2>/dev/null
  done
fi
if has faults; then
  stamp "FaultTest.NcclPeerCrash* (1 GPU: simulated hosts)"
  "$B/suites/gpucts_faults" --gtest_filter='FaultTest.NcclPeerCrash*' >"$L/faults.log" 2>&1
  echo "faults exit $?"; grep -E '^\[ *(OK|FAILED|SKIPPED) *\]|simulated' "$L/faults.log" | head
  pgrep -fa gpucts_fault_child && echo "LEFT BEHIND: fault children still running" || echo "no process left behind"
fi
if has check; then
  stamp "gpucts check under mpirun -np 2, simulated hosts"
  GPUCTS_SIMULATED_HOSTS=1 mpirun --oversubscribe -np 2 "$B/cli/gpucts" check >"$L/check_mpi.log" 2>&1
  echo "check exit $?"; grep -E 'simulated|^ERROR|gpu-shared|verdict|PASS|FAIL' "$L/check_mpi.log" | head -8
  stamp "gpucts check under mpirun -np 2, no host ids (must refuse the shared GPU)"
  mpirun --oversubscribe -np 2 "$B/cli/gpucts" check >"$L/check_mpi_plain.log" 2>&1
  echo "check exit $?"; grep -E 'gpu-shared|ranks-exceed' "$L/check_mpi_plain.log" | head -3 | cut -c1-240
fi
if has multinode; then
  stamp "ci/multinode --launcher mpirun over 2 simulated hosts"
  GPUCTS_SIMULATED_HOSTS=1 GPUCTS_COLL_SWEEP=placements ci/multinode --launcher mpirun --hosts localhost \
    --ranks-per-node 2 --build "$B" --out "$L/multinode" --timeout 300 >"$L/multinode.log" 2>&1
  echo "multinode exit $?"; tail -6 "$L/multinode.log"
  ls "$L/multinode" | head
fi
tar czf "$OUT/sim-xml.tgz" -C "$B" gtest-xml self-test journal rank-logs 2>/dev/null
tar czf "$OUT/sim-logs.tgz" -C "$L" . && { [ -n "${SIM_LOG_DIR:-}" ] || rm -rf "$L"; }
stamp done
