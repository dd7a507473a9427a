"""DistributedDataParallel as PyTorch's own tests check it: after every step the weights are
identical on every rank and equal to one process stepping over the whole global batch within
the dtype's torch.testing tolerance; bf16 autocast; fp16 with GradScaler where an inf on one rank
makes every rank skip that step; gradient_as_bucket_view and static_graph equal to plain DDP
within the fp32 tolerance; no_sync accumulation. Every rank runs every collective of a case before any rank reports a
difference, so one rank's finding never leaves the others waiting."""
import copy

from .payloads import mismatch
from .runner import case

IN, HIDDEN, OUT = 8, 32, 4
LOCAL_BATCH = 4
STEPS = 5
LR = 0.05
INF_STEP = 2  # the fp16 case puts an inf into the last rank's shard at this step
# torch.testing's defaults (rtol, atol) per dtype, as PyTorch's own assertEqual uses them.
TOLERANCE = {"fp32": (1.3e-6, 1e-5), "bf16": (1.6e-2, 1e-5), "fp16": (1e-3, 1e-5)}


def model(ctx, seed=1):
    import torch
    torch.manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT))
    return m.to(ctx.device)


def global_batches(ctx, steps, seed=7):
    """The same global batches on every rank (generated on the CPU, moved to the device)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    n = ctx.size * LOCAL_BATCH
    out = []
    for _ in range(steps):
        x = torch.randn(n, IN, generator=g)
        y = torch.randn(n, OUT, generator=g)
        out.append((x.to(ctx.device), y.to(ctx.device)))
    return out


def shard(ctx, t):
    return t[ctx.rank * LOCAL_BATCH:(ctx.rank + 1) * LOCAL_BATCH]


def flat(m):
    import torch
    return torch.cat([p.detach().reshape(-1).float() for p in m.parameters()])


def _inject_hook(ctx):
    """A communication hook that all-reduces as DDP does and, on the rank GPUCTS_INJECT selects,
    then flips one element of the first bucket once: that rank's weights go wrong."""
    import torch.distributed as dist
    from .inject import flip_element
    state = {"done": False}

    def hook(_, bucket):
        buf = bucket.buffer()
        buf.div_(ctx.size)
        fut = dist.all_reduce(buf, async_op=True).get_future()

        def then(f):
            t = f.value()[0]
            if ctx.injects_here() and not state["done"] and bucket.index() == 0:
                k = ctx.inject.element(t.numel())
                if k is not None:
                    flip_element(t, k)
                    ctx.prop("gpucts.injected", "gradient bucket element %d on rank %d" % (k, ctx.rank))
                    state["done"] = True
            return t
        return fut.then(then)
    return hook


def ddp(ctx, m, **kw):
    from torch.nn.parallel import DistributedDataParallel
    d = DistributedDataParallel(m, device_ids=[ctx.local_rank] if ctx.on_gpu else None, **kw)
    if ctx.inject.regex is not None and ctx.inject.regex.search(ctx.case.suite + "." + ctx.case.name):
        d.register_comm_hook(None, _inject_hook(ctx))
    return d


def compare(ctx, got, ref, dtype, what, failures):
    """Records (does not raise) where `got` and `ref` differ beyond the dtype's tolerance."""
    import torch
    rtol, atol = TOLERANCE[dtype]
    for (name, p), q in zip(got.named_parameters(), ref.parameters()):
        try:
            torch.testing.assert_close(p.detach(), q.detach(), rtol=rtol, atol=atol)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            failures.append("%s: parameter %s differs beyond %s tolerance (rtol %g, atol %g): %s"
                            % (what, name, dtype, rtol, atol, "; ".join(lines[:3])))
            return


def finish(ctx, failures, diffs):
    if diffs:
        ctx.prop("gpucts.max_abs_diff_vs_reference", "%.3g" % max(diffs))
    if failures:
        raise AssertionError(failures[0] + (" (and %d more)" % (len(failures) - 1) if len(failures) > 1 else ""))


def autocast(ctx, dtype):
    import torch
    return torch.autocast(device_type=ctx.device.type, dtype=dtype)


def _parity(ctx, dtype_name, steps=STEPS, **ddp_kw):
    """DDP against one process over the whole batch, SGD, after every step."""
    import contextlib
    import torch
    amp = {"fp32": None, "bf16": torch.bfloat16}[dtype_name]
    base = model(ctx)
    ref = copy.deepcopy(base)
    start = flat(base).clone()
    net = ddp(ctx, base, **ddp_kw)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=LR)
    failures, diffs = [], []
    for step, (x, y) in enumerate(global_batches(ctx, steps)):
        ctx_amp = autocast(ctx, amp) if amp else contextlib.nullcontext()
        with ctx_amp:
            loss = torch.nn.functional.mse_loss(net(shard(ctx, x)).float(), shard(ctx, y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with (autocast(ctx, amp) if amp else contextlib.nullcontext()):
            ref_loss = torch.nn.functional.mse_loss(ref(x).float(), y)
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_opt.step()
        weights, ref_weights = flat(net.module), flat(ref)
        ctx.same_on_every_rank(weights, "weights after step %d" % (step + 1))
        diffs.append(float((weights - ref_weights).abs().max()))
        what = "step %d against one process over the whole batch" % (step + 1)
        if amp is None:
            compare(ctx, net.module, ref, dtype_name, what, failures)
        else:
            compare_updates(ctx, weights - start, ref_weights - start, dtype_name, step + 1, what, failures)
    finish(ctx, failures, diffs)


def updates_beyond_bound(update, ref_update, dtype, steps):
    """(bound, mismatch report or None) of two runs' weight updates since the same start, within
    `steps` times the dtype's rtol of the largest reference update, plus its atol. Runs of the same
    numerics may round differently (kernel choice, bucket layout, gradients summed in other
    groupings, each rounded to the dtype), so an element's error follows the largest update and the
    partial sums, not its own size: a per-element rtol on the weights fails near-zero weights on
    rounding alone."""
    rtol, atol = TOLERANCE[dtype]
    bound = steps * rtol * float(ref_update.abs().max()) + atol
    return bound, mismatch(update, ref_update, exact=False, rtol=0.0, atol=bound)


def compare_updates(ctx, update, ref_update, dtype, steps, what, failures):
    """Autocast runs compared by their updates (updates_beyond_bound)."""
    bound, bad = updates_beyond_bound(update, ref_update, dtype, steps)
    if bad:
        failures.append("%s: weight updates differ beyond %s's %d-step bound %.3g: %s" % (what, dtype, steps, bound, bad))


@case("DDP", "fp32_parity_w{w}")
def fp32_parity(ctx):
    _parity(ctx, "fp32")


@case("DDP", "bf16_autocast_w{w}")
def bf16_autocast(ctx):
    import torch
    if ctx.on_gpu and not torch.cuda.is_bf16_supported():
        ctx.skip("this GPU has no bf16")
    _parity(ctx, "bf16")


@case("DDP", "bucket_view_static_graph_w{w}")
def bucket_view_static_graph(ctx):
    """gradient_as_bucket_view=True and static_graph=True give the weights of plain DDP within the
    fp32 tolerance. Not bit for bit: both options change how gradients are laid out in and
    reduced from the buckets (views into the bucket, buckets fixed after the first step), and
    DDP promises no bitwise equality between two bucket layouts."""
    import inspect
    import torch
    from torch.nn.parallel import DistributedDataParallel
    if "static_graph" not in inspect.signature(DistributedDataParallel).parameters:
        ctx.skip("torch %s's DistributedDataParallel has no static_graph argument" % torch.__version__)
    plain = ddp(ctx, model(ctx))
    tuned = ddp(ctx, model(ctx), gradient_as_bucket_view=True, static_graph=True)
    opts = [torch.optim.SGD(m.parameters(), lr=LR) for m in (plain, tuned)]
    failures = []
    for step, (x, y) in enumerate(global_batches(ctx, STEPS)):
        for m, opt in zip((plain, tuned), opts):
            loss = torch.nn.functional.mse_loss(m(shard(ctx, x)), shard(ctx, y))
            opt.zero_grad()
            loss.backward()
            opt.step()
        ctx.same_on_every_rank(flat(tuned.module), "bucket-view/static-graph weights after step %d" % (step + 1))
        a, b = flat(plain.module), flat(tuned.module)
        rtol, atol = TOLERANCE["fp32"]
        bad = mismatch(b, a, exact=False, rtol=rtol, atol=atol)
        if bad and not failures:
            failures.append("step %d: gradient_as_bucket_view+static_graph weights differ from plain DDP beyond "
                            "fp32 tolerance: %s" % (step + 1, bad))
    ctx.prop("gpucts.max_abs_diff_vs_reference", "%.3g" % float((a - b).abs().max()))
    finish(ctx, failures, [])


@case("DDP", "no_sync_accumulation_w{w}")
def no_sync_accumulation(ctx):
    """Two micro-batches per step, the first under no_sync(): equal to one process accumulating both."""
    import torch
    base = model(ctx)
    ref = copy.deepcopy(base)
    net = ddp(ctx, base)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=LR)
    batches = global_batches(ctx, 2 * STEPS, seed=11)
    failures, diffs = [], []
    for step in range(STEPS):
        opt.zero_grad()
        ref_opt.zero_grad()
        for micro in range(2):
            x, y = batches[2 * step + micro]
            if micro == 0:
                with net.no_sync():
                    (torch.nn.functional.mse_loss(net(shard(ctx, x)), shard(ctx, y)) / 2).backward()
            else:
                (torch.nn.functional.mse_loss(net(shard(ctx, x)), shard(ctx, y)) / 2).backward()
            (torch.nn.functional.mse_loss(ref(x), y) / 2).backward()
        opt.step()
        ref_opt.step()
        ctx.same_on_every_rank(flat(net.module), "weights after accumulated step %d" % (step + 1))
        diffs.append(float((flat(net.module) - flat(ref)).abs().max()))
        compare(ctx, net.module, ref, "fp32", "accumulated step %d against one process" % (step + 1), failures)
    finish(ctx, failures, diffs)


def grad_scaler(ctx):
    """A GradScaler for this device, or None with the reason (CPU scalers from torch 2.3)."""
    import torch
    kw = dict(init_scale=1024.0, growth_interval=1000)  # no growth within the case: one backoff is seen
    amp = getattr(torch, "amp", None)
    if amp is not None and hasattr(amp, "GradScaler"):
        try:
            return amp.GradScaler(ctx.device.type, **kw), ""
        except TypeError:
            pass
    if ctx.on_gpu:
        return torch.cuda.amp.GradScaler(**kw), ""
    return None, "torch %s has a GradScaler for CUDA only (torch.amp.GradScaler('cpu') from torch 2.3)" % (
        torch.__version__)


@case("DDP", "fp16_grad_scaler_inf_w{w}")
def fp16_grad_scaler_inf(ctx):
    """fp16 autocast with GradScaler (fp32 on the CPU, where only the scaler logic is checked): an inf
    in the last rank's shard at one step reaches every rank through the all-reduce, every rank skips
    that step and backs the scale off alike, and the weights stay equal to one process that saw
    the same inf."""
    import contextlib
    import torch
    scaler, why = grad_scaler(ctx)
    if scaler is None:
        ctx.skip(why)
    ref_scaler, _ = grad_scaler(ctx)
    ctx.prop("gpucts.precision", "fp16 autocast" if ctx.on_gpu else "fp32 (CPU: the scaler logic only)")
    base = model(ctx)
    ref = copy.deepcopy(base)
    net = ddp(ctx, base)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=LR)
    failures, diffs = [], []
    for step, (x, y) in enumerate(global_batches(ctx, STEPS, seed=13)):
        if step == INF_STEP:
            x = x.clone()
            x[(ctx.size - 1) * LOCAL_BATCH, 0] = float("inf")
        before, ref_before = flat(net.module), flat(ref)
        scale_before = scaler.get_scale()
        with (autocast(ctx, torch.float16) if ctx.on_gpu else contextlib.nullcontext()):
            loss = torch.nn.functional.mse_loss(net(shard(ctx, x)).float(), shard(ctx, y))
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        with (autocast(ctx, torch.float16) if ctx.on_gpu else contextlib.nullcontext()):
            ref_loss = torch.nn.functional.mse_loss(ref(x).float(), y)
        ref_opt.zero_grad()
        ref_scaler.scale(ref_loss).backward()
        ref_scaler.step(ref_opt)
        ref_scaler.update()
        scale = torch.tensor([scaler.get_scale()], dtype=torch.float64, device=ctx.device)
        ctx.same_on_every_rank(scale, "the loss scale after step %d" % (step + 1))
        ctx.same_on_every_rank(flat(net.module), "weights after step %d" % (step + 1))
        skipped = torch.equal(before, flat(net.module))
        if step == INF_STEP:
            if not skipped:
                failures.append("step %d had an inf on rank %d but rank %d stepped" % (step + 1, ctx.size - 1, ctx.rank))
            if scaler.get_scale() != scale_before * 0.5:
                failures.append("step %d: scale %g after the inf, expected %g (backoff 0.5)"
                                % (step + 1, scaler.get_scale(), scale_before * 0.5))
            if not torch.equal(ref_before, flat(ref)):
                failures.append("step %d: the one-process reference stepped over an inf" % (step + 1))
        elif skipped:
            failures.append("step %d: rank %d skipped a step without an inf (scale %g)"
                            % (step + 1, ctx.rank, scale_before))
        diffs.append(float((flat(net.module) - flat(ref)).abs().max()))
        compare(ctx, net.module, ref, "fp16" if ctx.on_gpu else "fp32",
                "step %d against one process with its own scaler" % (step + 1), failures)
    finish(ctx, failures, diffs)
