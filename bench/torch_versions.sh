#!/usr/bin/env bash
# The Python suites over Gloo (CPU) against torch releases from PyPI, one throwaway virtual
# environment a release (torch and the Lightning pip picks for it), so that a suite change is
# seen against every torch line users run, not only the one installed here.
#   bench/torch_versions.sh [--torch 2.0.1,2.4.1,...] [--worlds 1,2,4] [--filter REGEX]
#                           [--suites PATH] [--out DIR] [--keep]
# --suites: the gpucts_python_suites launcher (default build/ci/suites/gpucts_python_suites).
# Writes DIR/summary.md (a row per release and world: counts, and the cases that failed grouped by
# name) and each world's output and JUnit. Needs the network (about 3-5 GB a release, removed
# after it unless --keep) and several minutes a release.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_list="2.0.1,2.4.1,2.8.0,2.11.0,2.15.0"
worlds="1,2,4"
filter=""
suites="build/ci/suites/gpucts_python_suites"
out="torch-versions-$(date -u +%Y%m%dT%H%M%SZ)"
keep=0
die() { echo "torch_versions.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) [ $# -ge 2 ] || die "--torch needs a list"; torch_list=$2; shift 2 ;;
    --worlds) [ $# -ge 2 ] || die "--worlds needs a list"; worlds=$2; shift 2 ;;
    --filter) [ $# -ge 2 ] || die "--filter needs a regex"; filter=$2; shift 2 ;;
    --suites) [ $# -ge 2 ] || die "--suites needs a path"; suites=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -x "$suites" ] || die "$suites: no gpucts_python_suites launcher there (build with ci/test, or --suites)"
suites=$(cd "$(dirname "$suites")" && pwd)/$(basename "$suites")
IFS=, read -r -a releases <<<"$torch_list"
IFS=, read -r -a world_list <<<"$worlds"
for v in "${releases[@]}"; do [[ $v =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || die "--torch: '$v' is no release number"; done
for w in "${world_list[@]}"; do [[ $w =~ ^[1-9][0-9]?$ ]] || die "--worlds: '$w' is no rank count from 1 to 99"; done
mkdir -p "$out"
# An interrupted or failed run leaves no environment of several GB behind.
trap '[ "$keep" = 1 ] || rm -rf "$out"/venv-*' EXIT
summary="$out/summary.md"
{
  echo "# The Python suites over Gloo across torch releases ($(date -u +%Y-%m-%d), $(uname -m), $(python3 -V 2>&1))"
  echo
  echo "| torch | lightning | numpy | world | exit | passed | failed | skipped | failed cases (by name, counts) |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
} >"$summary"
rc=0
for v in "${releases[@]}"; do
  venv="$out/venv-$v"
  echo "[torch $v] installing torch==$v and lightning into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q --no-cache-dir "torch==$v" lightning >"$out/pip-$v.log" 2>&1; then
    echo "| $v | | | | pip failed: $(grep -v "^[[:space:]]*$" "$out/pip-$v.log" | tail -1 | cut -c1-160) | | | | |" >>"$summary"
    rc=1
    rm -rf "$venv"
    continue
  fi
  read -r tv lv nv < <("$venv/bin/python" -c 'import importlib.metadata as m
def ver(n):
    try: return m.version(n)
    except Exception: return "-"
print(ver("torch"), ver("lightning"), ver("numpy"))')
  for w in "${world_list[@]}"; do
    log="$out/torch-$v-w$w.log"
    args=(--world="$w" --backend=gloo --junit-output="$out/torch-$v-w$w.xml")
    [ -n "$filter" ] && args+=(--filter="$filter")
    echo "[torch $v] world $w" >&2
    set +e
    GPUCTS_PYTHON="$venv/bin/python" "$suites" "${args[@]}" >"$log" 2>&1
    code=$?
    set -e
    counts=$({ grep -E '^gpucts_python_suites: [0-9]+ case' "$log" || true; } | tail -1 |
             sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 | \2 | \3/')
    [ -n "$counts" ] || counts=" | | "
    failed=$({ grep -E '^\[  FAILED  \] ' "$log" || true; } | sed -E 's/^\[  FAILED  \] ([^ ]+).*/\1/' |
             sed -E 's/(_(f32|f16|bf16|f64|i32|i64|i8|u8|f8e4m3|f8e5m2))?(_[0-9]+)?(_root[0-9]+)?$//' | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
    echo "| $tv | $lv | $nv | $w | $code | $counts | ${failed:--} |" >>"$summary"
    [ "$code" = 0 ] || [ "$code" = 77 ] || rc=1
  done
  [ "$keep" = 1 ] || rm -rf "$venv"
done
cat "$summary"
exit "$rc"
