#!/usr/bin/env bash
# CTest entry gpucts_ci_requirements: the requirement logic of ci/lib.sh (gpucts_install_missing)
# on a machine where apt-get cannot help (an offline image): apt-get absent, or present but failing
# as it does without a registry. The probes point at files made here, so "present" and "missing"
# are the test's choice, whatever this machine has. Exit 0 when every case behaves.
#   ci/lib_test.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpucts-lib-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$scratch/present" "$scratch/bin-noapt" "$scratch/bin-apt"
touch "$scratch/present/cmake" "$scratch/present/gtest.h"
# Root, as the GPU image runs it: apt-get would be tried if it were there.
printf '#!/bin/sh\n[ "$1" = -u ] && echo 0 || exec /usr/bin/id "$@"\n' >"$scratch/bin-noapt/id"
cp "$scratch/bin-noapt/id" "$scratch/bin-apt/id"
ln -s "$(command -v dirname)" "$scratch/bin-noapt/dirname"   # lib.sh finds its root with it
ln -s "$(command -v dirname)" "$scratch/bin-apt/dirname"
# apt-get with no registry in reach: every call fails, and each call is recorded.
printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt-calls"\necho "E: no registry" >&2\nexit 100\n' "$scratch" \
  >"$scratch/bin-apt/apt-get"
chmod +x "$scratch"/bin-*/*

# run NAME BIN-DIR REQUIRED OPTIONAL: sources lib.sh with PATH=BIN-DIR only and the package lists
# replaced by "pkg:file" entries; prints the status, stderr in $scratch/NAME.err.
run() {
  local name=$1 bin=$2 required=$3 optional=$4
  rm -f "$scratch/apt-calls"
  (
    export PATH="$bin" GPUCTS_SKIP_TORCH=1 TMPDIR="$scratch"
    unset CLI11_ROOT
    source "$here/lib.sh"
    read -ra gpucts_packages <<<"$required"
    read -ra gpucts_optional_tools <<<"$optional"
    gpucts_optional_packages=()
    gpucts_install_missing
  ) 2>"$scratch/$name.err"
  echo $?
}
errors() { grep -c 'error' "$scratch/$1.err"; }

p=$scratch/present
for bin in bin-noapt bin-apt; do
  # Everything present: nothing installed, nothing said, status 0.
  rc=$(run "all-$bin" "$scratch/$bin" "cmake:$p/cmake libgtest-dev:$p/gtest.h" "libxml2-utils:$p/gtest.h")
  [ "$rc" = 0 ] || fail "$bin, all present: status $rc: $(cat "$scratch/all-$bin.err")"
  [ ! -e "$scratch/apt-calls" ] || fail "$bin, all present: apt-get was called: $(cat "$scratch/apt-calls")"
  [ ! -s "$scratch/all-$bin.err" ] || fail "$bin, all present: said $(cat "$scratch/all-$bin.err")"

  # An optional tool missing: go on (status 0), naming it.
  rc=$(run "opt-$bin" "$scratch/$bin" "cmake:$p/cmake" "libxml2-utils:$p/no-xmllint")
  [ "$rc" = 0 ] || fail "$bin, optional missing: status $rc: $(cat "$scratch/opt-$bin.err")"
  grep -q 'optional packages not installed: libxml2-utils' "$scratch/opt-$bin.err" ||
    fail "$bin, optional missing: no message naming libxml2-utils: $(cat "$scratch/opt-$bin.err")"
  [ "$(errors "opt-$bin")" = 0 ] || fail "$bin, optional missing: an error was printed: $(cat "$scratch/opt-$bin.err")"

  # A required package missing: one error line naming it, status 1, whatever the optional ones do.
  rc=$(run "req-$bin" "$scratch/$bin" "cmake:$p/cmake libcli11-dev:$p/no-CLI.hpp" "libxml2-utils:$p/no-xmllint")
  [ "$rc" = 1 ] || fail "$bin, required missing: status $rc, expected 1"
  [ "$(errors "req-$bin")" = 1 ] || fail "$bin, required missing: expected one error line: $(cat "$scratch/req-$bin.err")"
  grep -q 'error: .*libcli11-dev' "$scratch/req-$bin.err" ||
    fail "$bin, required missing: the error does not name libcli11-dev: $(cat "$scratch/req-$bin.err")"
  grep 'error' "$scratch/req-$bin.err" | grep -q 'libxml2-utils' &&
    fail "$bin, required missing: the error names the optional libxml2-utils: $(cat "$scratch/req-$bin.err")"
done
# Where apt-get is there it was tried (and failed) for the required package.
grep -q 'install.*libcli11-dev' "$scratch/apt-calls" 2>/dev/null || fail "bin-apt: apt-get was never asked for libcli11-dev"

# ci/qualify picks its own build folder: a --build-dir of the user's is refused at once, in one
# line, before anything is installed or built.
out=$(timeout 60 bash "$here/qualify" --build-dir elsewhere 2>&1)
rc=$?
[ "$rc" = 2 ] || fail "ci/qualify --build-dir: exit $rc, expected 2: $out"
[ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && [[ "$out" == *--build-dir* ]] ||
  fail "ci/qualify --build-dir: not one line naming the option: $out"

if [ "$failures" -gt 0 ]; then
  echo "ci/lib.sh requirement logic: $failures failure(s)"
  exit 1
fi
echo "ci/lib.sh requirement logic: every case behaves (no apt-get, failing apt-get)"
