#!/usr/bin/env python3
"""gpucts_bandwidth beside nccl-tests: the ratio per collective, size and placement.

  vs_nccl_tests.py compare --nccl-tests LOG [--nccl-tests LOG ...] --gpucts JSON [--gpucts JSON ...]
                           [--nccl-tests-cputime LOG ...] --out PREFIX [--require]
  vs_nccl_tests.py compare --from DIR [--from DIR ...] --out PREFIX [--require]

--from DIR takes every file a vs_nccl_tests.sh --out DIR run left (one table over runs split by
--colls or by --sweep; rounds pair within a run, and a point measured by two runs is an error). Each LOG is the standard output of one nccl-tests binary (its name, e.g. all_reduce_perf.log, says
which collective it measured); each JSON a gpucts bandwidth results file (gpucts.bandwidth/1), its
points carrying "comm" (blocking, the default, or nonblocking). Writes PREFIX.md (a table a person
reads, and pastes into bench/RESULTS.md) and PREFIX.csv. The ratio is nccl-tests' time over gpucts'
time (= gpucts' algbw over nccl-tests'): 1.0 means the same, below 1 gpucts is slower. The goal is
0.9-1.1 out of place at 8 B (16 B per rank for the collectives nccl-tests rounds to 16 B per rank)
and at 1 GiB; --require exits 1 when a goal point of the blocking runs
misses it (or is absent from one side), or when a row failed (below).

Rounds: a file name with ".rN." (all_reduce_perf.r3.log, gpucts_blocking.r3.all_reduce.json) is
round N of an interleaved run, the two tools alternating so that clock and load drift reach both.
The ratio of a point is then the median of its per-round ratios (each round's nccl-tests time over
the same round's gpucts time), with their range and spread ((max - min) / median); times are the
medians over the rounds. Files without a round are round 0.

What runs between two timed calls: gpucts' points carry the host clock's figures beside the events
(host_time_us, as nccl-tests times itself; enqueue_us, the calls alone), and --nccl-tests-cputime
logs (nccl-tests -C 1) give nccl-tests' enqueue time. A section of the table sets them side by side
at the small goal points and reads where a difference comes from. Python 3 standard library only,
and gpucts_common of this tree (the GPU machine has no packages to install).

What it refuses (one line, exit 2): inputs of two world sizes (nccl-tests' "#  Rank N" lines,
gpucts' world_size; a ratio between them means nothing, and a vs_nccl_tests.sh run is of one world
size, so the runs of one table are too), anything but a regular file (a FIFO, a directory, a device),
a field of the wrong type or out of range (a string for a number, NaN, a negative size), a log that
is not nccl-tests' output at all, an --out PREFIX that names no file or meets a FIFO or a link. A log
of nccl-tests' that failed or was cut short costs its round, not the table. A nccl-tests row with
#wrong > 0 is a failed row: no ratio, a miss where it is a goal point, and --require fails. gpucts'
bandwidth files record no check of the results (their verdict is the bandwidth threshold's), so
only nccl-tests can report wrong results here.
"""
import argparse
import csv
import io
import json
import math
import os
import re
import stat
import sys

# gpucts_common, python/ of this tree (standard library only too): the one writer of output files.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from gpucts_common.files import write_atomic  # noqa: E402

# nccl-tests binary -> the gpucts collective-table row measuring the same thing. sendrecv_perf
# sends to rank+1 and receives from rank-1: gpucts' SendRecvRing.
BINARY_ROWS = {
    "all_reduce": "AllReduce",
    "all_gather": "AllGather",
    "broadcast": "Broadcast",
    "reduce_scatter": "ReduceScatter",
    "reduce": "Reduce",
    "alltoall": "AlltoAll",
    "scatter": "Scatter",
    "gather": "Gather",
    "sendrecv": "SendRecvRing",
}
GOAL_SIZES = (8, 1 << 30)
# nccl-tests (2.19) rounds each rank's part of these down to a multiple of 16 B: at "8 B" they run
# 0 B. Their small goal point is the smallest size they do run, 16 B per rank.
PER_RANK_16B = {"AllGather", "ReduceScatter", "AlltoAll", "Scatter", "Gather"}
GOAL_LOW, GOAL_HIGH = 0.9, 1.1
LATENCY_BELOW = 64 << 10  # below this a point reads as a time (us), above as GB/s
MAX_INPUT_BYTES = 64 << 20  # far above any log or results file of these tools


class ParseError(Exception):
    pass


def read_input(path):
    """The bytes of an input file. Only a regular file is opened: a FIFO would block the read, a
    directory or a device is no tool's output."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ParseError("%s: %s" % (path, e.strerror))
    if not stat.S_ISREG(st.st_mode):
        raise ParseError("%s: not a regular file" % path)
    if st.st_size > MAX_INPUT_BYTES:
        raise ParseError("%s: %d bytes, more than any output of these tools" % (path, st.st_size))
    chunks, total = [], 0
    try:
        # Nonblocking: a file swapped for a FIFO after the stat cannot block either. Read in chunks
        # to the end: /proc files say size 0 and give a page per read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while total <= MAX_INPUT_BYTES:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
    except OSError as e:
        raise ParseError("%s: %s" % (path, e.strerror or e))
    if total > MAX_INPUT_BYTES:
        raise ParseError("%s: more than %d bytes, more than any output of these tools" % (path, MAX_INPUT_BYTES))
    return b"".join(chunks)


def _whole(x):
    return isinstance(x, int) and not isinstance(x, bool)


# What an input field may hold: (how an error says it, the test).
KINDS = {
    "text": ("a string", lambda x: isinstance(x, str)),
    "flag": ("true or false", lambda x: isinstance(x, bool)),
    "list": ("a list", lambda x: isinstance(x, list)),
    "object": ("an object", lambda x: isinstance(x, dict)),
    "count": ("a whole number >= 0", lambda x: _whole(x) and x >= 0),
    "ranks": ("a whole number >= 1", lambda x: _whole(x) and x >= 1),
    "amount": ("a finite number >= 0",
               lambda x: (_whole(x) or isinstance(x, float)) and math.isfinite(x) and x >= 0),
}


def checked(value, kind, where, optional=False):
    """value when it is of `kind` (KINDS), None for an absent one where optional; else a ParseError
    naming where. The one check of every field read from an input."""
    if value is None and optional:
        return None
    name, ok = KINDS[kind]
    if not ok(value):
        shown = "missing" if value is None else json.dumps(value)[:40]
        raise ParseError("%s is %s, expected %s" % (where, shown, name))
    return value


def same_world(seen, world, path, tool):
    """Notes in `seen` that `path` (`tool`'s) ran at `world` ranks: a second world size is refused,
    naming both, since a ratio between two world sizes means nothing."""
    if world is None:
        raise ParseError("%s: no '#  Rank N' lines, so its world size is unknown" % path)
    first = seen.setdefault("world", (world, tool, path))
    if first[0] != world:
        raise ParseError("world sizes differ: %s at %d rank(s) (%s), %s at %d (%s); compare runs of one world size"
                         % (first[1], first[0], first[2], tool, world, path))


def round_of(path):
    """The round a file belongs to, from ".rN." in its name (0 where there is none)."""
    m = re.search(r"\.r(\d+)\.", os.path.basename(path))
    return int(m.group(1)) if m else 0


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def row_of_log(path):
    """The collective a log measured, from its file name (all_reduce_perf.log, all_reduce_perf_mpi.txt)."""
    base = os.path.basename(path)
    m = re.match(r"([a-z_]+?)_perf", base)
    if not m or m.group(1) not in BINARY_ROWS:
        raise ParseError("%s: the file name does not name a nccl-tests binary (%s)" %
                         (path, ", ".join(k + "_perf" for k in BINARY_ROWS)))
    return BINARY_ROWS[m.group(1)]


def _value(text):
    """A column of a result row as a value for checked(): None for N/A, an int or a float where it
    reads as one, else the text (which checked() then refuses)."""
    if text == "N/A":
        return None
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def looks_like_nccl_tests(text):
    """Whether a log without result rows is still nccl-tests' output (its banner, or the exit line
    vs_nccl_tests.sh adds): a run that failed, not some other file."""
    return re.search(r"^# (nccl-tests version|nThread)\b|^exit \d+$", text, re.M) is not None


def parse_nccl_tests(text, origin="nccl-tests"):
    """The result rows of one nccl-tests run: dicts with bytes, count, type, redop, root and, per
    placement ("out_of_place", "in_place"), time_us, algbw_gbps, busbw_gbps, wrong (None where N/A).
    Also the versions of its banner ("nccl-headers=22803 nccl-library=22803") and its number of
    ranks ("#  Rank N" lines) when present."""
    rows = []
    meta = {}
    for n, line in enumerate(text.splitlines(), 1):
        where = "%s:%d" % (origin, n)
        if re.match(r"#\s+Rank\s+\d+ ", line):
            meta["ranks"] = meta.get("ranks", 0) + 1
        m = re.search(r"nccl-headers=(\d+) nccl-library=(\d+)", line)
        if m:
            meta["nccl_header"], meta["nccl_library"] = int(m.group(1)), int(m.group(2))
        fields = line.split()
        if not fields or line.lstrip().startswith("#") or not (fields[0].isascii() and fields[0].isdigit()):
            continue
        # size count type redop root | time algbw busbw #wrong (out of place) | the same in place
        if len(fields) < 13:
            raise ParseError("%s: a result row with %d fields, expected 13: %s" % (where, len(fields), line.strip()))
        row = {"bytes": checked(_value(fields[0]), "count", where + ": size"),
               "count": checked(_value(fields[1]), "count", where + ": count"),
               "type": fields[2], "redop": fields[3], "root": fields[4]}
        for i, placement in ((5, "out_of_place"), (9, "in_place")):
            row[placement] = {key: checked(_value(fields[i + k]), "amount", "%s: %s %s" % (where, placement, key),
                                           optional=True)
                              for k, key in enumerate(("time_us", "algbw_gbps", "busbw_gbps", "wrong"))}
        rows.append(row)
    if not rows:
        raise ParseError("%s: no result rows (did the run fail? its output is the file)" % origin)
    return rows, meta


def load_gpucts(path):
    """The points of a gpucts bandwidth file, each (collective, bytes, placement, comm) -> point, and
    the file's top level. Every field read is checked (checked())."""
    try:
        j = json.loads(read_input(path).decode("utf-8"))
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise ParseError("%s: malformed JSON: %s" % (path, str(e).splitlines()[0] if str(e) else type(e).__name__))
    checked(j, "object", path + ": the top level")
    if j.get("schema") != "gpucts.bandwidth/1":
        raise ParseError("%s: schema is not gpucts.bandwidth/1" % path)
    world = checked(j.get("world_size"), "ranks", path + ": world_size")
    for key in ("gpu", "nccl", "host"):
        checked(j.get(key), "text", "%s: %s" % (path, key), optional=True)
    out = {}
    for i, p in enumerate(checked(j.get("points"), "list", path + ": points")):
        where = "%s: points[%d]" % (path, i)
        checked(p, "object", where)
        for key, kind, optional in (("collective", "text", False), ("dtype", "text", False), ("op", "text", True),
                                    ("comm", "text", True), ("graph", "flag", True), ("in_place", "flag", False),
                                    ("bytes", "count", False), ("ranks", "ranks", True), ("time_us", "amount", False),
                                    ("algbw_gbps", "amount", False), ("spread_pct", "amount", True),
                                    ("host_time_us", "amount", True), ("enqueue_us", "amount", True)):
            checked(p.get(key), kind, "%s.%s" % (where, key), optional)
        if p.get("ranks", world) != world:
            raise ParseError("%s.ranks is %d, the file's world_size %d" % (where, p["ranks"], world))
        if p.get("graph"):
            continue
        if p["dtype"] != "f32" or p.get("op") not in (None, "", "sum"):
            continue  # nccl-tests' default run is float sum
        placement = "in_place" if p["in_place"] else "out_of_place"
        out[(p["collective"], p["bytes"], placement, p.get("comm") or "blocking")] = p
    return out, j


def warn(text):
    print("vs_nccl_tests.py: " + text, file=sys.stderr)


def load_cputime(logs, warn=warn, seen=None):
    """nccl-tests runs with -C 1: their time column is the host time per call of the calls alone,
    before the stream wait. (collective, bytes, placement) -> median over the rounds. These figures
    only explain the table: a log without them (a failed run, a build without -C) is left out with
    a warning, never the table; a log of another world size than `seen`'s is refused."""
    cpu = {}
    seen = {} if seen is None else seen
    for log in logs:
        coll = row_of_log(log)
        text = read_input(log).decode(errors="replace")
        if not re.search(r"^#\s+size\s+count\s+type\s+redop\s+root\s+cputime\b", text, re.M):
            warn("%s left out: no cputime column (the run failed, or this nccl-tests has no -C)" % log)
            continue
        try:
            rows, meta = parse_nccl_tests(text, log)
        except ParseError as e:
            warn("%s left out: %s" % (log, e))
            continue
        same_world(seen, meta.get("ranks"), log, "nccl-tests -C 1")
        for r in rows:
            for placement in ("out_of_place", "in_place"):
                if r[placement]["time_us"]:
                    cpu.setdefault((coll, r["bytes"], placement), []).append(r[placement]["time_us"])
    return {k: median(v) for k, v in cpu.items()}


def _median_of(points, field):
    v = [p[field] for p in points if p.get(field) is not None]
    return median(v) if v else None


def run_spread(times):
    """Highest over lowest of one tool's times of a point over its runs (None below two runs)."""
    times = [t for t in times if t]
    return max(times) / min(times) if len(times) > 1 else None


def compare(logs, gpucts_files, cputime_logs=(), seen=None):
    """One row per (collective, size, placement) nccl-tests measured, with each gpucts mode found:
    the median over rounds of the times and of the per-round ratios, and the ratios' range. With
    the host clock's figures (gpucts' host_time_us and enqueue_us, nccl-tests -C 1 logs) beside.
    Every input is of one world size, that of `seen` where given (the runs of one table)."""
    seen = {} if seen is None else seen
    enqueue = load_cputime(cputime_logs, seen=seen)
    ours = {}  # (collective, bytes, placement, comm) -> {round: point}
    runs = []
    for g in gpucts_files:
        pts, j = load_gpucts(g)
        same_world(seen, j["world_size"], g, "gpucts")
        for k, p in pts.items():
            ours.setdefault(k, {})[round_of(g)] = p
        runs.append(j)
    modes = sorted({k[3] for k in ours}, key=lambda m: (m != "blocking", m))
    theirs = {}  # (collective, bytes, placement) -> {round: row}
    order = []
    ranks = {}  # collective -> ranks of its nccl-tests run
    failed = {}  # collective -> its logs without result rows (a run that failed or was cut short)
    for log in logs:
        coll = row_of_log(log)
        text = read_input(log).decode(errors="replace")
        try:
            rows, meta = parse_nccl_tests(text, log)
        except ParseError as e:
            if not looks_like_nccl_tests(text):
                raise ParseError("%s: not nccl-tests' output (no banner, no result row)" % log)
            # One failed round costs that round, not the table; a collective with no round at all
            # keeps its goal points, as misses.
            warn("%s left out: %s" % (log, e))
            failed.setdefault(coll, []).append(log)
            continue
        same_world(seen, meta.get("ranks"), log, "nccl-tests")
        ranks[coll] = meta.get("ranks")
        for r in rows:
            for placement in ("out_of_place", "in_place"):
                key = (coll, r["bytes"], placement)
                if key not in theirs:
                    order.append(key)
                theirs.setdefault(key, {})[round_of(log)] = r[placement]
    world = next((r for r in ranks.values() if r), 1)
    for coll in failed:
        if coll in ranks:
            continue
        for size in (smallest_bytes(coll, world), GOAL_SIZES[1]):
            key = (coll, size, "out_of_place")
            order.append(key)
            theirs[key] = {}
    table = []
    for key in order:
        coll, nbytes, placement = key
        rounds = theirs[key]
        times = [x["time_us"] for x in rounds.values() if x["time_us"]]
        algbws = [x["algbw_gbps"] for x in rounds.values() if x["algbw_gbps"] is not None]
        entry = {"collective": coll, "bytes": nbytes, "placement": placement,
                 "nccl_tests_us": median(times) if times else None,
                 "nccl_tests_algbw": median(algbws) if algbws else None,
                 "nccl_tests_busbw": None, "rounds": len(rounds), "modes": {}, "ranks": ranks.get(coll),
                 # One rank in place: input and output are one buffer, nothing is copied; the time
                 # of such a call is no bandwidth (either tool's "5e+06 GB/s" means nothing).
                 "no_data": ranks.get(coll) == 1 and placement == "in_place",
                 "nccl_tests_enqueue_us": enqueue.get(key),
                 # Each round is a new process of each tool: its highest time over its lowest.
                 "nccl_tests_run_spread": run_spread(times),
                 "nccl_tests_failed": failed.get(coll) if coll not in ranks else None,
                 # Wrong results over its rounds: the times of a wrong answer are no comparison.
                 "nccl_tests_wrong": sum(x["wrong"] or 0 for x in rounds.values())}
        for m in modes:
            mine = ours.get((coll, nbytes, placement, m))
            if not mine:
                continue
            ratios, host_ratios = [], []
            for rnd, x in rounds.items():
                if entry["nccl_tests_wrong"]:
                    break  # a failed row: no ratio against a wrong answer
                # The same round's gpucts point; a run without rounds pairs with every round.
                p = mine.get(rnd, mine.get(0)) if len(mine) > 1 or 0 not in mine else mine[0]
                if p is not None and x["time_us"] and p["time_us"] > 0:
                    ratios.append(x["time_us"] / p["time_us"])
                    if p.get("host_time_us"):
                        host_ratios.append(x["time_us"] / p["host_time_us"])
            ratio = median(ratios) if ratios else None
            entry["modes"][m] = {
                "time_us": median([p["time_us"] for p in mine.values()]),
                "algbw_gbps": median([p["algbw_gbps"] for p in mine.values()]),
                "spread_pct": median([p.get("spread_pct") or 0 for p in mine.values()]),
                "ratio": ratio,
                "ratio_min": min(ratios) if ratios else None,
                "ratio_max": max(ratios) if ratios else None,
                "ratio_spread_pct": (max(ratios) - min(ratios)) / ratio * 100 if ratios else None,
                "rounds": len(ratios),
                "host_time_us": _median_of(mine.values(), "host_time_us"),
                "enqueue_us": _median_of(mine.values(), "enqueue_us"),
                "ratio_host": median(host_ratios) if host_ratios else None,
                "run_spread": run_spread([p.get("host_time_us") or p["time_us"] for p in mine.values()])}
        table.append(entry)
    return table, modes, runs


def smallest_bytes(coll, ranks=1):
    """The smallest size nccl-tests runs for a collective at `ranks` ranks (its small goal point)."""
    return 16 * max(ranks or 1, 1) if coll in PER_RANK_16B else GOAL_SIZES[0]


def parse_bytes(text):
    """nccl-tests' size spelling: a number with an optional K, M or G (powers of 1024)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGkmg]?)\s*", str(text))
    if not m:
        raise ParseError("'%s' is not a size (a number with an optional K, M or G)" % text)
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def sweep_for(coll, ranks, b, e, f):
    """The sweep (first size, factor) both tools run for a collective, as nccl-tests' -b/-f: the
    given one, unless it starts below the smallest size nccl-tests runs for the collective. Then it
    starts there, with a factor that still ends at the given sweep's last size (the given factor,
    or the one that keeps the given sweep's two first sizes); where none does, the given sweep
    (nccl-tests then runs 0 B first, and the small goal point is missing from the table)."""
    if not re.fullmatch(r"\d+", str(f)):
        raise ParseError("factor '%s' is not a whole number" % f)
    b, e, f = parse_bytes(b), parse_bytes(e), int(f)
    if b < 1 or f < 2 or e < b:
        raise ParseError("sweep %d:%d:%d: expected 1 <= first <= last and a factor >= 2" % (b, e, f))
    last = b
    while last * f <= e:
        last *= f
    small = smallest_bytes(coll, ranks)
    if b >= small:
        return b, f
    for cf in (f, f * b // small if f * b % small == 0 else 0):
        if cf < 2:
            continue
        s = small
        while s < last:
            s *= cf
        if s == last:
            return small, cf
    return b, f


def is_goal(e):
    small = smallest_bytes(e["collective"], e.get("ranks"))
    return e["placement"] == "out_of_place" and e["bytes"] in (small, GOAL_SIZES[1])


def misses(table, mode="blocking"):
    """The goal points of `mode` outside 0.9-1.1, not measured by gpucts, or run by neither tool
    (a collective of the table without its small or its 1 GiB point), as text."""
    out = []
    for coll in dict.fromkeys(e["collective"] for e in table):
        ran = {e["bytes"] for e in table if e["collective"] == coll and e["placement"] == "out_of_place"}
        ranks = next((e.get("ranks") for e in table if e["collective"] == coll), 1)
        for size in (smallest_bytes(coll, ranks), GOAL_SIZES[1]):
            if size not in ran:
                out.append("%s %s: run by neither tool" % (coll, size_str(size)))
    for e in table:
        if not is_goal(e):
            continue
        m = e["modes"].get(mode)
        if e.get("nccl_tests_wrong"):
            out.append("%s %s: %s" % (e["collective"], size_str(e["bytes"]), wrong_results(e)))
        elif e.get("nccl_tests_failed"):
            out.append("%s %s: nccl-tests gave no result rows (%s)" % (
                e["collective"], size_str(e["bytes"]), ", ".join(os.path.basename(x) for x in e["nccl_tests_failed"])))
        elif m is None or m["ratio"] is None:
            out.append("%s %s: not measured by gpucts (%s)" % (e["collective"], size_str(e["bytes"]), mode))
        elif not GOAL_LOW <= m["ratio"] <= GOAL_HIGH:
            out.append("%s %s: %.2fx" % (e["collective"], size_str(e["bytes"]), m["ratio"]))
    return out


def wrong_results(e):
    return "nccl-tests reported %d wrong results" % e["nccl_tests_wrong"]


def failed_rows(table):
    """The rows whose nccl-tests run reported wrong results, goal points or not, as text."""
    return ["%s %s %s: %s" % (e["collective"], size_str(e["bytes"]), e["placement"].replace("_", " "),
                              wrong_results(e)) for e in table if e.get("nccl_tests_wrong")]


def reading(e, mode="blocking"):
    """Where a goal point's difference comes from (text; "" without a ratio): the timing method,
    each tool's own change between its runs, the host's work between two calls, or the device side."""
    x = e["modes"].get(mode) or {}
    if e.get("nccl_tests_wrong"):
        return "failed: " + wrong_results(e)
    if x.get("ratio") is None:
        return ""
    if GOAL_LOW <= x["ratio"] <= GOAL_HIGH:
        return "within the goal"
    if x.get("ratio_host") is not None and GOAL_LOW <= x["ratio_host"] <= GOAL_HIGH:
        return "the timing method: by the host clock gpucts is %.2fx" % x["ratio_host"]
    # A tool whose own time moves more between its runs than the goal band is wide: one round's
    # ratio cannot tell 0.9x from 1.1x, and five rounds' median barely. Unless every round misses
    # on the same side: then the difference holds whatever each run drew.
    spreads = (e.get("nccl_tests_run_spread"), x.get("run_spread"))
    one_side = (x.get("ratio_min") or 0) > GOAL_HIGH or (x.get("ratio_max") or GOAL_LOW) < GOAL_LOW
    if max(t or 0 for t in spreads) > GOAL_HIGH / GOAL_LOW and not one_side:
        return "launch to launch: over each tool's own runs the time spans %s" % ", ".join(
            "%.2fx (%s)" % (t, who) for who, t in zip(("nccl-tests", "gpucts"), spreads) if t)
    mine, theirs = x.get("enqueue_us"), e.get("nccl_tests_enqueue_us")
    if not mine or not theirs:
        return "not read: no enqueue figure of %s" % (
            "nccl-tests (-C 1)" if mine else "gpucts" if theirs else "either tool")
    q = mine / theirs
    if not GOAL_LOW <= q <= GOAL_HIGH:
        return "the host between two calls: gpucts' enqueue %.2fx nccl-tests'" % q
    return "not the host between calls (enqueue %.2fx): the device side or the wait" % q


def size_str(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return "%d %s" % (b >> shift, unit)
    return "%d B" % b


def fmt(v, spec):
    return "" if v is None else spec % v


def output_paths(prefix):
    """PREFIX.csv and PREFIX.md, checked before any input is read: PREFIX must end in a file name
    (a folder's "dir/" would give the hidden dir/.csv) in a folder that is there, and only a regular
    file or nothing may be where they go (a FIFO there would block the write, a link would send it
    elsewhere). write_atomic then writes each whole, beside it, never through a link."""
    if os.path.basename(prefix) in ("", ".", ".."):
        raise ParseError("--out %r: expected a PREFIX that ends in a file name (PREFIX.md, PREFIX.csv)" % prefix)
    folder = os.path.dirname(prefix)
    if folder and not os.path.isdir(folder):
        raise ParseError("--out %r: %s is not a folder" % (prefix, folder))
    paths = [prefix + ".csv", prefix + ".md"]
    for path in paths:
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isfile(path)):
            raise ParseError("%s: exists and is not a regular file; not writing through it" % path)
    return paths


def write(table, modes, runs, prefix, title):
    csv_path, md_path = output_paths(prefix)
    with io.StringIO(newline="") as f:
        w = csv.writer(f)
        head = ["collective", "bytes", "placement", "nccl_tests_time_us", "nccl_tests_algbw_gbps",
                "nccl_tests_enqueue_us", "nccl_tests_wrong"]
        for m in modes:
            head += ["gpucts_%s_time_us" % m, "gpucts_%s_algbw_gbps" % m, "ratio_%s" % m,
                     "ratio_%s_min" % m, "ratio_%s_max" % m, "rounds_%s" % m, "gpucts_%s_host_time_us" % m,
                     "gpucts_%s_enqueue_us" % m, "ratio_%s_host" % m]
        w.writerow(head)
        for e in table:
            row = [e["collective"], e["bytes"], e["placement"], fmt(e["nccl_tests_us"], "%.3f"),
                   fmt(e["nccl_tests_algbw"], "%.2f"), fmt(e.get("nccl_tests_enqueue_us"), "%.3f"),
                   fmt(e.get("nccl_tests_wrong"), "%d")]
            for m in modes:
                x = e["modes"].get(m, {})
                row += [fmt(x.get("time_us"), "%.3f"), fmt(x.get("algbw_gbps"), "%.3f"), fmt(x.get("ratio"), "%.3f"),
                        fmt(x.get("ratio_min"), "%.3f"), fmt(x.get("ratio_max"), "%.3f"), x.get("rounds", ""),
                        fmt(x.get("host_time_us"), "%.3f"), fmt(x.get("enqueue_us"), "%.3f"),
                        fmt(x.get("ratio_host"), "%.3f")]
            w.writerow(row)
        csv_text = f.getvalue()
    lines = ["### %s" % title, ""]
    for j in runs:  # once per distinct run (a round's files repeat it)
        line = "gpucts: %s, NCCL %s, %s rank(s), host %s" % (j.get("gpu", "?"), j.get("nccl", "?"),
                                                           j.get("world_size", "?"), j.get("host", "?"))
        if line not in lines:
            lines.append(line)
    rounds = max([e["rounds"] for e in table] or [0])
    lines += ["", "Ratio = nccl-tests' time / gpucts' time (gpucts' algbw / nccl-tests'); goal %.1f-%.1fx out of "
              "place at 8 B (16 B per rank where nccl-tests runs nothing smaller) and 1 GiB. Times in us below 64 KiB, else algbw in GB/s; each the median over "
              "%d round(s), the tools alternating; the ratio is the median of the per-round ratios, "
              "its range after it (lowest-highest, spread = range / median)." % (GOAL_LOW, GOAL_HIGH, rounds), ""]
    head = "| collective | size | placement | nccl-tests |"
    sep = "| --- | --- | --- | --- |"
    for m in modes:
        head += " gpucts %s | ratio %s | range %s |" % (m, m, m)
        sep += " --- | --- | --- |"
    lines += [head, sep]
    for e in table:
        lat = e["bytes"] < LATENCY_BELOW
        def val(us, bw):
            return fmt(us, "%.2f us") if lat else fmt(bw, "%.1f GB/s")
        cells = [e["collective"], size_str(e["bytes"]), e["placement"].replace("_", " "),
                 val(e["nccl_tests_us"], e["nccl_tests_algbw"])]
        if e.get("nccl_tests_failed"):
            cells[3] = "no result rows (%s)" % ", ".join(os.path.basename(x) for x in e["nccl_tests_failed"])
        if e.get("nccl_tests_wrong"):
            cells[3] = "**failed: %s**" % wrong_results(e)
        elif e["no_data"]:
            cells[3] = "no data moves (1 rank, in place)"
            lines.append("| " + " | ".join(cells + ["", "", ""] * len(modes)) + " |")
            continue
        for m in modes:
            x = e["modes"].get(m)
            if x is None:
                cells += ["", "", ""]
                continue
            r = fmt(x["ratio"], "%.2fx")
            if is_goal(e) and x["ratio"] is not None:
                r = ("**%s**" % r) if not GOAL_LOW <= x["ratio"] <= GOAL_HIGH else r + " ok"
            spread = ""
            if x["ratio"] is not None:
                spread = "%.2f-%.2f (%.0f%%, %d)" % (x["ratio_min"], x["ratio_max"], x["ratio_spread_pct"], x["rounds"])
            cells += [val(x["time_us"], x["algbw_gbps"]), r, spread]
        lines.append("| " + " | ".join(cells) + " |")
    for m in modes:
        miss = misses(table, m)
        goal_n = sum(1 for e in table if is_goal(e)) + sum(1 for x in miss if x.endswith("run by neither tool"))
        lines += ["", "%s: %d of %d goal points within %.1f-%.1fx%s" %
                  (m, goal_n - len(miss), goal_n, GOAL_LOW, GOAL_HIGH, (": outside " + "; ".join(miss)) if miss else "")]
    failed = failed_rows(table)
    if failed:
        lines += ["", "failed rows (no ratio): " + "; ".join(failed)]
    lines += host_clock_section(table)
    if not modes:
        lines += ["", "no gpucts points to compare (nccl-tests only)"]
    for path, text in ((csv_path, csv_text), (md_path, "\n".join(lines) + "\n")):
        write_atomic(path, text)  # its OutputError, an OSError, is main's one line
    return "\n".join(lines)


def host_clock_section(table, mode="blocking"):
    """The small goal points with the host clock's figures of both tools, and what they say of a
    difference (reading()); nothing where neither tool has them."""
    rows = [e for e in table if is_goal(e) and e["bytes"] != GOAL_SIZES[1] and mode in e["modes"]]
    if not any(e.get("nccl_tests_enqueue_us") or e["modes"][mode].get("host_time_us") for e in rows):
        return []
    out = ["", "What runs between two timed calls (%s, the small goal points): gpucts' \"host clock\" times it "
           "as nccl-tests times itself (the host clock from the first call to the end of the stream wait); "
           "\"enqueue\" is the calls alone, before the wait (gpucts' host clock; nccl-tests -C 1). Where "
           "enqueue is near the time the calls are host-bound, and the two enqueue figures compare the host's "
           "work between two calls directly. Medians over the rounds; at several ranks gpucts' figures are "
           "the mean over its processes, nccl-tests' enqueue its rank 0's. Each round starts each tool "
           "afresh: \"own change between runs\" is each tool's highest time of the point over its lowest "
           "(nccl-tests, gpucts' host clock)." % mode, "",
           "| collective | size | nccl-tests | nccl-tests enqueue | gpucts events | gpucts host clock | "
           "gpucts enqueue | ratio by host clock | own change between runs | reading |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in rows:
        x = e["modes"][mode]
        own = ""
        if e.get("nccl_tests_run_spread") or x.get("run_spread"):
            own = "%s, %s" % (fmt(e.get("nccl_tests_run_spread"), "%.2fx") or "-", fmt(x.get("run_spread"), "%.2fx") or "-")
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            e["collective"], size_str(e["bytes"]), fmt(e["nccl_tests_us"], "%.2f us"),
            fmt(e.get("nccl_tests_enqueue_us"), "%.2f us"), fmt(x.get("time_us"), "%.2f us"),
            fmt(x.get("host_time_us"), "%.2f us"), fmt(x.get("enqueue_us"), "%.2f us"),
            fmt(x.get("ratio_host"), "%.2fx"), own, reading(e, mode)))
    return out


def files_of(folder):
    """The nccl-tests logs, its -C 1 logs and gpucts' results a vs_nccl_tests.sh run left in folder."""
    if not os.path.isdir(os.path.join(folder, "nccl-tests")):
        raise ParseError("%s: not a vs_nccl_tests.sh output folder (no nccl-tests/ in it)" % folder)
    logs, cpu = [], []
    for name in sorted(os.listdir(os.path.join(folder, "nccl-tests"))):
        if re.fullmatch(r"[a-z_]+_perf(\.cpu)?(\.r\d+)?\.log", name):
            (cpu if ".cpu." in name else logs).append(os.path.join(folder, "nccl-tests", name))
    g = os.path.join(folder, "gpucts")
    ours = [os.path.join(g, n) for n in sorted(os.listdir(g)) if n.endswith(".json")] if os.path.isdir(g) else []
    return logs, cpu, ours


def merge(parts):
    """One table over the tables of several runs (split by collective or by size). A point measured
    in two runs is an error: one would hide the other. A goal point kept only as a miss (its
    collective's nccl-tests run failed) gives way to the run that measured it."""
    table, modes, runs, where = [], [], [], {}
    # A run whose every collective failed knows no world size: its placeholders take the others'.
    world = next((e["ranks"] for t, _, _ in parts for e in t if e.get("ranks")), 1)
    for part_table, part_modes, part_runs in parts:
        for e in part_table:
            if e.get("ranks") is None and e.get("nccl_tests_failed"):
                big = e["bytes"] == GOAL_SIZES[1]
                e = dict(e, ranks=world, bytes=e["bytes"] if big else smallest_bytes(e["collective"], world))
            key = (e["collective"], e["bytes"], e["placement"])
            if key in where:
                kept = table[where[key]]
                if e.get("nccl_tests_failed") and not e["rounds"]:
                    continue
                if not (kept.get("nccl_tests_failed") and not kept["rounds"]):
                    raise ParseError("%s %s %s: measured in two runs (compare them apart)" % (
                        e["collective"], size_str(e["bytes"]), e["placement"].replace("_", " ")))
                table[where[key]] = e
                continue
            where[key] = len(table)
            table.append(e)
        modes += [m for m in part_modes if m not in modes]
        runs += part_runs
    modes.sort(key=lambda m: (m != "blocking", m))
    first = {}
    for e in table:
        first.setdefault(e["collective"], len(first))
    table.sort(key=lambda e: (first[e["collective"]], e["bytes"], e["placement"] != "out_of_place"))
    return table, modes, runs


class OneLineParser(argparse.ArgumentParser):
    """Bad usage in one line and exit 2, as every other refusal here (argparse prints its usage too)."""

    def error(self, message):
        self.exit(2, "%s: %s\n" % (self.prog, message))


def main(argv):
    ap = OneLineParser(prog="vs_nccl_tests.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--nccl-tests", action="append", default=[], metavar="LOG")
    c.add_argument("--from", dest="folders", action="append", default=[], metavar="DIR",
                   help="the logs and results of a vs_nccl_tests.sh --out DIR (repeatable: runs split by --colls)")
    c.add_argument("--gpucts", action="append", default=[], metavar="JSON")
    c.add_argument("--nccl-tests-cputime", action="append", default=[], metavar="LOG",
                   help="a nccl-tests run with -C 1 (its time column: the calls alone, before the wait)")
    c.add_argument("--out", required=True, metavar="PREFIX")
    c.add_argument("--title", default="gpucts_bandwidth beside nccl-tests")
    c.add_argument("--require", action="store_true", help="exit 1 when a blocking goal point misses 0.9-1.1x or a row failed")
    a = ap.parse_args(argv)
    try:
        output_paths(a.out)  # a bad PREFIX found before the inputs are read, not after
        if (a.gpucts or a.nccl_tests_cputime) and not a.nccl_tests:
            raise ParseError("--gpucts and --nccl-tests-cputime pair with --nccl-tests logs; --from DIR takes "
                             "the folder's own files")
        parts = []
        seen = {}  # one world size over every run of the table
        if a.nccl_tests:
            parts.append(compare(a.nccl_tests, a.gpucts, a.nccl_tests_cputime, seen))
        for d in a.folders:
            # Rounds pair within one run: two runs split by collective or by size each keep theirs.
            logs, cpu, ours = files_of(d)
            if not logs:
                raise ParseError("%s: no nccl-tests log in it" % d)
            parts.append(compare(logs, ours, cpu, seen))
        if not parts:
            raise ParseError("no nccl-tests log given (--nccl-tests LOG or --from DIR)")
        table, modes, runs = merge(parts)
        text = write(table, modes, runs, a.out, a.title)
    except (ParseError, OSError) as e:
        print("vs_nccl_tests.py: %s" % e, file=sys.stderr)
        return 2
    print(text)
    if a.require and (misses(table, "blocking") or failed_rows(table)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
