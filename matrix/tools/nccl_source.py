#!/usr/bin/env python3
"""Snapshot of what every NCCL release's own source says, read from a git copy of NVIDIA/nccl.

  nccl_source.py snapshot --repo GIT_DIR   writes snapshot/nccl_source.json

GIT_DIR is a clone or a bare mirror with the release tags (v2.X.Y-Z); nothing is checked out, every
file is read with `git show TAG:path` / `git grep TAG`. Per release it extracts:
  env         the NCCL_* variables the code reads: NCCL_PARAM(Name, "ENV", ...) -> NCCL_ENV,
              DEFINE_NCCL_PARAM(name, type, NCCL_KEY, ...), and string literals passed to
              getenv / ncclGetEnv / ncclLoadParam / ncclGetLevel / *FromEnv (plugins included)
  documented  the NCCL_* names of docs/userguide/source/env.rst, where the tag has it
  algos       (collective, algorithm, protocol) that have a device implementation: the
              RunWorkColl / RunWorkElement / ncclFunction specialisations of the device headers
  names       ncclFuncStr / ncclAlgoStr / ncclProtoStr: the words NCCL_ALGO and NCCL_PROTO accept
  api         identifiers (nccl*, NCCL_*) of src/nccl.h.in
  markers     the few source facts the rules need that are no identifier (see MARKERS)
Each fact is stored as runs of consecutive releases with the file it was read from, so the
snapshot stays small and `generate.py` turns it into since/until columns offline.
"""
import re
import subprocess
import sys

import common

REPO_NAME = "NVIDIA/nccl"
TAG_RE = re.compile(r"^v(2\.\d+\.\d+)-(\d+)$")

# Paths not scanned for variables: documentation, packaging, CI, tests, build scripts.
ENV_EXCLUDE = [":!docs", ":!pkg", ":!.github", ":!**/test/**", ":!**/tests/**", ":!**/*test*", ":!*.py",
               ":!makefiles", ":!**/Makefile", ":!**/CMakeLists.txt", ":!cmake"]
ENV_LINE = re.compile(r'NCCL_PARAM|DEFINE_NCCL_PARAM|"NCCL_[A-Z0-9_]+"')
PARAM_RE = re.compile(r'\bNCCL_PARAM\(\s*\w+\s*,\s*"([A-Z0-9_]+)"')
DEFINE_RE = re.compile(r'\bDEFINE_NCCL_PARAM\(\s*\w+\s*,\s*[^,]+,\s*(NCCL_[A-Z0-9_]+)\s*,')
READ_RE = re.compile(r'(?:getenv|[gG]etEnv\w*|LoadParam|FromEnv|GetLevel)\s*\(([^;]*)')
LITERAL_RE = re.compile(r'"(NCCL_[A-Z0-9_]+)"')

DEVICE_PATHS = ["src/device", "src/collectives/device"]
ALGO_RE = re.compile(r"ncclFunc(Broadcast|Reduce|AllGather|ReduceScatter|AllReduce)\s*,[^>;{]*?"
                     r"NCCL_ALGO_([A-Z_]+)\s*,\s*NCCL_PROTO_([A-Z0-9_]+)\s*>")
NAMES_RE = re.compile(r"\b(ncclFuncStr|ncclAlgoStr|ncclProtoStr)\s*\[[^\]]*\]\s*=\s*\{([^}]*)\}", re.S)
API_RE = re.compile(r"\b(nccl[A-Z][A-Za-z0-9_]*|NCCL_[A-Z0-9_]+)\b")

# name -> (path, regex, present): the marker holds at a release when the file exists and the
# regex matches it (present=True) or does not (present=False).
MARKERS = {
    # ncclTopoTuneModel re-enables Ring for a collective that NCCL_ALGO/NCCL_PROTO left without
    # any algorithm ("at least set ring algo available"); without it such a collective fails with
    # "no algorithm/protocol available" (ncclInternalError, ncclInvalidUsage from 2.24).
    "algo-ring-fallback": ("src/graph/tuning.cc", r"at least set ring algo available", True),
    # Before the explicit fallback, NCCL_ALGO could not take Ring away from a collective other than
    # AllReduce: "Only disable algo for Allreduce since others only have one" (to 2.16),
    # "Never disable ring for non-allreduce operations" (2.17, 2.18).
    "algo-ring-kept-non-allreduce": ("src/graph/tuning.cc",
                                     r"Only disable algo for Allreduce|Never disable ring for non-allreduce", True),
    # parseList with a prefix list: NCCL_ALGO / NCCL_PROTO "func:list;func:list" syntax.
    "algo-per-function-syntax": ("src/graph/tuning.cc", r"parseList\(const char\* str, const char\* prefixElems", True),
    # getNthreads() clamps NCCL_NTHREADS to [2*WARP_SIZE, max] and to a multiple of WARP_SIZE.
    "nthreads-clamped": ("src/graph/tuning.cc", r"static int getNthreads\(", True),
    # net_socket.cc caps NCCL_SOCKET_NTHREADS at MAX_THREADS and the socket count at MAX_SOCKETS.
    "socket-threads-clamped": ("src/transport/net_socket.cc", r"#define MAX_THREADS 16", True),
    "device-api-header": ("src/include/nccl_device.h", r".", True),
}


def git(repo, *args):
    r = subprocess.run(["git", "-C", repo] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode not in (0, 1):  # git grep exits 1 on no match
        common.fail(repo, "git %s: %s" % (" ".join(args[:3]), r.stderr.decode(errors="replace").strip()))
    return r.stdout.decode("utf-8", errors="replace")


def releases(repo):
    """One tag per release (the highest -N suffix), oldest first."""
    best = {}
    for tag in git(repo, "tag", "--list", "v2.*").split():
        m = TAG_RE.match(tag)
        if m and (m.group(1) not in best or int(m.group(2)) > best[m.group(1)][1]):
            best[m.group(1)] = (tag, int(m.group(2)))
    out = []
    for version in sorted(best, key=common.vkey):
        tag = best[version][0]
        commit, date = git(repo, "log", "-1", "--format=%H %cs", tag + "^{commit}").split()
        out.append({"version": version, "tag": tag, "commit": commit, "date": date})
    return out


def grep(repo, tag, pattern, paths):
    """(path, line text) of every line of `tag` matching the extended regex."""
    out = []
    for line in git(repo, "grep", "-I", "-E", "--full-name", "-e", pattern, tag, "--", *paths).splitlines():
        # "TAG:path:text" (no -n)
        rest = line[len(tag) + 1:]
        path, _, text = rest.partition(":")
        out.append((path, text))
    return out


def env_reads(repo, tag, params):
    """name -> file; `params` receives the names read through NCCL_PARAM (an int64 parameter)."""
    found = {}
    # The library's own reader names the row: src/ before plugins and contrib.
    lines = grep(repo, tag, ENV_LINE.pattern, ["."] + ENV_EXCLUDE)
    for path, text in sorted(lines, key=lambda pt: (not pt[0].startswith("src/"), pt[0])):
        ints = ["NCCL_" + n for n in PARAM_RE.findall(text)]
        for n in ints:
            params.setdefault(n, path)
        names = ints + DEFINE_RE.findall(text)
        for call in READ_RE.findall(text):
            names += LITERAL_RE.findall(call)
        for n in names:
            found.setdefault(n, path)
    return found


DOC = "docs/userguide/source/env.rst"


def documented(repo, tag, history):
    """Names of env.rst; `history` receives the "(since 2.1, removed in 2.5)" line under a heading."""
    text = git(repo, "show", tag + ":" + DOC) if has_file(repo, tag, DOC) else ""
    for name, note in re.findall(r"^(NCCL_[A-Z0-9_]+)\s*\n[-=~^]+\s*\n\s*\n?(\([^)\n]*\))?", text, re.M):
        if note:
            history.setdefault(name + " " + note, DOC)
    return {n: DOC for n in re.findall(r"^(NCCL_[A-Z0-9_]+)\s*$", text, re.M)}


def has_file(repo, tag, path):
    return bool(git(repo, "ls-tree", "--name-only", tag, "--", path).strip())


def names(repo, tag):
    """ncclFuncStr / ncclAlgoStr / ncclProtoStr of the release."""
    out = {}
    for path, _ in grep(repo, tag, r"(ncclFuncStr|ncclAlgoStr|ncclProtoStr)\s*\[[^]]*\]\s*=", ["src"]):
        for arr, body in NAMES_RE.findall(git(repo, "show", tag + ":" + path)):
            out.setdefault(arr, (re.findall(r'"([^"]+)"', body), path))
    return out


def norm(word):
    return word.replace("_", "").lower()


def algos(repo, tag, algo_words, proto_words):
    """(collective, algorithm word, protocol word) -> header path, in NCCL_ALGO/NCCL_PROTO spelling."""
    paths = [p for p in DEVICE_PATHS if has_file(repo, tag, p)]
    out = {}
    if not paths:
        return out
    spell_a = {norm(w): w for w in algo_words}
    spell_p = {norm(w): w for w in proto_words}
    files = sorted({path for path, _ in grep(repo, tag, r"NCCL_ALGO_[A-Z_]+\s*,\s*NCCL_PROTO_", paths)})
    for path in files:
        text = git(repo, "show", tag + ":" + path)
        for coll, algo, proto in ALGO_RE.findall(text):
            a, p = spell_a.get(norm(algo)), spell_p.get(norm(proto))
            if a and p:
                out.setdefault("%s/%s/%s" % (coll, a, p), path)
    return out


def api(repo, tag):
    path = "src/nccl.h.in" if has_file(repo, tag, "src/nccl.h.in") else "src/nccl.h"
    if not has_file(repo, tag, path):
        return {}
    return {n: path for n in API_RE.findall(git(repo, "show", tag + ":" + path))}


def markers(repo, tag):
    out = {}
    for name, (path, regex, present) in MARKERS.items():
        if has_file(repo, tag, path) and (re.search(regex, git(repo, "show", tag + ":" + path)) is not None) == present:
            out[name] = path
    return out


def fold(per_release, order):
    """{release: {fact: file}} -> {fact: {"ranges": [[first, last]...], "file": file at its last release}}."""
    facts = {}
    for v in order:
        for fact, path in per_release[v].items():
            facts.setdefault(fact, {})["file"] = path
    for fact, info in facts.items():
        info["ranges"] = common.ranges_of({v for v in order if fact in per_release[v]}, order)
    return facts


def snapshot(repo):
    rels = releases(repo)
    if not rels:
        common.fail(repo, "no v2.X.Y-Z release tags (is this a copy of NVIDIA/nccl with its tags?)")
    order = [r["version"] for r in rels]
    kinds = {k: {} for k in ("env", "env_params", "documented", "doc_history", "algos", "api", "markers", "algo_words", "proto_words", "func_words")}
    for r in rels:
        tag, v = r["tag"], r["version"]
        sys.stderr.write("reading %s\n" % tag)
        kinds["env_params"][v], kinds["doc_history"][v] = {}, {}
        kinds["env"][v] = env_reads(repo, tag, kinds["env_params"][v])
        kinds["documented"][v] = documented(repo, tag, kinds["doc_history"][v])
        n = names(repo, tag)
        words = {arr: n.get(arr, ([], ""))[0] for arr in ("ncclFuncStr", "ncclAlgoStr", "ncclProtoStr")}
        kinds["algo_words"][v] = {w: n["ncclAlgoStr"][1] for w in words["ncclAlgoStr"]}
        kinds["proto_words"][v] = {w: n["ncclProtoStr"][1] for w in words["ncclProtoStr"]}
        kinds["func_words"][v] = {w: n["ncclFuncStr"][1] for w in words["ncclFuncStr"]}
        kinds["algos"][v] = algos(repo, tag, words["ncclAlgoStr"], words["ncclProtoStr"])
        kinds["api"][v] = api(repo, tag)
        kinds["markers"][v] = markers(repo, tag)
    snap = {"repository": "github:" + REPO_NAME, "releases": rels}
    for k, per in kinds.items():
        snap[k] = fold(per, order)
    return snap


def main(argv):
    common.snapshot_main(argv, __doc__, "nccl_source.json",
                         [("--repo", {"required": True, "help": "git directory of NVIDIA/nccl (bare is fine)"})],
                         lambda args: snapshot(args.repo))


if __name__ == "__main__":
    main(sys.argv[1:])
