#!/usr/bin/env bash
# One GPU-machine call as the field sees gpucts: the README's ci/qualify from a fresh copy of this
# tree (offline, no xmllint), the libtorch cases at 2 and 4 simulated ranks on that build, the
# quick level timed, then an install tree built on another machine (.field/gpucts-install.tar.xz,
# `cmake --install build/ci --prefix /tmp/inst --strip`) unpacked under another prefix and run with
# a runtime image's PATH (no compiler, no CMake).
#   bench/field_round.sh [total_s]      (stages are capped to end inside total_s, default 560)
# FIELD_STAGES picks stages (default "qualify torch quick install"); FIELD_QUALIFY_CAP_S caps the
# fresh copy's ci/qualify (default: what total_s leaves); FIELD_ACCEPT, the moved install tree's
# waivers (default nccl-1950).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
total=${1:-560} t0=$SECONDS src=$PWD
left() { echo $((total - (SECONDS - t0))); }
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }
verdict() { grep -E '^(PASS|FAIL|NO GPU|INTERRUPTED)|^ +(because|reason|note)|^  - |suite\(s\) from' "$1" | cut -c1-220 | head -14; }

stages=" ${FIELD_STAGES:-qualify torch quick install} "
has() { [[ $stages == *" $1 "* ]]; }

F=/tmp/fresh && rm -rf $F && mkdir -p $F
tar --exclude='./build*' --exclude=./.field --exclude='./.campaign*' --exclude=./.git -cf - . | tar -xf - -C $F
cd $F || exit 1
if has qualify; then
stamp "fresh copy: ci/qualify --expect-gpus 1 --accept-known nccl-1950 (xmllint: $(command -v xmllint || echo absent))"
timeout -k 10 "${FIELD_QUALIFY_CAP_S:-$(left)}" ci/qualify --expect-gpus 1 --accept-known nccl-1950 --output "$OUT/q" >"$OUT/qualify.log" 2>&1
echo "ci/qualify exit $? after $((SECONDS - t0)) s"; verdict "$OUT/qualify.log"
fi
G=$F/build/qualify
has torch && for n in 2 4; do
  stamp "libtorch, $n simulated ranks: the timeout case and the f32 allreduce rows"
  GPUCTS_SIMULATED_HOSTS=1 timeout -k 5 75 "$G/suites/gpucts_torch_c10d" --gpucts-nproc=$n --gpucts-deadline=65 \
    --gtest_filter='*Timeouts*:*nccl_allreduce_f32*' >"$OUT/torch_sim$n.log" 2>&1
  echo "exit $?"; grep -E '^\[  (PASSED|FAILED) |OK \] C10d/Timeouts|FAILED  \] C10d' "$OUT/torch_sim$n.log" | sort | uniq -c
done
if has quick; then
stamp "gpucts qualify --level quick"
s=$SECONDS
timeout -k 5 90 "$G/cli/gpucts" qualify --build-dir "$G" --level quick --accept-known nccl-1950 --output /tmp/lq \
  >"$OUT/quick.log" 2>&1
echo "quick exit $?, $((SECONDS - s)) s"; verdict "$OUT/quick.log"
fi
if has install; then
stamp "install tree from elsewhere, moved to /tmp/moved/inst (cap $(left) s)"
rm -rf /tmp/moved && mkdir -p /tmp/moved && tar xJf "$src/.field/gpucts-install.tar.xz" -C /tmp/moved
# A runtime image's PATH: every program of this machine's PATH but the toolchain (compilers,
# linker, make, ninja, CMake, nvcc); python3 through a wrapper, so that its venv (torch) stays its own.
rt=/tmp/runtime-path && rm -rf $rt && mkdir -p $rt
printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v python3)" >$rt/python3 && chmod +x $rt/python3
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  for p in "$d"/*; do
    n=${p##*/}
    case $n in cc | c++ | cpp* | gcc* | g++* | *-gcc* | *-g++* | clang* | cmake | ctest | cpack | ccmake | nvcc | \
      make | ninja | ld | ld.* | as | python3) continue ;; esac
    [ -x "$p" ] && [ ! -e "$rt/$n" ] && ln -s "$p" "$rt/$n"
  done
done
for t in cc gcc g++ c++ cmake nvcc ctest; do PATH=$rt command -v $t >/dev/null && echo "runtime PATH still has $t"; done
s=$SECONDS
PATH=$rt timeout -k 10 "$(left)" /tmp/moved/inst/bin/gpucts qualify --expect-gpus 1 --accept-known "${FIELD_ACCEPT:-nccl-1950}" \
  --output /tmp/iq >"$OUT/install.log" 2>&1
echo "install-tree qualify exit $?, $((SECONDS - s)) s"; verdict "$OUT/install.log"
grep -E 'not run|error' "$OUT/install.log" | cut -c1-200 | head -12
fi
tar czf "$OUT/bundles.tgz" -C "$OUT" q -C /tmp iq lq 2>/dev/null; rm -rf "$OUT/q"
stamp done
