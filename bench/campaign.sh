#!/usr/bin/env bash
# The NCCL release campaign in one device call: build the suites once for sm_90, run them against
# each release carried in .campaign/ (archives made here by ci/nccl_prune pack) and the machine's
# own (the system NCCL, torch's wheel), write the campaign report, and bisect the one-rank tail
# defect (a fix: the first release where its case passes).
#   bench/campaign.sh [VERSION...]
# Default releases, most wanted first (a release not started before the time budget is listed as
# not run): 2.27.7 2.28.9 2.29.3 2.29.7 2.32.3 2.28.3 2.29.2.
# Knobs: CAMPAIGN_ARGS (more campaign options), CAMPAIGN_NO_BISECT=1, CAMPAIGN_RESERVE_S (100), CAMPAIGN_SKIP_BUILD=1 (reuse $GPUCTS_BUILD), CAMPAIGN_LIMIT_S (default 570: the device call's 600 s less a margin), GPUCTS_BUILD
# (build/gpu), CAMPAIGN_STORE (.campaign), CAMPAIGN_BISECT (the case), CAMPAIGN_BISECT_GOOD /
# _BAD (2.32.3 / 2.28.9).
# Output in $OUT (at most 8 files come back): campaign.md, campaign.html, campaign.json,
# bisect.md, campaign.log, build.log, bundles.tar.xz (every bundle, the logs and the plots).
set -uo pipefail
OUT_DEFAULT=campaign-out source "$(dirname "$0")/device_env.sh"
STORE=$(mkdir -p "${CAMPAIGN_STORE:-.campaign}" && cd "${CAMPAIGN_STORE:-.campaign}" && pwd)
LIMIT=${CAMPAIGN_LIMIT_S:-570}
WORK=${TMPDIR:-/tmp}/gpucts-campaign
versions=("$@")
[ ${#versions[@]} -eq 0 ] && versions=(2.27.7 2.28.9 2.29.3 2.29.7 2.32.3 2.28.3 2.29.2)
t0=$SECONDS
stamp() { echo "== [$((SECONDS - t0)) s] $*"; }

if [ "${CAMPAIGN_SKIP_BUILD:-0}" = 1 ]; then
  stamp "reusing the build in $B"
else
  stamp "build (sm_90) into $B"
  { cmake -S . -B "$B" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 "${GPUCTS_PIN[@]}" &&
    cmake --build "$B" -j"$(nproc)" --target gpucts gpucts_collectives gpucts_bandwidth gpucts_payload_kernels \
      gpucts_fault_layers gpucts_nccl_api; } >"$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
fi
build_s=$((SECONDS - t0))
stamp "built in $build_s s"
G=$B/cli/gpucts

# The machine's own releases, linked into the store where no archive brings the same version.
nccl_version_of() {  # the NCCL a gpucts process reports with $1 first on LD_LIBRARY_PATH
  LD_LIBRARY_PATH=$1 "$G" fingerprint --no-python 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["nccl"]["runtime"])'
}
link_local() {  # link_local <folder holding libnccl.so.2>
  local dir=$1 v
  [ -e "$dir/libnccl.so.2" ] || return 0
  v=$(nccl_version_of "$dir") || return 0
  [ -n "$v" ] || return 0
  if [ -e "$STORE/$v/lib/libnccl.so.2" ] || ls "$STORE"/nccl-"$v"-*.tar.xz >/dev/null 2>&1; then return 0; fi
  mkdir -p "$STORE/$v/lib" && ln -sf "$(readlink -f "$dir/libnccl.so.2")" "$STORE/$v/lib/libnccl.so.2"
  echo "local NCCL $v: $(readlink -f "$dir/libnccl.so.2")"
}
link_local /usr/lib/x86_64-linux-gnu
wheel=$(python3 -c "import nvidia.nccl as n; print(list(n.__path__)[0] + '/lib')" 2>/dev/null)
[ -n "$wheel" ] && link_local "$wheel"
ls -la "$STORE"

# Start no release later than leaves time for one more run (CAMPAIGN_RESERVE_S, default 100 s; about
# 40 s expected), the bisect
# and packing; a release that runs longer than 120 s is stopped and reported as such.
stop_after=$((LIMIT - (SECONDS - t0) - ${CAMPAIGN_RESERVE_S:-100} - 45))
[ "$stop_after" -lt 30 ] && stop_after=30
rm -rf "$WORK" && mkdir -p "$WORK"
list=$(IFS=,; echo "${versions[*]}")
stamp "campaign over $list (no release starts after $stop_after s)"
# CAMPAIGN_ARGS: more `gpucts campaign` options (e.g. --exclude-tests to leave out NCCL-free suites);
# a --timeout or --stop-after there replaces this script's (gpucts takes each option once).
release_limits=()
[[ " ${CAMPAIGN_ARGS:-} " == *" --timeout"* ]] || release_limits+=(--timeout 120)
[[ " ${CAMPAIGN_ARGS:-} " == *" --stop-after"* ]] || release_limits+=(--stop-after "$stop_after")
# shellcheck disable=SC2086
"$G" campaign --nccl "$list" --store "$STORE" --build-dir "$B" --output "$WORK/campaign" "${release_limits[@]}" \
  ${CAMPAIGN_ARGS:-} 2>&1 | tee "$OUT/campaign.log"
echo "campaign exit ${PIPESTATUS[0]}; build $build_s s" | tee -a "$OUT/campaign.log"

case=${CAMPAIGN_BISECT:-gpucts_collectives/AllReduce.f32_avg_262145_outofplace_w1}
if [ "${CAMPAIGN_NO_BISECT:-0}" != 1 ] && [ $((SECONDS - t0)) -lt $((LIMIT - 40)) ]; then
  stamp "bisect $case"
  timeout $((LIMIT - (SECONDS - t0) - 10)) "$G" campaign --bisect "$case" --good "${CAMPAIGN_BISECT_GOOD:-2.32.3}" \
    --bad "${CAMPAIGN_BISECT_BAD:-2.28.9}" --store "$STORE" --build-dir "$B" --output "$WORK/bisect" 2>&1 | tail -12
  cp "$WORK/bisect/bisect.md" "$OUT/" 2>/dev/null
else
  echo "no time left for the bisect" | tee "$OUT/bisect.md"
fi

cp "$WORK/campaign/campaign.md" "$WORK/campaign/campaign.html" "$WORK/campaign/campaign.json" "$OUT/" 2>/dev/null
# Every bundle without its journals (the gtest XML holds the same cases); a file that comes back
# may hold 16 MB at most, so the gtest XML goes too where it would not fit.
tar cJf "$OUT/bundles.tar.xz" --exclude=journal -C "$WORK" campaign bisect 2>/dev/null
if [ "$(stat -c %s "$OUT/bundles.tar.xz")" -gt 15000000 ]; then
  tar cJf "$OUT/bundles.tar.xz" --exclude=journal --exclude=gtest -C "$WORK" campaign bisect 2>/dev/null
fi
ls -la "$OUT"
stamp done
