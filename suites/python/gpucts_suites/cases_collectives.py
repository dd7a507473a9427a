"""torch.distributed collectives over the world's process group (ProcessGroupNCCL on GPUs, Gloo on
the CPU): every dtype of payloads.DTYPES, payloads exact by construction, counts that are not
multiples of the world size; each rank checks its own result. One table row per collective."""
import contextlib
import inspect
import itertools
import re
import warnings

from . import nccl_data
from .nccl_library import decode_nccl_version, mapped_libnccl, nccl_version_of
from .payloads import (DTYPES, FLOAT_OPS_CHECKED, FP8, PREMUL_FACTOR, dtype_entry, is_exact, mismatch, payload,
                       reduce_expected, split_sizes, torch_dtype, values)
from .runner import case, family

FLOAT_OPS = FLOAT_OPS_CHECKED
INT_OPS = ("sum", "min", "max")
REDUCE_COUNTS = (1, 1021, 1048575)
MOVE_COUNTS = (61, 65537)
# A coalesced all-reduce: one call over tensors of these counts (case names: "3tensors").
COALESCED_COUNTS = (1021, 1, 65537)
COALESCED = "%dtensors" % len(COALESCED_COUNTS)
# An all-to-all count: rank r sends UNEVEN_BASE + (r + 2*peer) % 3 elements to each peer.
UNEVEN = "uneven"
UNEVEN_BASE = 1021
# What a backend says when it refuses an argument before running anything (every rank alike).
_REFUSAL = re.compile(r"not supported|does not support|unsupported|not currently supported|cannot use|"
                      r"not implemented|no support|only supports|invalid scalar type|data type must be", re.I)
# Gloo's argument checks that no other backend makes: from torch 2.x its list-form all_to_all takes
# tensors of one size only ("invalid tensor size at index 1"), which NCCL runs unevenly.
_GLOO_REFUSAL = re.compile(r"invalid tensor size", re.I)


def _ops(dt):
    return FLOAT_OPS if dtype_entry(dt)[3] else INT_OPS


def _common_skip(ctx, dt, op=None):
    """The reason this (dtype, op) cannot run in this world, or None. The same on every rank."""
    import torch
    import torch.distributed as dist
    if torch_dtype(dt) is None:
        return "torch %s has no torch.%s" % (torch.__version__, dtype_entry(dt)[1])
    if ctx.backend == "gloo" and dt in FP8:
        return "Gloo has no fp8 types (ProcessGroupNCCL runs them on GPUs)"
    if op == "premul_sum" and not hasattr(dist, "_make_nccl_premul_sum"):
        return "torch %s has no premul_sum (dist._make_nccl_premul_sum)" % torch.__version__
    return None


def _torch_op(op):
    import torch.distributed as dist
    if op == "premul_sum":
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    return {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "min": dist.ReduceOp.MIN,
            "max": dist.ReduceOp.MAX}[op]


@contextlib.contextmanager
def _refusal(ctx, what, expected=None):
    """A backend that refuses the arguments up front costs this case a skip naming its words and
    release. An NCCL error is a skip only where nccl_ops.csv says this NCCL refuses the call
    (`expected`, its row); any other error fails the case."""
    try:
        yield
    except (RuntimeError, ValueError, TypeError) as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        refused = _REFUSAL.search(text) or (ctx.backend == "gloo" and _GLOO_REFUSAL.search(text))
        if refused and "NCCL error" not in text:
            ctx.skip("%s with torch %s refuses %s: %s" % (_pg_name(ctx), _torch_version(), what, text))
        if expected is not None and "NCCL error" in text:
            ctx.prop("gpucts.nccl_refused", text)
            ctx.skip("NCCL %s refuses %s on %d rank(s), as nccl_ops.csv predicts (%s/%s, %s): %s" % (
                _dotted(_loaded_nccl(ctx)), what, ctx.size, expected["dtype"], expected["op"],
                expected["evidence"], text))
        raise


_LOADED = {}


def _loaded_nccl(ctx):
    """The NCCL version ProcessGroupNCCL calls (its runtime report, else the first libnccl
    mapped), or None outside the NCCL worlds."""
    if not ctx.on_gpu:
        return None
    if "v" not in _LOADED:
        import torch.distributed as dist
        runtime = getattr(dist.ProcessGroupNCCL, "get_runtime_nccl_version", None)
        v = decode_nccl_version(runtime()) if callable(runtime) else None
        if v is None:
            paths = mapped_libnccl()
            v = nccl_version_of(paths[0]) if paths else None
        _LOADED["v"] = v
    return _LOADED["v"]


def _collective(ctx, collective, dt, op, in_place, what, call, check, device_sync=True):
    """Runs one collective case (`collective`: its family in api_map.CALLS) and checks it, with
    what the data predicts: a refusal (nccl_ops.csv) makes an NCCL error a skip and a run a
    failure; a known defect whose condition and range hold (nccl_defects.csv for the loaded NCCL,
    torch_defects.csv for this torch and process group) is named on the case (gpucts.known_defect
    when it fails the way the defect does, gpucts.known_defect_not_seen when it passes), as the
    C++ suites name it; one that crashes or hangs skips the case, naming it. `device_sync` False
    leaves the ordering to the call (work.wait()): a device-wide synchronize would hide a wait
    that does not order the result."""
    nccl = _loaded_nccl(ctx)
    expected = nccl_data.refusal(dt, op, ctx.size, nccl) if nccl and op else None
    defects = nccl_data.known_defects(collective, dt, op, in_place, ctx.size, nccl) if nccl else []
    torch_defects = nccl_data.torch_known_defects(collective, dt, op, in_place, ctx.size,
                                                  nccl_data.torch_release(_torch_version()), ctx.backend)
    severe = nccl_data.ending_the_world(defects + torch_defects)
    if severe:
        ctx.skip("not run: a known defect would end the world here: %s" % nccl_data.describe(severe))
    with _refusal(ctx, what, expected):
        call()
    if device_sync:
        _sync(ctx)
    try:
        check()
    except AssertionError as e:
        ids = nccl_data.explaining(defects, torch_defects, str(e))
        if ids:
            ctx.prop("gpucts.known_defect", ",".join(ids))
            raise AssertionError("%s\n  known %s defect: %s" % (
                e, "torch" if set(ids) <= set(torch_defects) else "NCCL", nccl_data.describe(ids)))
        if expected is not None:
            raise AssertionError("nccl_ops.csv says NCCL %s refuses %s on %d rank(s), but through torch it ran "
                                 "and computed it wrong: %s" % (_dotted(nccl), what, ctx.size, e))
        raise
    if expected is not None:
        # These suites judge what torch returns: a right result is a pass even where NCCL itself
        # would refuse (torch may not hand the call to NCCL at all). The C++ suites, which call
        # NCCL directly, are the ones that check nccl_ops.csv.
        ctx.prop("gpucts.nccl_refusal_not_seen", "nccl_ops.csv says NCCL %s refuses %s on %d rank(s); torch "
                 "ran it and the result is right" % (_dotted(nccl), what, ctx.size))
    if defects or torch_defects:
        ctx.prop("gpucts.known_defect_not_seen", ",".join(defects + torch_defects))


_reduction = _collective  # the name selfcheck.py drives it by


def _pg_name(ctx):
    return "ProcessGroupNCCL" if ctx.backend == "nccl" else "ProcessGroupGloo"


def _torch_version():
    import torch
    return torch.__version__


def _sync(ctx):
    if ctx.on_gpu:
        import torch
        torch.cuda.synchronize(ctx.device)


def _inject(ctx, result):
    """GPUCTS_INJECT: flip one element of this rank's result after the collective, before the check."""
    if not ctx.injects_here():
        return
    from .inject import flip_element
    k = ctx.inject.element(result.numel())
    if k is not None:
        flip_element(result, k)
        ctx.prop("gpucts.injected", "element %d on rank %d" % (k, ctx.rank))


def _check(ctx, what, got, expected, dt, op=None):
    import torch
    _inject(ctx, got)
    exact = op is None or is_exact(op, ctx.size)
    rtol = atol = 0.0
    if not exact:
        t = torch_dtype(dt)
        rtol = {torch.float16: 1e-3, torch.bfloat16: 1.6e-2, torch.float32: 1.3e-6}.get(t, 1e-7)
        atol = torch.finfo(t).eps * 64
    elif expected.is_floating_point() and expected.dtype == torch.float64 and torch_dtype(dt) != torch.float64:
        # avg and premul_sum are exact by construction: the expected value is representable in the dtype.
        expected = expected.to(torch_dtype(dt)).to(torch.float64)
    bad = mismatch(got, expected, exact, rtol, atol)
    if bad:
        raise AssertionError("%s: %s" % (what, bad))


# The prepare functions: prepare(ctx, dt, op, count, root, in_place) -> (call, result, expected,
# what). call(async_op) makes the torch call (returning its Work where async_op is True), result()
# is this rank's output to check (None where the call defines none here: a root's collective on
# another rank), expected its value in closed form, what the call in words.

def _all_reduce(ctx, dt, op, count, root, in_place):
    import torch.distributed as dist
    x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
    return (lambda a: dist.all_reduce(x, op=_torch_op(op), async_op=a), lambda: x,
            reduce_expected(dt, op, ctx.seed, ctx.size, count, ctx.device),
            "all_reduce %s of %s x%d (in place)" % (op, dt, count))


def _coalesced_tensors(ctx, dt, op):
    """One tensor per COALESCED_COUNTS, each a different stretch of the payload, and their
    expected values one after the other."""
    import torch
    offsets = [sum(COALESCED_COUNTS[:k]) for k in range(len(COALESCED_COUNTS))]
    tensors = [payload(dt, ctx.seed, ctx.rank, n, ctx.device, offset=o) for n, o in zip(COALESCED_COUNTS, offsets)]
    expected = torch.cat([reduce_expected(dt, op, ctx.seed, ctx.size, n, ctx.device, offset=o)
                          for n, o in zip(COALESCED_COUNTS, offsets)])
    return tensors, expected


def _all_reduce_coalesced(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    tensors, expected = _coalesced_tensors(ctx, dt, op)

    def call(a):
        with warnings.catch_warnings():  # its deprecation notice on every call (a User- or FutureWarning)
            warnings.simplefilter("ignore")
            return dist.all_reduce_coalesced(tensors, op=_torch_op(op), async_op=a)
    return (call, lambda: torch.cat(tensors), expected,
            "all_reduce_coalesced %s of %s over %s elements (in place)" % (op, dt, list(COALESCED_COUNTS)))


class _Works:
    """The Works of torch's first _coalescing_manager form, waited as one."""

    def __init__(self, works):
        self.works = works

    def wait(self):
        for w in self.works:
            w.wait()


def _coalescing_manager_all_reduce(ctx, dt, op, count, root, in_place):
    """all_reduce calls inside torch's _coalescing_manager. Its forms: (group, reqs) in 1.13,
    (group, device, reqs) in 2.0, each all_reduce async and its Work in reqs; (group, device,
    async_ops) from 2.1, which turns the all_reduces into one allreduce_coalesced."""
    import torch
    import torch.distributed as dist
    from torch.distributed import distributed_c10d
    manager = distributed_c10d._coalescing_manager
    params = inspect.signature(manager).parameters
    if "async_ops" not in params and "reqs" not in params:
        ctx.skip("torch %s's _coalescing_manager takes (%s), a form these cases do not know"
                 % (torch.__version__, ", ".join(params)))
    tensors, expected = _coalesced_tensors(ctx, dt, op)

    def call(a):
        if "async_ops" in params:
            with manager(async_ops=a) as cm:
                for t in tensors:
                    dist.all_reduce(t, op=_torch_op(op))
            return cm
        reqs = []
        with manager(None, reqs=reqs, **({"device": ctx.device} if "device" in params else {})):
            for t in tensors:
                reqs.append(dist.all_reduce(t, op=_torch_op(op), async_op=True))
        works = _Works(reqs)
        if not a:
            works.wait()
        return works
    return (call, lambda: torch.cat(tensors), expected,
            "all_reduce %s of %s over %s elements in one _coalescing_manager (in place)"
            % (op, dt, list(COALESCED_COUNTS)))


def _reduce(ctx, dt, op, count, root, in_place):
    import torch.distributed as dist
    x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
    return (lambda a: dist.reduce(x, dst=root, op=_torch_op(op), async_op=a),
            lambda: x if ctx.rank == root else None,
            reduce_expected(dt, op, ctx.seed, ctx.size, count, ctx.device),
            "reduce %s of %s x%d to rank %d (in place)" % (op, dt, count, root))


def _broadcast(ctx, dt, op, count, root, in_place):
    import torch.distributed as dist
    # Non-roots start from other values, so a broadcast that does nothing is seen.
    x = payload(dt, ctx.seed if ctx.rank == root else ctx.seed + 1, ctx.rank, count, ctx.device)
    return (lambda a: dist.broadcast(x, src=root, async_op=a), lambda: x, payload(dt, ctx.seed, root, count, ctx.device),
            "broadcast of %s x%d from rank %d" % (dt, count, root))


def _gathered(ctx, dt, count):
    """Every rank's payload of `count` elements, rank after rank."""
    import torch
    return torch.cat([values(dt, ctx.seed, r, torch.arange(count, device=ctx.device)) for r in range(ctx.size)])


def _placement(in_place):
    return "in place" if in_place else "out of place"


def _all_gather_into_tensor(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    out = torch.empty(count * ctx.size, dtype=torch_dtype(dt), device=ctx.device)
    mine = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
    if in_place:  # the input is this rank's block of the output, as NCCL's in-place AllGather
        x = out.narrow(0, ctx.rank * count, count)
        x.copy_(mine)
    else:
        x = mine
    return (lambda a: dist.all_gather_into_tensor(out, x, async_op=a), lambda: out, _gathered(ctx, dt, count),
            "all_gather_into_tensor of %s x%d per rank (%s)" % (dt, count, _placement(in_place)))


def _all_gather(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
    outs = [torch.empty_like(x) for _ in range(ctx.size)]
    return (lambda a: dist.all_gather(outs, x, async_op=a), lambda: torch.cat(outs), _gathered(ctx, dt, count),
            "all_gather (list) of %s x%d per rank" % (dt, count))


def _reduce_scatter_tensor(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    x = payload(dt, ctx.seed, ctx.rank, count * ctx.size, ctx.device)
    # In place: the output is this rank's block of the input, as NCCL's in-place ReduceScatter.
    out = x.narrow(0, ctx.rank * count, count) if in_place else torch.empty(count, dtype=x.dtype, device=ctx.device)
    return (lambda a: dist.reduce_scatter_tensor(out, x, op=_torch_op(op), async_op=a), lambda: out,
            reduce_expected(dt, op, ctx.seed, ctx.size, count, ctx.device, offset=ctx.rank * count),
            "reduce_scatter_tensor %s of %s x%d per rank (%s)" % (op, dt, count, _placement(in_place)))


def _reduce_scatter(ctx, dt, op, count, root, in_place):
    """The list form: another code path in a process group (Gloo took them in different releases)."""
    import torch
    import torch.distributed as dist
    x = payload(dt, ctx.seed, ctx.rank, count * ctx.size, ctx.device)
    out = torch.empty(count, dtype=x.dtype, device=ctx.device)
    return (lambda a: dist.reduce_scatter(out, list(x.chunk(ctx.size)), op=_torch_op(op), async_op=a), lambda: out,
            reduce_expected(dt, op, ctx.seed, ctx.size, count, ctx.device, offset=ctx.rank * count),
            "reduce_scatter (list) %s of %s x%d per rank" % (op, dt, count))


def _splits(count, world, rank):
    """What `rank` sends to each peer: `count` elements each, or UNEVEN's sizes."""
    return split_sizes(world, rank, UNEVEN_BASE) if count == UNEVEN else [count] * world


def _exchange(ctx, dt, count):
    """An all-to-all's input on this rank, its send and receive sizes per peer, and the expected
    output: from each rank r, r's block for this rank."""
    import torch
    w, me = ctx.size, ctx.rank
    send = _splits(count, w, me)
    recv = [_splits(count, w, r)[me] for r in range(w)]
    parts = []
    for r in range(w):
        start = sum(_splits(count, w, r)[:me])
        parts.append(values(dt, ctx.seed, r, torch.arange(start, start + recv[r], device=ctx.device)))
    return payload(dt, ctx.seed, me, sum(send), ctx.device), send, recv, torch.cat(parts)


def _exchange_words(dt, count, send, recv):
    if count == UNEVEN:
        return "of %s, uneven splits %s in, %s out" % (dt, send, recv)
    return "of %s x%d per peer" % (dt, count)


def _all_to_all_single(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    x, send, recv, expected = _exchange(ctx, dt, count)
    out = torch.empty(sum(recv), dtype=x.dtype, device=ctx.device)
    # Equal splits are passed as none: torch's equal-split path (ncclAlltoAll where torch has it).
    sizes = {"output_split_sizes": recv, "input_split_sizes": send} if count == UNEVEN else {}
    return (lambda a: dist.all_to_all_single(out, x, async_op=a, **sizes), lambda: out, expected,
            "all_to_all_single " + _exchange_words(dt, count, send, recv))


def _all_to_all(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    x, send, recv, expected = _exchange(ctx, dt, count)
    outs = [torch.empty(n, dtype=x.dtype, device=ctx.device) for n in recv]
    return (lambda a: dist.all_to_all(outs, list(x.split(send)), async_op=a), lambda: torch.cat(outs), expected,
            "all_to_all (lists) " + _exchange_words(dt, count, send, recv))


def _gather(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
    outs = [torch.empty_like(x) for _ in range(ctx.size)] if ctx.rank == root else None
    return (lambda a: dist.gather(x, outs, dst=root, async_op=a), lambda: torch.cat(outs) if outs else None,
            _gathered(ctx, dt, count), "gather of %s x%d per rank to rank %d" % (dt, count, root))


def _scatter(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    blocks = None
    if ctx.rank == root:
        blocks = list(payload(dt, ctx.seed, root, count * ctx.size, ctx.device).chunk(ctx.size))
    # Every rank starts from other values, so a scatter that does nothing is seen.
    out = payload(dt, ctx.seed + 1, ctx.rank, count, ctx.device)
    expected = values(dt, ctx.seed, root, torch.arange(ctx.rank * count, (ctx.rank + 1) * count, device=ctx.device))
    return (lambda a: dist.scatter(out, blocks, src=root, async_op=a), lambda: out, expected,
            "scatter of %s x%d per rank from rank %d" % (dt, count, root))


def _send_recv_ring(ctx, dt, op, count, root, in_place):
    import torch
    import torch.distributed as dist
    nxt, prv = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
    y = payload(dt, ctx.seed + 1, ctx.rank, count, ctx.device)

    def call(a):
        for q in dist.batch_isend_irecv([dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, y, prv)]):
            q.wait()
    return (call, lambda: y, values(dt, ctx.seed, prv, torch.arange(count, device=ctx.device)),
            "send/recv ring of %s x%d, received from rank %d" % (dt, count, prv))


class Row:
    """One torch.distributed call: its case family (api_map.CALLS, the case name's prefix), the
    torch.distributed attribute it needs, whether it reduces and has a root, its counts, the
    placements torch offers (False: out of place, True: in place), whether it has an async_op
    form, the fewest ranks it needs, and its prepare function."""

    def __init__(self, family, prepare, api=None, reduces=False, rooted=False, counts=MOVE_COUNTS,
                 placements=(False,), async_form=True, min_ranks=1):
        self.family, self.prepare, self.api = family, prepare, api or family
        self.reduces, self.rooted, self.counts, self.placements = reduces, rooted, counts, placements
        self.async_form, self.min_ranks = async_form, min_ranks


# One row per torch.distributed call; adding a call is adding a row.
ROWS = [
    Row("all_reduce", _all_reduce, reduces=True, counts=REDUCE_COUNTS, placements=(True,)),
    Row("all_reduce_coalesced", _all_reduce_coalesced, reduces=True, counts=(COALESCED,), placements=(True,)),
    Row("coalescing_manager_all_reduce", _coalescing_manager_all_reduce, api="distributed_c10d._coalescing_manager",
        reduces=True, counts=(COALESCED,), placements=(True,)),
    Row("reduce", _reduce, reduces=True, rooted=True, counts=REDUCE_COUNTS, placements=(True,)),
    Row("broadcast", _broadcast, rooted=True, placements=(True,)),
    Row("all_gather_into_tensor", _all_gather_into_tensor, placements=(False, True)),
    Row("all_gather", _all_gather),
    Row("reduce_scatter_tensor", _reduce_scatter_tensor, reduces=True, placements=(False, True)),
    Row("reduce_scatter", _reduce_scatter, reduces=True, counts=MOVE_COUNTS[:1]),
    Row("all_to_all_single", _all_to_all_single, counts=(UNEVEN, 1021)),
    Row("all_to_all", _all_to_all, counts=(UNEVEN, 1021)),
    Row("gather", _gather, rooted=True),
    Row("scatter", _scatter, rooted=True),
    Row("send_recv_ring", _send_recv_ring, api="batch_isend_irecv", counts=MOVE_COUNTS[:1], async_form=False,
        min_ranks=2),
]


def _missing(row):
    """Why this torch has no torch.distributed.<row.api>, or None."""
    import torch
    import torch.distributed as dist
    obj = dist
    for part in row.api.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return "torch %s has no torch.distributed.%s" % (torch.__version__, row.api)
    return None


def _body(row, dt, op, count, root, in_place, async_op):
    def body(ctx):
        why = _common_skip(ctx, dt, op) or _missing(row)
        if why:
            ctx.skip(why)
        if ctx.size < row.min_ranks:
            ctx.skip("%s needs %d ranks or more; this world has %d" % (row.family, row.min_ranks, ctx.size))
        call, result, expected, what = row.prepare(ctx, dt, op, count, root, in_place)
        if async_op:
            what += ", async_op=True then wait()"

        def run():
            work = call(async_op)
            if async_op:
                work.wait()

        def check():
            got = result()
            if got is not None:
                _check(ctx, what, got, expected, dt, op)
        _collective(ctx, row.family, dt, op, in_place, what, run, check, device_sync=not async_op)
    body.family = row.family  # what tests/py_api_map_test.py reads of a registered case
    return body


def _name(row, dt, op, count, root, in_place, async_op):
    parts = [row.family] + ([op] if op else []) + [dt, str(count)]
    if row.rooted:
        parts.append("root%d" % root)
    if in_place and len(row.placements) > 1:
        parts.append("inplace")
    if async_op:
        parts.append("async")
    return "_".join(parts)


@family("Collectives")
def collective_cases(world):
    """Every row at every dtype, op, count, root (0 and the last rank) and placement; then its
    async_op=True form at every dtype, the first op, the largest count, the last rank as root and
    the first placement."""
    dtypes = [row[0] for row in DTYPES]
    roots = sorted({0, world.size - 1})
    for row in ROWS:
        for dt in dtypes:
            for op, count, root, in_place in itertools.product(_ops(dt) if row.reduces else (None,), row.counts,
                                                               roots if row.rooted else (0,), row.placements):
                yield _name(row, dt, op, count, root, in_place, False), _body(row, dt, op, count, root, in_place,
                                                                               False)
        if not row.async_form:
            continue
        for dt in dtypes:
            args = (_ops(dt)[0] if row.reduces else None, row.counts[-1], roots[-1], row.placements[0], True)
            yield _name(row, dt, *args), _body(row, dt, *args)


@case("Collectives", "barrier")
def barrier(ctx):
    import torch.distributed as dist
    ctx.store.add("barrier/arrived", 1)
    kw = {"device_ids": [ctx.local_rank]} if ctx.on_gpu else {}
    dist.barrier(**kw)
    # Every rank counted itself before entering the barrier: after it, the count is the world.
    arrived = ctx.store.add("barrier/arrived", 0)
    if arrived != ctx.size:
        raise AssertionError("barrier returned when %d of %d rank(s) had reached it" % (arrived, ctx.size))


def _dotted(v):
    return ".".join(map(str, v))


@case("Collectives", "nccl_version_loaded")
def nccl_version_loaded(ctx):
    import torch
    import torch.distributed as dist
    if not ctx.on_gpu:
        ctx.skip("the NCCL torch loaded is read in the NCCL worlds; this world runs over %s" % ctx.backend)
    paths = mapped_libnccl()
    loaded = [nccl_version_of(p) for p in paths]
    built = decode_nccl_version(torch.cuda.nccl.version())
    runtime = getattr(dist.ProcessGroupNCCL, "get_runtime_nccl_version", None)
    reported = decode_nccl_version(runtime()) if callable(runtime) else None
    if loaded:
        ctx.prop("gpucts.nccl_loaded", _dotted(loaded[0]))
        ctx.prop("gpucts.nccl_loaded_path", paths[0])
    ctx.prop("gpucts.nccl_built", _dotted(built))
    if reported:
        ctx.prop("gpucts.nccl_runtime_reported", _dotted(reported))
    # Every rank takes part in the comparison before any rank may fail on its own findings.
    code = torch.tensor(list(loaded[0]) if loaded else [0, 0, 0], dtype=torch.int64, device=ctx.device)
    ctx.same_on_every_rank(code, "the loaded NCCL version")
    if not paths:
        raise AssertionError("ProcessGroupNCCL is in use but no libnccl is mapped (/proc/self/maps): "
                             "torch %s links NCCL statically?" % torch.__version__)
    if len(set(loaded)) > 1:
        raise AssertionError("more than one NCCL mapped into this process: %s" % ", ".join(
            "%s (%s)" % (p, _dotted(v)) for p, v in zip(paths, loaded)))
    if reported and reported != loaded[0]:
        raise AssertionError("ProcessGroupNCCL reports NCCL %s but %s (%s) is mapped"
                             % (_dotted(reported), paths[0], _dotted(loaded[0])))
