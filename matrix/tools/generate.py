#!/usr/bin/env python3
"""Offline step: snapshot/*.json + curated/*.csv -> the generated files of matrix/data.

  generate.py [--out DIR]    write nccl_env.csv, nccl_features.csv, nccl_algos.csv,
                             nccl_releases.csv, torch.csv and torch_aarch64.csv into DIR
                             (default: matrix/data)
  generate.py --check [--data DIR]
                             exit 1, naming each file and its first differing line, when the
                             files of DIR are not byte for byte what the generator writes

Deterministic: no network, no clock, no dictionary order. Facts from the release tags and the
wheels decide; a curated cell that contradicts them is bad input (exit 2, file:line).
"""
import argparse
import os
import re
import sys

import common

NCCL_REPO = "github:NVIDIA/nccl"
# What the generator reads of each snapshot (common.load_snapshot refuses a file without it).
SHAPES = {"nccl_source.json": {"releases": list, "env": dict, "env_params": dict, "documented": dict,
                               "doc_history": dict, "algo_words": dict, "proto_words": dict, "algos": dict,
                               "api": dict},
          "torch_wheels.json": {"torch_wheels": list, "nccl_wheels": list},
          "nccl_wheels.json": {"releases": list}}
SEE = "matrix/tools (generate.py); edit curated/ or refresh snapshot/, never this file"


class Releases:
    """The ordered NCCL release tags of the snapshot."""

    def __init__(self, snap):
        self.rel = snap["releases"]
        self.order = [r["version"] for r in self.rel]
        self.tag = {r["version"]: r["tag"] for r in self.rel}
        self.newest = self.order[-1]

    def after(self, version):
        i = self.order.index(version)
        return self.order[i + 1] if i + 1 < len(self.order) else ""

    def span(self, fact):
        """(since, until, gaps) of a fact's ranges: until = the first release after the last run."""
        runs = fact["ranges"]
        since, last = runs[0][0], runs[-1][1]
        until = "" if last == self.newest else self.after(last)
        gaps = ["%s-%s" % (self.after(a[1]), self.order[self.order.index(b[0]) - 1]) for a, b in zip(runs, runs[1:])]
        return since, until, gaps

    def cite(self, fact, what=""):
        since, until, _ = self.span(fact)
        last = fact["ranges"][-1][1]
        return "%s %s%s @%s (read by %s..%s)" % (NCCL_REPO, fact["file"], " " + what if what else "", self.tag[last],
                                                 self.tag[since], self.tag[last])


class Binaries:
    """The NCCL releases newer than the tags, read from their PyPI wheels (snapshot/nccl_wheels.json):
    the NCCL_* names of libnccl.so.2's .rodata and the identifiers of include/nccl.h. Only names are
    read there; a fact of the tags is extended through them where the wheel shows it."""

    WHAT = {"variables": "nvidia/nccl/lib/libnccl.so.2 .rodata", "api": "nvidia/nccl/include/nccl.h"}

    def __init__(self, wsnap, rels):
        self.tags = rels
        self.rel = [r for r in wsnap["releases"] if common.vkey(r["version"]) > common.vkey(rels.newest)]
        self.by = {r["version"]: r for r in self.rel}
        # The release order of the tags, then of the wheels: since/until of an extended fact.
        self.rels = Releases({"releases": rels.rel + [{"version": r["version"], "tag": ""} for r in self.rel]})

    def wheel(self, version):
        w = self.by[version]
        return "PyPI %s (sha256 %s...)" % (w["wheel"], w["sha256"][:16])

    def extend(self, facts, key, assumed=lambda name, fact: False):
        """Tag facts + the wheels' names -> {name: fact over self.rels}; `assumed(name, fact)`: a fact
        the wheel cannot show (a plugin's variable) is taken as still there where the newest tag has it."""
        out = {}
        for name in sorted(set(facts) | {n for r in self.rel for n in r[key]}):
            fact = facts.get(name)
            present = {v for v in self.tags.order if fact and any(
                common.vkey(a) <= common.vkey(v) <= common.vkey(b) for a, b in fact["ranges"])}
            seen = [r["version"] for r in self.rel if name in r[key]]
            at_newest = self.tags.newest in present
            kept = [r["version"] for r in self.rel if at_newest and r["version"] not in seen and assumed(name, fact)]
            present |= set(seen) | set(kept)
            out[name] = {"ranges": common.ranges_of(present, self.rels.order), "tag_fact": fact, "seen": seen,
                         "kept": kept, "file": fact["file"] if fact else self.WHAT[key]}
        return out

    def cite(self, fact, key, what=""):
        """The tags' citation, then the wheels that show the fact (and the first that lacks it)."""
        parts = [self.tags.cite(fact["tag_fact"], what)] if fact["tag_fact"] else []
        seen = fact["seen"]
        if seen:
            parts.append("%s of %s (%sin %s)" % (self.WHAT[key], self.wheel(seen[-1]), what.strip("()") + " " if what else "",
                                                  seen[0] if len(seen) == 1 else seen[0] + ".." + seen[-1]))
        _, until, _ = self.rels.span(fact)
        if until in self.by:
            parts.append("absent from %s of %s" % (self.WHAT[key], self.wheel(until)))
        return "; ".join(parts)


def words_cell(words, rels, since_floor):
    """ncclAlgoStr words -> values cell: "Ring;CollNet@2.6.4-2.14.3;NVLS@2.17.1"."""
    out = []
    for word in sorted(words, key=lambda w: (rels.span(words[w])[0] != since_floor, common.vkey(rels.span(words[w])[0]), w)):
        since, until, _ = rels.span(words[word])
        rng = "" if since == since_floor and not until else "@" + since + ("-" + until if until else "")
        out.append(word + rng)
    return ";".join(out)


ENV_COLS = ["name", "since", "until", "type", "values", "min", "max", "default", "constraint", "out_of_range",
            "multiple_of", "unconfirmed", "source", "note"]


def plugin_variable(name, fact):
    """Read outside libnccl.so.2 (a plugin of the repository): no wheel's library can show it."""
    return bool(fact) and not fact["file"].startswith("src/")


def nccl_env(snap, rels, binaries):
    curated = {r["name"]: r for r in common.read_curated("nccl_env.csv", ENV_COLS[:1] + ENV_COLS[3:])}
    tag_env = snap["env"]
    env = binaries.extend(tag_env, "variables", plugin_variable)
    tags, rels = rels, binaries.rels
    params, docs, history = snap["env_params"], snap["documented"], snap["doc_history"]
    hist = {}
    for key in history:
        name, _, text = key.partition(" ")
        hist[name] = text
    rows = []
    for name in sorted(set(env) | set(docs) | {n for n, c in curated.items() if c["type"] not in ("notnccl", "ignore")}):
        c = curated.get(name, {})
        row = {k: c.get(k, "") for k in ENV_COLS}
        row["name"] = name
        notes = [c["note"]] if c.get("note") else []
        if name in env:
            fact = env[name]
            since, until, gaps = rels.span(fact)
            row["since"], row["until"] = since, until
            src = [binaries.cite(fact, "variables")]
            if gaps:
                notes.append("not read by " + ", ".join(gaps))
            if not fact["tag_fact"]:
                notes.append("named in the released libnccl.so.2 only (no tag of %s reads it yet): type, values and "
                             "default not read" % NCCL_REPO)
            elif not fact["file"].startswith("src/"):
                notes.append("read by %s (shipped in the NCCL repository), not by libnccl itself" % fact["file"])
            if fact["kept"]:
                notes.append("not in libnccl.so.2, so assumed still read in %s" % ", ".join(fact["kept"]))
            if since == rels.order[0]:
                notes.append("read by %s, the oldest v2 tag" % rels.tag[since])
        elif name in docs:
            row["until"] = tags.order[0]
            # Read by no tag (gone before the oldest one): the first release is env.rst's "(since X".
            m = re.search(r"\(since ([0-9][0-9.]*[0-9])", hist.get(name, ""))
            if m:
                row["since"] = m.group(1)
                notes.append("since: env.rst (no release tag reads it)")
            src = ["%s %s @%s (documented, read by no tag)" % (NCCL_REPO, docs[name]["file"], tags.tag[docs[name]["ranges"][-1][1]])]
        else:
            common.fail("curated/nccl_env.csv:%d" % c["_line"], "%s is read by no release tag or released library and "
                        "documented by none: give it type notnccl or ignore, or drop it" % name)
        if name in hist:
            notes.append("env.rst: " + hist[name])
        if c.get("source"):
            src.append(c["source"])
        row["source"] = "; ".join(src)
        row["note"] = "; ".join(notes)
        if not row["type"]:
            row["type"] = "int" if name in params else "string"  # names only from a wheel: no value check
        if name == "NCCL_ALGO":
            row["values"] = words_cell(snap["algo_words"], tags, row["since"])
        if name == "NCCL_PROTO":
            row["values"] = words_cell(snap["proto_words"], tags, row["since"])
        rows.append(row)
    for name in sorted(n for n, c in curated.items() if c["type"] in ("notnccl", "ignore")):
        c = curated[name]
        if name in env:
            common.fail("curated/nccl_env.csv:%d" % c["_line"], "%s has type %s but %s reads it" % (
                name, c["type"], binaries.cite(env[name], "variables")))
        rows.append({k: c.get(k, "") for k in ENV_COLS})
    comments = [
        "NCCL environment variables. GENERATED by " + SEE + ".",
        "since/until: first release that reads it / first that no longer does (empty until = the newest release the",
        "data reads, %s, still reads it); from the NCCL_PARAM / DEFINE_NCCL_PARAM / getenv reads of every tag of" % rels.newest,
        "%s up to %s%s." % (NCCL_REPO, tags.tag[tags.newest], ", then the NCCL_* names of the .rodata of libnccl.so.2 in the PyPI "
                            "nvidia-nccl-cu13 wheels of %s (no tag yet; names only: a variable first seen there has type string "
                            "unless curated)" % ", ".join(binaries.by) if binaries.rel else ""),
        "type: notnccl (looks like NCCL's, read by none of its releases: a warning) | ignore (not read, but expected: no finding)",
        "      int (a whole integer as strtoll base 0 reads it) | bool (an int, nonzero = on) | enum (one word of values)",
        "      list (comma list of values, '^' excludes) | algo / proto (NCCL_ALGO / NCCL_PROTO: list, '^', from 2.24 'func:a,b;func2:c')",
        "      level (a word of values or an integer) | ifname (prefix list, '^', '=') | string | path",
        "values: accepted words; 'WORD@2.17.1' = from 2.17.1, 'WORD@2.6.4-2.14.3' = from 2.6.4 until (excl.) 2.14.3; case-insensitive.",
        "min/max: integer bounds; out_of_range: error (NCCL refuses or misbehaves: an error finding) or clamp (NCCL",
        "replaces the value and goes on: a warning); multiple_of: the step NCCL requires (clamped like a bound).",
        "default: NCCL's default (for constraints). constraint: 'A*B<=N' (product of two variables, defaults applied).",
    ]
    return common.render_csv(comments, ENV_COLS, rows)


def nccl_algos(snap, rels):
    rows = []
    for key in sorted(snap["algos"], key=lambda k: k.split("/")):
        coll, algo, proto = key.split("/")
        since, until, _ = rels.span(snap["algos"][key])
        rows.append({"collective": coll, "algorithm": algo, "protocol": proto, "since": since, "until": until,
                     "source": rels.cite(snap["algos"][key], "RunWork* specialisation")})
    comments = [
        "(collective, algorithm, protocol) triples NCCL has a device implementation of. GENERATED by " + SEE + ".",
        "From the RunWorkColl / RunWorkElement / ncclFunction specialisations of the device headers of every tag",
        "of %s (the form those headers take from 2.10.3 on; older tags are not modelled)." % NCCL_REPO,
        "NCCL_ALGO / NCCL_PROTO that leave a collective without any of its rows fail it with 'no algorithm/protocol",
        "available' where the release has no Ring fallback (nccl_features.csv:AlgoRingFallback).",
        "Words are NCCL_ALGO / NCCL_PROTO's (ncclAlgoStr / ncclProtoStr of src/init.cc). until = exclusive.",
    ]
    return common.render_csv(comments, ["collective", "algorithm", "protocol", "since", "until", "source"], rows)


def nccl_features(snap, rels, binaries):
    # An identifier of nccl.h and a variable name can be read in the wheels too; algorithm words and
    # source markers only at the tags.
    extended = {"api": (binaries.extend(snap["api"], "api"), "api"),
                "env": (binaries.extend(snap["env"], "variables", plugin_variable), "variables")}
    rows = []
    for c in common.read_curated("nccl_features.csv", ["name", "kind", "fact", "note"]):
        kind, _, ident = c["fact"].partition(":")
        table = {"api": "api", "algo": "algo_words", "env": "env", "marker": "markers"}.get(kind)
        facts = extended[kind][0] if kind in extended else snap.get(table, {})
        if not table or ident not in facts:
            common.fail("curated/nccl_features.csv:%d" % c["_line"], "fact '%s' is not in snapshot/nccl_source.json "
                        "or snapshot/nccl_wheels.json" % c["fact"])
        fact = facts[ident]
        order = binaries.rels if kind in extended else rels
        since, until, _ = order.span(fact)
        note = c["note"]
        if since == rels.order[0]:
            note = "; ".join(n for n in (note, "in %s, the oldest v2 tag" % rels.tag[since]) if n)
        if since in binaries.by:
            note = "; ".join(n for n in (note, "no tag of %s has it yet: read in the released %s" % (
                NCCL_REPO, binaries.WHAT[extended[kind][1]].split(" ")[0])) if n)
        source = binaries.cite(fact, extended[kind][1], "(" + ident + ")") if kind in extended else rels.cite(fact, "(" + ident + ")")
        rows.append({"name": c["name"], "kind": c["kind"], "since": since, "until": until, "unconfirmed": "",
                     "source": source, "note": note})
    comments = [
        "NCCL APIs, collectives, dtypes, reductions and features by the first release that has them.",
        "GENERATED by " + SEE + " from curated/nccl_features.csv (which fact shows each), the tags of " + NCCL_REPO,
        "and, for api and env facts, the wheels of the releases without a tag (%s: include/nccl.h, libnccl.so.2)." % (
            ", ".join(binaries.by) or "none"),
        "until = first release without it (exclusive). kind: api | collective | dtype | op | feature",
    ]
    return common.render_csv(comments, ["name", "kind", "since", "until", "unconfirmed", "source", "note"], rows)


def nccl_releases(snap, wheels, rels, binaries):
    curated = {r["nccl"]: r for r in common.read_curated("nccl_releases.csv", ["nccl", "cuda_builds", "unconfirmed", "source", "note"])}
    rows = []
    for r in rels.rel:
        c = curated.get(r["version"], {})
        rows.append({"nccl": r["version"], "date": r["date"], "cuda_builds": c.get("cuda_builds", ""),
                     "unconfirmed": c.get("unconfirmed", "") if c else "cuda_builds",
                     "source": "; ".join(s for s in ("%s tag %s (commit %s)" % (NCCL_REPO, r["tag"], r["commit"][:12]), c.get("source", "")) if s),
                     "note": c.get("note", "")})
    first_upload = {}
    for w in wheels["nccl_wheels"]:
        base = w["version"].split(".post")[0]
        if base not in rels.order and (base not in first_upload or w["uploaded"] < first_upload[base]["uploaded"]):
            first_upload[base] = w
    for version in sorted(first_upload, key=common.vkey):
        w = first_upload[version]
        if common.vkey(version) < common.vkey(rels.newest):
            continue  # an old PyPI-only post release is no release of its own
        c = curated.get(version, {})
        read = ""
        if version in binaries.by:
            # The marker data_reach (matrix.cpp) looks for: this release's variable names were read.
            read = "NCCL_* names: %s of %s" % (binaries.WHAT["variables"], binaries.wheel(version))
        rows.append({"nccl": version, "date": w["uploaded"], "cuda_builds": c.get("cuda_builds", ""),
                     "unconfirmed": c.get("unconfirmed", "") if c else "cuda_builds",
                     "source": "; ".join(s for s in ("PyPI %s %s (first upload %s)" % (w["package"], w["version"], w["uploaded"]), read, c.get("source", "")) if s),
                     "note": "; ".join(n for n in ("no git tag in %s yet (newest %s): date = first PyPI upload" % (NCCL_REPO, rels.tag[rels.newest]),
                                                   "variables read from the wheel's libnccl.so.2, algorithms not read" if read else "",
                                                   c.get("note", "")) if n)})
    for version, c in curated.items():
        if version not in {r["nccl"] for r in rows}:
            common.fail("curated/nccl_releases.csv:%d" % c["_line"], "%s is neither a release tag nor a PyPI release" % version)
    comments = [
        "NCCL releases. GENERATED by " + SEE + ". date: commit date of the release tag of " + NCCL_REPO + " (or the",
        "first PyPI upload of a release newer than the tags); cuda_builds: the CUDA builds NVIDIA published, where read.",
    ]
    return common.render_csv(comments, ["nccl", "date", "cuda_builds", "unconfirmed", "source", "note"], rows)


TORCH_COLS = ["torch", "variant", "cuda", "status", "nccl", "cudnn", "cxx_std", "python_min", "python_max", "arch_list",
              "unconfirmed", "source", "note"]


def torch_rows(wheels):
    curated = common.read_curated("torch.csv", TORCH_COLS + ["platform"])
    by_key = {(r["torch"], r["variant"], r["platform"] or "x86_64"): r for r in curated}
    for w in wheels["torch_wheels"]:
        pins = w["pins"]
        cuda_pin = pins.get("cuda_runtime") or pins.get("cuda_toolkit")
        if not cuda_pin:
            continue  # no CUDA libraries from PyPI (1.12): nothing the wheel says about the rows
        cuda = ".".join(cuda_pin["version"].split(".")[:2])
        line = ".".join(w["torch"].split(".")[:2])
        key = (line, "cu" + cuda.replace(".", ""), w.get("platform", "x86_64"))
        row = by_key.get(key)
        where = "snapshot/torch_wheels.json (%s)" % w["wheel"]
        if not row:
            common.fail(os.path.join(common.CURATED_DIR, "torch.csv"), "no row %s/%s/%s for the PyPI wheel %s: add it" % (key + (w["wheel"],)))
        # Requires-Python is cited, not compared: it is the install floor (2.5.1 says >=3.8.0 and ships
        # no cp38 wheel), while python_min is the support range of RELEASE.md.
        facts = {"cuda": cuda}
        for k in ("nccl", "cudnn"):
            if k in pins:
                facts[k] = pins[k]["version"]
        unconfirmed = [f for f in row["unconfirmed"].split(";") if f]
        for k, val in facts.items():
            if row[k] and row[k] != val:
                common.fail("%s:%d" % (os.path.join(common.CURATED_DIR, "torch.csv"), row["_line"]),
                            "%s %s disagrees with %s: %s" % (k, row[k], where, val))
            row[k] = val
            unconfirmed = [f for f in unconfirmed if f != k]
        if "release" in unconfirmed:
            unconfirmed.remove("release")  # on PyPI, so released
        here = "%s:%d" % (os.path.join(common.CURATED_DIR, "torch.csv"), row["_line"])
        extra = []
        # The arch list compiled into the wheel (libtorch_python.so's CUDA_ARCH_FLAGS) decides.
        arch = ";".join(w.get("arch_list", []))
        if arch:
            if row["arch_list"] and row["arch_list"] != arch:
                common.fail(here, "arch_list %s disagrees with %s: %s" % (row["arch_list"], where, arch))
            row["arch_list"] = arch
            unconfirmed = [f for f in unconfirmed if f != "arch_list"]
            extra.append("get_arch_list() from torch/lib/libtorch_python.so: %s" % " ".join(w["arch_list"]))
        # The CPython builds published on PyPI confirm python_min / python_max; a bound RELEASE.md
        # gives without a PyPI wheel stays, UNCONFIRMED, and the note says so.
        tags = [t for t in w.get("python_tags", []) if not t.endswith("t")]
        notes = [row["note"]] if row["note"] else []
        if tags:
            built = ["%s.%s" % (t[2], t[3:]) for t in tags]
            for col in ("python_min", "python_max"):
                if row[col] in built:
                    unconfirmed = [f for f in unconfirmed if f != col]
                elif row[col]:
                    if col not in unconfirmed:
                        unconfirmed.append(col)
                    notes.append("%s %s: PyPI has no CPython %s wheel of torch %s (built: %s)" % (
                        col, row[col], row[col], w["torch"], ", ".join(built)))
            extra.append("CPython wheels %s" % ", ".join(w["python_tags"]))
        row["note"] = "; ".join(notes)
        row["unconfirmed"] = ";".join(unconfirmed)
        reqs = "; ".join(p["requirement"] for _, p in sorted(pins.items()))
        row["source"] = "PyPI %s METADATA (%s; Requires-Python %s; sha256 %s...)%s; %s" % (
            w["wheel"], reqs, w["requires_python"], w["sha256"][:16], "".join("; " + e for e in extra), row["source"])
    comments = [
        "PyTorch official Linux %s wheels: one row per (release line, CUDA variant). GENERATED by " + SEE + ":",
        "curated/torch.csv (every row, sourced) checked against and completed by the wheels' own METADATA",
        "(snapshot/torch_wheels.json: the newest patch of each line on PyPI, its Requires-Dist pins, the arch list",
        "compiled into its libtorch_python.so and the CPython versions it is built for).",
        "Source keys: R = pytorch RELEASE.md compatibility matrix (+ the PRs named); B = pytorch/builder release/<X>",
        "build scripts; TI = pytorch/test-infra generate_binary_build_matrix.py; P = pytorch/pytorch CI files;",
        "DEV = measured on the H200 machine. unconfirmed: fields not read in a primary source (rules built on them only warn).",
        "arch_list: what torch.cuda.get_arch_list() prints; compute_XY = the +PTX entry.",
    ]
    # One file per platform: the aarch64 wheels of a line have an arch list of their own (read where
    # the wheel's libtorch_python.so gives it).
    out = {}
    for name, platform in (("torch.csv", "x86_64"), ("torch_aarch64.csv", "aarch64")):
        rows = [r for r in curated if (r["platform"] or "x86_64") == platform]
        out[name] = common.render_csv([comments[0] % platform] + comments[1:], TORCH_COLS, rows)
    return out


def hand_rows(name):
    """Rows of a hand-curated file of ../data (comments skipped), for the reach check."""
    import csv
    with open(os.path.join(common.DATA_DIR, name), encoding="utf-8", newline="") as f:
        lines = [l for l in f if l.strip() and not l.startswith("#")]
    return list(csv.DictReader(lines))


def minor(version):
    return ".".join(version.split(".")[:2])


def staleness(wheels, rels, binaries):
    """Warnings (text lines) where a source has newer releases than the data reaches."""
    latest = wheels.get("latest", {})
    torch_lines = [r["torch"] for r in common.read_curated("torch.csv", ["torch"])]
    reach = {
        "torch": max(torch_lines, key=common.vkey),
        "nccl": max([r["version"] for r in rels.rel] + [w["version"].split(".post")[0] for w in wheels["nccl_wheels"]],
                    key=common.vkey),
        "cudnn": max((r["last"] for r in hand_rows("cudnn.csv")), key=common.vkey),
        "cuda": max((r["cuda"] for r in hand_rows("cuda.csv")), key=common.vkey),
    }
    out = []
    newer = [("torch", "torch", minor), ("nvidia-nccl-cu13", "nccl", str), ("nvidia-nccl-cu12", "nccl", str),
             ("nvidia-cudnn-cu13", "cudnn", lambda v: ".".join(v.split(".")[:3])),
             ("nvidia-cudnn-cu12", "cudnn", lambda v: ".".join(v.split(".")[:3])), ("cuda-toolkit", "cuda", minor)]
    for pkg, what, cut in newer:
        have = latest.get(pkg, {}).get("version")
        if have and common.vkey(cut(have)) > common.vkey(reach[what]):
            out.append("PyPI %s %s (%s) is newer than the data's newest %s, %s" % (
                pkg, have, latest[pkg]["uploaded"], what, reach[what]))
    beyond = sorted({w["version"].split(".post")[0] for w in wheels["nccl_wheels"]
                     if common.vkey(w["version"].split(".post")[0]) > common.vkey(rels.newest)}, key=common.vkey)
    read = [v for v in beyond if v in binaries.by]
    unread = [v for v in beyond if v not in binaries.by]
    if read:
        out.append("NCCL %s: not tagged in %s (newest %s): variables read from the wheels' libnccl.so.2 "
                   "(names only), algorithms and source markers unknown to the data" % (", ".join(read), NCCL_REPO, rels.tag[rels.newest]))
    if unread:
        out.append("NCCL %s: on PyPI but neither tagged in %s (newest %s) nor read by nccl_wheels.py: their "
                   "variables, algorithms and features are unknown to the data" % (", ".join(unread), NCCL_REPO, rels.tag[rels.newest]))
    reach["nccl_env"] = binaries.rels.newest
    return reach, out


def report_reach(wheels, rels, binaries):
    reach, warnings = staleness(wheels, rels, binaries)
    sys.stderr.write("data reaches: torch %s, NCCL %s (variables read up to %s, algorithms up to %s), cuDNN %s, CUDA %s\n" % (
        reach["torch"], reach["nccl"], reach["nccl_env"], rels.newest, reach["cudnn"], reach["cuda"]))
    for w in warnings:
        sys.stderr.write("warning: " + w + "\n")


def load(name):
    # The newest tag is the last release: nccl_source.json without one gives no table.
    return common.load_snapshot(name, SHAPES[name], ("releases",) if name == "nccl_source.json" else ())


def render_all():
    snap = load("nccl_source.json")
    wheels = load("torch_wheels.json")
    rels = Releases(snap)
    binaries = Binaries(load("nccl_wheels.json"), rels)
    return {
        "nccl_env.csv": nccl_env(snap, rels, binaries),
        "nccl_algos.csv": nccl_algos(snap, rels),
        "nccl_features.csv": nccl_features(snap, rels, binaries),
        "nccl_releases.csv": nccl_releases(snap, wheels, rels, binaries),
        **torch_rows(wheels),
    }


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb), 1):
        if x != y:
            return i, x, y
    n = min(len(la), len(lb)) + 1
    return n, la[n - 1] if len(la) >= n else "<end of file>", lb[n - 1] if len(lb) >= n else "<end of file>"


def main(argv):
    ap = common.OneLineParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    ap.add_argument("--out", default=common.DATA_DIR, help="where to write (default matrix/data)")
    ap.add_argument("--data", default=common.DATA_DIR, help="with --check: the files to compare")
    args = ap.parse_args(argv)
    if not args.check:
        if os.path.lexists(args.out) and not os.path.isdir(args.out):
            common.fail(args.out, "exists and is not a folder")
        try:  # before the work: a place where no folder can be made (/proc, a read-only mount)
            os.makedirs(args.out, exist_ok=True)
        except OSError as e:
            common.fail(args.out, "cannot make the folder (%s)" % (e.strerror or e))
    files = render_all()
    rels = Releases(load("nccl_source.json"))
    report_reach(load("torch_wheels.json"), rels, Binaries(load("nccl_wheels.json"), rels))
    if args.check:
        bad = 0
        for name, text in sorted(files.items()):
            path = os.path.join(args.data, name)
            try:
                with open(path, encoding="utf-8", newline="") as f:
                    have = f.read()
            except OSError as e:
                print("%s: cannot read (%s)" % (path, e.strerror))
                bad += 1
                continue
            if have != text:
                line, got, want = first_difference(have, text)
                print("%s:%d: differs from what matrix/tools/generate.py writes\n  file:      %s\n  generated: %s"
                      % (path, line, got, want))
                bad += 1
        print("%d of %d generated files differ" % (bad, len(files)) if bad else "all %d generated files match" % len(files))
        return 1 if bad else 0
    common.write_files([(os.path.join(args.out, name), text) for name, text in sorted(files.items())])
    for name in sorted(files):
        print("wrote " + os.path.join(args.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
