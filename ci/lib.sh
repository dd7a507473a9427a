# Shared by ci/test and ci/qualify: find or install what the build needs, then configure and build.
# Sourced, not run. Installs only what is missing, and only where apt-get can (root, a registry in
# reach); on an offline image (the GPU machine) it uses what is there and says what is missing:
# a required package missing stops it (one line, status 1), an optional one is named and skipped.
# ci/lib_test.sh (CTest gpucts_ci_requirements) runs this logic with apt-get unavailable.

gpucts_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf '[gpucts %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# Debian package -> a file that proves it is there. Required: the build cannot go on without them.
gpucts_packages=(
  "cmake:/usr/bin/cmake"
  "g++:/usr/bin/g++"
  "make:/usr/bin/make"
  "libgtest-dev:/usr/include/gtest/gtest.h"
  "nlohmann-json3-dev:/usr/include/nlohmann/json.hpp"
  "libcli11-dev:/usr/include/CLI/CLI.hpp"
  "libopenmpi-dev:/usr/bin/mpicxx"
  "openmpi-bin:/usr/bin/mpiexec"
)
# Optional tools: installed where apt-get can, else the one test that uses each skips with its reason.
gpucts_optional_tools=(
  "libxml2-utils:/usr/bin/xmllint"   # the JUnit test runs every XML through a real parser
)
# Optional: the libtorch suite is built only where libtorch is found (Debian's CPU build in CI).
gpucts_optional_packages=(
  "libtorch-dev:/usr/include/torch/csrc/api/include/torch/torch.h"
  "libgloo-dev:/usr/include/gloo/algorithm.h"   # 1.13's ProcessGroupGloo.hpp includes gloo/
  "python3-torch:/usr/lib/python3/dist-packages/torch/__init__.py"   # the Python suites over Gloo
)

# An offline machine may point CMake at a package unpacked elsewhere (dpkg -x PKG.deb DIR):
# CLI11_ROOT=DIR (or DIR/usr) stands for libcli11-dev.
gpucts_unpacked() {
  local file=${1#*:}
  [ "${1%%:*}" = libcli11-dev ] && [ -n "${CLI11_ROOT:-}" ] &&
    { [ -e "$CLI11_ROOT$file" ] || [ -e "$CLI11_ROOT${file#/usr}" ]; }
}

gpucts_install_missing() {
  local missing=() optional=() entry
  for entry in "${gpucts_packages[@]}"; do
    [ -e "${entry#*:}" ] || command -v "${entry%%:*}" >/dev/null 2>&1 || gpucts_unpacked "$entry" || missing+=("${entry%%:*}")
  done
  for entry in "${gpucts_optional_tools[@]}"; do
    [ -e "${entry#*:}" ] || optional+=("${entry%%:*}")
  done
  if [ "${GPUCTS_SKIP_TORCH:-0}" != 1 ] && ! python3 -c 'import torch' >/dev/null 2>&1; then
    for entry in "${gpucts_optional_packages[@]}"; do
      [ -e "${entry#*:}" ] || optional+=("${entry%%:*}")
    done
  fi
  [ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && return 0
  local without="optional packages not installed: ${optional[*]} (without libtorch-dev the libtorch suite is not built; without python3-torch the Python suites skip; without libxml2-utils the xmllint test skips)"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing: ${missing[*]} ${optional[*]}"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
             "${missing[@]}" "${optional[@]}"; } >"${TMPDIR:-/tmp}/gpucts-apt.log" 2>&1; then
      # Optional parts may be unavailable; required ones must not be.
      if [ ${#missing[@]} -gt 0 ] && ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
             "${missing[@]}" >>"${TMPDIR:-/tmp}/gpucts-apt.log" 2>&1; then
        log "error: could not install ${missing[*]} (see ${TMPDIR:-/tmp}/gpucts-apt.log)"
        return 1
      fi
      [ ${#optional[@]} -eq 0 ] || log "$without"
    fi
  elif [ ${#missing[@]} -gt 0 ]; then
    log "error: missing ${missing[*]} and cannot install them here (not root or no apt-get)"
    return 1
  else
    log "$without; not root or no apt-get here"
  fi
}

# The Python suites run with GPUCTS_PYTHON, else python3. Where python3 on PATH (a pyenv, a venv)
# has no torch but the system's interpreter has (Debian's python3-torch), point GPUCTS_PYTHON at it.
gpucts_find_python_torch() {
  [ -n "${GPUCTS_PYTHON:-}" ] && return 0
  python3 -c 'import torch' >/dev/null 2>&1 && return 0
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
    export GPUCTS_PYTHON=/usr/bin/python3
    log "Python suites: GPUCTS_PYTHON=/usr/bin/python3 (python3 on PATH has no torch)"
  else
    log "no python3 with torch here: the Python suites (gpucts_py_*) skip with the reason"
  fi
}

# A torch from PyPI beside the distribution's (Debian's 1.13 skips the Python suites' DDP bf16,
# FSDP2 and Lightning cases), so that CI runs those paths too. Prints its interpreter, or nothing:
# a failed install (no network) is a warning, and the Python suites then run on the other torch
# alone. GPUCTS_SKIP_MODERN_TORCH=1 leaves it out.
gpucts_modern_torch=2.15.0
gpucts_modern_lightning=2.6.6
gpucts_modern_torch_python() {
  [ "${GPUCTS_SKIP_MODERN_TORCH:-0}" = 1 ] && return 0
  local venv="$gpucts_root/build/torch-$gpucts_modern_torch" logfile="$gpucts_root/build/torch-venv.log"
  if ! "$venv/bin/python" -c 'import torch, lightning' >/dev/null 2>&1; then
    rm -rf "$venv"
    mkdir -p "$gpucts_root/build"
    log "installing torch $gpucts_modern_torch and lightning $gpucts_modern_lightning from PyPI into $venv (about 5 GB)"
    # Bounded: a slow mirror costs this step, never the whole CI run.
    if ! { python3 -m venv "$venv" && timeout 900 "$venv/bin/pip" install -q --no-cache-dir \
             "torch==$gpucts_modern_torch" "lightning==$gpucts_modern_lightning"; } >"$logfile" 2>&1; then
      log "warning: torch $gpucts_modern_torch could not be installed ($(tail -1 "$logfile" | cut -c1-160)):" \
          "the Python suites run on the other torch only"
      rm -rf "$venv"
      return 0
    fi
  fi
  echo "$venv/bin/python"
}

# The sanitizer job (ci/sanitize) builds with clang and links libFuzzer (compiler-rt). Returns 1
# when they are not there and cannot be installed (the job then falls back to g++).
gpucts_sanitizer_packages=(clang libclang-rt-dev)
gpucts_have_libfuzzer() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local lib
  lib=$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null) || return 1
  [ -e "$lib" ]
}
gpucts_install_sanitizer_tools() {
  gpucts_have_libfuzzer && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing: ${gpucts_sanitizer_packages[*]}"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${gpucts_sanitizer_packages[@]}"; } >"${TMPDIR:-/tmp}/gpucts-apt-sanitizer.log" 2>&1 || true
  fi
  gpucts_have_libfuzzer
}

# The CUDA toolkit is part of the machine, not installed by us: put it on PATH where it is.
gpucts_find_cuda() {
  if ! command -v nvcc >/dev/null 2>&1; then
    local d
    for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-13.0 /usr/local/cuda-12; do
      if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then export PATH="$d/bin:$PATH"; break; fi
    done
  fi
  command -v nvcc >/dev/null 2>&1 || log "no nvcc found: GPU kernels and NCCL suites will not be built"
}

# CUDA architectures of the visible GPUs ("90" on an H200), or empty without a GPU.
gpucts_visible_archs() {
  command -v nvidia-smi >/dev/null 2>&1 || return 0
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d '. ' | sort -u | paste -sd';'
}

gpucts_jobs() { nproc 2>/dev/null || echo 2; }
