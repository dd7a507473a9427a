"""What the compatibility data says about one collective case: the (dtype, op, nranks) NCCL
refuses (matrix nccl_ops.csv) and the known defects whose condition and release range hold
(nccl_defects.csv), read the way the C++ suites read them. The files are found beside the package:
<prefix>/share/gpucts/matrix in an install tree, matrix/data in the source tree. Where neither is
there, nothing is predicted (no refusal expected, no defect named)."""
import csv
import os

# The suites' op names -> the data's.
_OP = {"premul_sum": "premulsum"}
# The suites' collective names -> the collective table's rows.
COLLECTIVE = {"all_reduce": "AllReduce", "reduce_scatter_tensor": "ReduceScatter",
              "all_gather_into_tensor": "AllGather", "broadcast": "Broadcast",
              "all_to_all_single": "AlltoAll", "send_recv": "SendRecv"}


def _data_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    for rel in (("..", "..", "matrix"), ("..", "..", "..", "matrix", "data")):
        d = os.path.normpath(os.path.join(here, *rel))
        if os.path.isfile(os.path.join(d, "nccl_ops.csv")):
            return d
    return None


_CACHE = {}


def rows(name):
    """The rows of one matrix file as dicts ([] where the data is not found)."""
    if name not in _CACHE:
        d = _data_dir()
        out = []
        if d:
            with open(os.path.join(d, name), newline="", encoding="utf-8-sig") as f:
                lines = [ln for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
            out = list(csv.DictReader(lines))
        _CACHE[name] = out
    return _CACHE[name]


def version(text):
    return tuple(int(x) for x in text.split(".")) if text else None


def _in_range(v, first, until):
    return v is not None and (not first or v >= version(first)) and (not until or v < version(until))


def _nranks_hold(spec, n):
    """nranks cells: empty or "*" any, "N", ">=N", "N-M"."""
    spec = (spec or "").strip()
    if spec in ("", "*"):
        return True
    if spec.startswith(">="):
        return n >= int(spec[2:])
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo) <= n <= int(hi)
    return n == int(spec)


def _listed(cell, value):
    items = [x for x in (cell or "").split(";") if x]
    return not items or "*" in items or value in items


def refusal(dtype, op, nranks, nccl):
    """The nccl_ops.csv row (a dict) saying NCCL `nccl` (a version tuple) refuses this (dtype, op)
    at this many ranks, or None."""
    for r in rows("nccl_ops.csv"):
        if r["supported"] != "no" or r["dtype"] != dtype or r["op"] != _OP.get(op, op):
            continue
        if _nranks_hold(r["nranks"], nranks) and _in_range(nccl, r["since"], r["until"]):
            return r
    return None


def known_defects(collective, dtype, op, in_place, nranks, nccl):
    """The ids of nccl_defects.csv rows whose range holds NCCL `nccl` and whose condition holds
    for this case (rows with an `other` condition are matched to no case), in file order."""
    ids = []
    for r in rows("nccl_defects.csv"):
        if r["other"] or not _in_range(nccl, r["first"], r["fixed"]):
            continue
        if not _nranks_hold(r["nranks"], nranks) or not _listed(r["collectives"], COLLECTIVE.get(collective)):
            continue
        if not _listed(r["dtypes"], dtype) or (r["ops"] and (not op or not _listed(r["ops"], _OP.get(op, op)))):
            continue
        placement = r["placement"]
        if placement not in ("", "*") and placement != ("in_place" if in_place else "out_of_place"):
            continue
        if r["id"] not in ids:
            ids.append(r["id"])
    return ids


def describe(ids):
    """"nccl-1950 (title, link, fixed in 2.29.7)" for each id."""
    out = []
    for i in ids:
        r = next((x for x in rows("nccl_defects.csv") if x["id"] == i), None)
        if r:
            out.append("%s (%s, %s; %s)" % (i, r["title"], r["link"], "fixed in NCCL " + r["fixed"] if r["fixed"]
                                            else "no fixed release yet"))
    return "; ".join(out)
