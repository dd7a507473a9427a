"""What the compatibility data says about one collective case: the (dtype, op, nranks) NCCL
refuses (matrix nccl_ops.csv) and the known defects whose condition and release range hold
(nccl_defects.csv by the NCCL release, torch_defects.csv by the torch release and process group),
read the way the C++ suites read them. The files are found beside the package:
<prefix>/share/gpucts/matrix in an install tree, matrix/data in the source tree. Where neither is
there, nothing is predicted (no refusal expected, no defect named)."""
import csv
import os
import re

from . import api_map

# The suites' op names -> the data's.
_OP = {"premul_sum": "premulsum"}


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


def torch_release(text):
    """torch.__version__ ("2.11.0+cu130", "1.13.0a0") -> (2, 11, 0); None where it is no release."""
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


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


def _any_listed(cell, values):
    return any(_listed(cell, v) for v in values)


def _op_holds(cell, op):
    """ops cells: empty or "*" any case; else the case must reduce with a listed op."""
    if cell in ("", "*"):
        return True
    return bool(op) and _listed(cell, _OP.get(op, op))


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
    for this case (rows with an `other` condition are matched to no case), in file order.
    `collective` is a case family of api_map.CALLS (api_map.UnmappedCall where it is none): the
    rows name the C++ collective-table rows its torch call reaches."""
    rows_reached = api_map.nccl_rows(collective)
    ids = []
    for r in rows("nccl_defects.csv"):
        if r["other"] or not _in_range(nccl, r["first"], r["fixed"]):
            continue
        if not _nranks_hold(r["nranks"], nranks) or not _any_listed(r["collectives"], rows_reached):
            continue
        if not _listed(r["dtypes"], dtype) or not _op_holds(r["ops"], op):
            continue
        placement = r["placement"]
        if placement not in ("", "*") and placement != ("in_place" if in_place else "out_of_place"):
            continue
        if r["id"] not in ids:
            ids.append(r["id"])
    return ids


def torch_known_defects(collective, dtype, op, in_place, nranks, torch, backend, strided=False):
    """The ids of torch_defects.csv rows whose range holds torch `torch` (a version tuple), whose
    backend is `backend` (nccl | gloo) and whose condition holds for this case, in file order.
    `collective` is a case family of api_map.CALLS (api_map.UnmappedCall where it is none)."""
    c10d = api_map.c10d_name(collective)
    ids = []
    for r in rows("torch_defects.csv"):
        if r["other"] or r["backend"] != backend or not _in_range(torch, r["first"], r["fixed"]):
            continue
        if not _nranks_hold(r["nranks"], nranks) or not _listed(r["collectives"], c10d):
            continue
        if not _listed(r["dtypes"], dtype) or not _op_holds(r["ops"], op):
            continue
        placement, layout = r["placement"], r["layout"]
        if placement not in ("", "*") and placement != ("in_place" if in_place else "out_of_place"):
            continue
        if layout not in ("", "*") and layout != ("strided" if strided else "contiguous"):
            continue
        if r["id"] not in ids:
            ids.append(r["id"])
    return ids


def explaining(nccl_ids, torch_ids, failure):
    """The ids among the case's known defects that explain its failure (the mismatch report
    `failure`): the NCCL rows of this table leave the output's tail unwritten, so a result wrong
    from its first element on is not theirs; a torch row explains any wrong result."""
    first = re.search(r"first at index (\d+)", failure)
    ids = list(nccl_ids) if first and int(first.group(1)) > 0 else []
    return ids + [i for i in torch_ids if first]


def ending_the_world(ids):
    """The ids among `ids` (either table) whose severity is crash or hang: a case that meets one
    would end its world and every case after it, so it is not run (as the libtorch suite skips
    a known hang)."""
    severe = {r["id"] for name in ("nccl_defects.csv", "torch_defects.csv") for r in rows(name)
              if r["severity"] in ("crash", "hang")}
    return [i for i in ids if i in severe]


def describe(ids):
    """"nccl-1950 (title, link; fixed in NCCL 2.29.7)" for each id of either table."""
    out = []
    for i in ids:
        for name, product in (("nccl_defects.csv", "NCCL"), ("torch_defects.csv", "torch")):
            r = next((x for x in rows(name) if x["id"] == i), None)
            if r:
                out.append("%s (%s, %s; %s)" % (i, r["title"], r["link"], "fixed in %s %s" % (product, r["fixed"])
                                                if r["fixed"] else "no fixed %s release yet" % product))
                break
    return "; ".join(out)
