"""torch.distributed collectives over the world's process group (ProcessGroupNCCL on GPUs, Gloo on
the CPU): every dtype of payloads.DTYPES, payloads exact by construction, counts that are not
multiples of the world size; each rank checks its own result. One table row per collective."""
import contextlib
import re

from . import nccl_data
from .nccl_library import decode_nccl_version, mapped_libnccl, nccl_version_of
from .payloads import (DTYPES, FLOAT_OPS_CHECKED, FP8, PREMUL_FACTOR, dtype_entry, is_exact, mismatch, payload,
                       reduce_expected, split_sizes, torch_dtype, values)
from .runner import case, family

FLOAT_OPS = FLOAT_OPS_CHECKED
INT_OPS = ("sum", "min", "max")
REDUCE_COUNTS = (1, 1021, 1048575)
MOVE_COUNTS = (61, 65537)
# What a backend says when it refuses an argument before running anything (every rank alike).
_REFUSAL = re.compile(r"not supported|does not support|unsupported|not currently supported|cannot use|"
                      r"not implemented|no support|invalid scalar type|data type must be", re.I)


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
        if _REFUSAL.search(text) and "NCCL error" not in text:
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


def _reduction(ctx, collective, dt, op, in_place, what, call, check):
    """Runs one reducing collective and checks it, with what the data predicts: a refusal
    (nccl_ops.csv) makes an NCCL error a skip and a run a failure; a known defect whose condition
    and range hold (nccl_defects.csv for the loaded NCCL, torch_defects.csv for this torch and
    process group) is named on the case (gpucts.known_defect when it fails the way the defect
    does, gpucts.known_defect_not_seen when it passes), as the C++ suites name it."""
    nccl = _loaded_nccl(ctx)
    expected = nccl_data.refusal(dt, op, ctx.size, nccl) if nccl else None
    with _refusal(ctx, what, expected):
        call()
    _sync(ctx)
    defects = nccl_data.known_defects(collective, dt, op, in_place, ctx.size, nccl) if nccl else []
    torch_defects = nccl_data.torch_known_defects(collective, dt, op, in_place, ctx.size,
                                                  nccl_data.torch_release(_torch_version()), ctx.backend)
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


def _all_reduce(dt, op, count):
    def body(ctx):
        import torch.distributed as dist
        why = _common_skip(ctx, dt, op)
        if why:
            ctx.skip(why)
        x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
        expected = reduce_expected(dt, op, ctx.seed, ctx.size, count, ctx.device)
        _reduction(ctx, "all_reduce", dt, op, True, "all_reduce %s of %s" % (op, dt),
                   lambda: dist.all_reduce(x, op=_torch_op(op)),
                   lambda: _check(ctx, "all_reduce %s of %s x%d (in place)" % (op, dt, count), x, expected, dt, op))
    return body


def _all_gather(dt, count):
    def body(ctx):
        import torch
        import torch.distributed as dist
        why = _common_skip(ctx, dt)
        if why:
            ctx.skip(why)
        if not hasattr(dist, "all_gather_into_tensor"):
            ctx.skip("torch %s has no all_gather_into_tensor" % torch.__version__)
        x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
        out = torch.empty(count * ctx.size, dtype=x.dtype, device=ctx.device)
        with _refusal(ctx, "all_gather_into_tensor of %s" % dt):
            dist.all_gather_into_tensor(out, x)
        _sync(ctx)
        expected = torch.cat([values(dt, ctx.seed, r, torch.arange(count, device=ctx.device))
                              for r in range(ctx.size)])
        _check(ctx, "all_gather_into_tensor of %s x%d per rank" % (dt, count), out, expected, dt)
    return body


def _reduce_scatter(dt, op, count, api="reduce_scatter_tensor"):
    """reduce_scatter_tensor (one input tensor of every rank's chunk), or reduce_scatter (a list of
    chunks): two code paths in a process group (Gloo took them in different releases)."""
    def body(ctx):
        import torch
        import torch.distributed as dist
        why = _common_skip(ctx, dt, op)
        if why:
            ctx.skip(why)
        if not hasattr(dist, api):
            ctx.skip("torch %s has no %s" % (torch.__version__, api))
        x = payload(dt, ctx.seed, ctx.rank, count * ctx.size, ctx.device)
        out = torch.empty(count, dtype=x.dtype, device=ctx.device)
        expected = reduce_expected(dt, op, ctx.seed, ctx.size, count, ctx.device, offset=ctx.rank * count)
        if api == "reduce_scatter":
            call = lambda: dist.reduce_scatter(out, list(x.chunk(ctx.size)), op=_torch_op(op))  # noqa: E731
        else:
            call = lambda: dist.reduce_scatter_tensor(out, x, op=_torch_op(op))  # noqa: E731
        _reduction(ctx, api, dt, op, False, "%s %s of %s" % (api, op, dt), call,
                   lambda: _check(ctx, "%s %s of %s x%d per rank" % (api, op, dt, count), out, expected, dt, op))
    return body


def _broadcast(dt, count, root):
    def body(ctx):
        import torch.distributed as dist
        why = _common_skip(ctx, dt)
        if why:
            ctx.skip(why)
        # Non-roots start from other values, so a broadcast that does nothing is seen.
        x = payload(dt, ctx.seed if ctx.rank == root else ctx.seed + 1, ctx.rank, count, ctx.device)
        with _refusal(ctx, "broadcast of %s" % dt):
            dist.broadcast(x, src=root)
        _sync(ctx)
        expected = payload(dt, ctx.seed, root, count, ctx.device)
        _check(ctx, "broadcast of %s x%d from rank %d" % (dt, count, root), x, expected, dt)
    return body


def _all_to_all(dt, base):
    def body(ctx):
        import torch
        import torch.distributed as dist
        why = _common_skip(ctx, dt)
        if why:
            ctx.skip(why)
        w, me = ctx.size, ctx.rank
        send_splits = split_sizes(w, me, base)
        recv_splits = [split_sizes(w, r, base)[me] for r in range(w)]
        x = payload(dt, ctx.seed, me, sum(send_splits), ctx.device)
        out = torch.empty(sum(recv_splits), dtype=x.dtype, device=ctx.device)
        with _refusal(ctx, "all_to_all_single of %s" % dt):
            dist.all_to_all_single(out, x, output_split_sizes=recv_splits, input_split_sizes=send_splits)
        _sync(ctx)
        parts = []
        for r in range(w):
            start = sum(split_sizes(w, r, base)[:me])
            parts.append(values(dt, ctx.seed, r, torch.arange(start, start + recv_splits[r], device=ctx.device)))
        _check(ctx, "all_to_all_single of %s, uneven splits %s in, %s out" % (dt, send_splits, recv_splits),
               out, torch.cat(parts), dt)
    return body


def _send_recv(dt, count):
    def body(ctx):
        import torch
        import torch.distributed as dist
        why = _common_skip(ctx, dt)
        if why:
            ctx.skip(why)
        if ctx.size < 2:
            ctx.skip("send/recv pairs need 2 ranks or more; this world has 1")
        nxt, prv = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
        x = payload(dt, ctx.seed, ctx.rank, count, ctx.device)
        y = payload(dt, ctx.seed + 1, ctx.rank, count, ctx.device)
        with _refusal(ctx, "send/recv of %s" % dt):
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x, nxt), dist.P2POp(dist.irecv, y, prv)])
            for q in reqs:
                q.wait()
        _sync(ctx)
        _check(ctx, "recv of %s x%d from rank %d" % (dt, count, prv), y,
               values(dt, ctx.seed, prv, torch.arange(count, device=ctx.device)), dt)
    return body


@family("Collectives")
def collective_cases(world):
    names = [row[0] for row in DTYPES]
    for dt in names:
        for op in _ops(dt):
            for n in REDUCE_COUNTS:
                yield "all_reduce_%s_%s_%d" % (op, dt, n), _all_reduce(dt, op, n)
    for dt in names:
        for n in MOVE_COUNTS:
            yield "all_gather_into_tensor_%s_%d" % (dt, n), _all_gather(dt, n)
    for dt in names:
        for op in _ops(dt):
            for n in MOVE_COUNTS:
                yield "reduce_scatter_tensor_%s_%s_%d" % (op, dt, n), _reduce_scatter(dt, op, n)
    for dt in names:
        for op in _ops(dt):
            yield "reduce_scatter_%s_%s_%d" % (op, dt, MOVE_COUNTS[0]), _reduce_scatter(dt, op, MOVE_COUNTS[0],
                                                                                       "reduce_scatter")
    for dt in names:
        for n in MOVE_COUNTS:
            for root in sorted({0, world.size - 1}):
                yield "broadcast_%s_%d_root%d" % (dt, n, root), _broadcast(dt, n, root)
    for dt in names:
        yield "all_to_all_single_%s_uneven" % dt, _all_to_all(dt, 1021)
    for dt in names:
        yield "send_recv_ring_%s_%d" % (dt, MOVE_COUNTS[0]), _send_recv(dt, MOVE_COUNTS[0])


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
