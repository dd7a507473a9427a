"""Lightning where it is installed: the seed guides' Trainer (DDPStrategy with
gradient_as_bucket_view and static_graph, 16-mixed and bf16-mixed, num_nodes = the simulated
hosts) against raw torch DDP with the same numerics in the same world, as Lightning's own parity
tests compare; the cluster environment the launcher implies; Fabric's collectives."""
import copy
import os
import tempfile

from .cases_ddp import LOCAL_BATCH, LR, IN, OUT, TOLERANCE, flat, model, updates_beyond_bound
from .payloads import payload, reduce_expected, mismatch, values
from .runner import case, family

STEPS = 4


def lightning():
    """(lightning.pytorch, lightning.fabric, DDPStrategy, version) or None."""
    try:
        import lightning
        from lightning import fabric, pytorch
        from lightning.pytorch.strategies import DDPStrategy
        return pytorch, fabric, DDPStrategy, lightning.__version__
    except ImportError:
        pass
    try:
        import lightning_fabric as fabric
        import pytorch_lightning as pytorch
        from pytorch_lightning.strategies import DDPStrategy
        return pytorch, fabric, DDPStrategy, pytorch.__version__
    except ImportError:
        return None


def _need_lightning(ctx):
    got = lightning()
    if got is None:
        ctx.skip("Lightning is not installed for this interpreter (neither lightning nor pytorch_lightning)")
    ctx.prop("gpucts.lightning", got[3])
    return got


def expected_environment(ctx):
    return {"torchrun": "TorchElasticEnvironment", "srun": "SLURMEnvironment"}.get(
        ctx.world.launcher, "LightningEnvironment")


def _devices(ctx):
    """(devices, num_nodes) as the launcher laid the world out: torchrun's LOCAL_WORLD_SIZE processes
    per node where it says so (several ranks of one host), else one process per GPU on one node, or
    each simulated host a node."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE") or 0)
    if local > 0:
        return local, max(1, ctx.size // local)
    return (ctx.size, 1) if ctx.world.kind == "gpus" else (1, ctx.size)


def _dataset(ctx):
    import torch
    g = torch.Generator().manual_seed(5)
    n = STEPS * ctx.size * LOCAL_BATCH  # a multiple of the world: DistributedSampler pads nothing
    return torch.utils.data.TensorDataset(torch.randn(n, IN, generator=g), torch.randn(n, OUT, generator=g))


def _no_injected_sampler(pl):
    """The Trainer option that keeps the DataLoader's own sampler (renamed in Lightning 2.0)."""
    import inspect
    params = inspect.signature(pl.Trainer.__init__).parameters
    return {"use_distributed_sampler": False} if "use_distributed_sampler" in params else {"replace_sampler_ddp": False}


def _trainer_case(precision):
    def body(ctx):
        import torch
        pl, _, DDPStrategy, _ = _need_lightning(ctx)
        if precision == "16-mixed" and not ctx.on_gpu:
            ctx.skip("16-mixed is autocast fp16 with a CUDA GradScaler: GPU worlds only")
        if precision == "bf16-mixed" and ctx.on_gpu and not torch.cuda.is_bf16_supported():
            ctx.skip("this GPU has no bf16")
        base = model(ctx)
        reference_start = copy.deepcopy(base)
        start = flat(base).to(ctx.device)

        class Module(pl.LightningModule):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def training_step(self, batch, _):
                x, y = batch
                return torch.nn.functional.mse_loss(self.net(x).float(), y)

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=LR)

        data = _dataset(ctx)
        devices, nodes = _devices(ctx)
        with tempfile.TemporaryDirectory(prefix="gpucts_pl_") as root:
            trainer = pl.Trainer(
                accelerator="gpu" if ctx.on_gpu else "cpu", devices=devices, num_nodes=nodes,
                strategy=DDPStrategy(gradient_as_bucket_view=True, static_graph=True,
                                     process_group_backend=ctx.backend),
                precision=precision, max_steps=STEPS, logger=False, enable_checkpointing=False,
                enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                default_root_dir=root, **_no_injected_sampler(pl))
            environment = type(trainer.strategy.cluster_environment).__name__
            module = Module(base)
            # Our own sampler, in order: the one Lightning injects shuffles training data (its
            # documented default), and the reference must see the same batches in the same order.
            sampler = torch.utils.data.DistributedSampler(data, num_replicas=ctx.size, rank=ctx.rank, shuffle=False)
            trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=LOCAL_BATCH, sampler=sampler))
        ctx.prop("gpucts.cluster_environment", environment)
        failures = []
        if environment != expected_environment(ctx):
            failures.append("cluster environment %s, expected %s for launcher %s"
                            % (environment, expected_environment(ctx), ctx.world.launcher))
        for what, got, want in (("world_size", trainer.world_size, ctx.size),
                                ("global_rank", trainer.global_rank, ctx.rank),
                                ("global_step", trainer.global_step, STEPS)):
            if got != want:
                failures.append("trainer.%s is %s, expected %s" % (what, got, want))
        weights = flat(module.net).to(ctx.device)
        ctx.same_on_every_rank(weights, "Lightning's weights after %d steps" % STEPS)
        # The reference: raw torch DDP with the same options and numerics over the same shards
        # (DistributedSampler without shuffle: rank r takes samples r, r + world, ...).
        ref_weights = _torch_ddp_reference(ctx, reference_start, data, precision)
        ctx.same_on_every_rank(ref_weights, "the torch DDP reference's weights")
        # Both runs start from the same weights, so they can differ only in their updates: each of
        # the STEPS updates is lr * a gradient from autocast matmuls rounded to the dtype.
        dtype = "bf16" if precision == "bf16-mixed" else "fp16"
        rtol, atol = TOLERANCE[dtype]
        bound, bad = updates_beyond_bound(weights - start, ref_weights - start, dtype, STEPS)
        ctx.prop("gpucts.max_abs_diff_vs_torch_ddp", "%.3g" % float((weights - ref_weights).abs().max()))
        ctx.prop("gpucts.tolerance_vs_torch_ddp", "%.3g" % bound)
        if bad:
            failures.append("weight updates differ from torch DDP beyond %s's %d-step bound %.3g (%d x rtol %g x "
                            "the largest update + atol %g): %s" % (precision, STEPS, bound, STEPS, rtol, atol, bad))
        if failures:
            raise AssertionError("; ".join(failures))
    return body


def _torch_ddp_reference(ctx, start, data, precision):
    """Raw torch DDP trained as Lightning's MixedPrecision plugin trains: autocast around the
    forward and the loss (Lightning's forward_context wraps training_step, which returns the
    loss), backward outside it; 16-mixed with a default GradScaler for CUDA, the gradients
    unscaled, then scaler.step and scaler.update (Lightning unscales before its step, scaler.step
    does it otherwise: the same arithmetic); gradients zeroed before each backward."""
    import torch
    from torch.nn.parallel import DistributedDataParallel
    net = DistributedDataParallel(start.to(ctx.device), device_ids=[ctx.local_rank] if ctx.on_gpu else None,
                                  gradient_as_bucket_view=True, static_graph=True)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    dtype = torch.float16 if precision == "16-mixed" else torch.bfloat16
    scaler = None
    if precision == "16-mixed":
        amp = getattr(torch, "amp", None)
        scaler = amp.GradScaler("cuda") if amp is not None and hasattr(amp, "GradScaler") else torch.cuda.amp.GradScaler()
    idx = list(range(ctx.rank, len(data), ctx.size))
    for step in range(STEPS):
        batch = idx[step * LOCAL_BATCH:(step + 1) * LOCAL_BATCH]
        x = data.tensors[0][batch].to(ctx.device)
        y = data.tensors[1][batch].to(ctx.device)
        opt.zero_grad()
        with torch.autocast(device_type=ctx.device.type, dtype=dtype):
            loss = torch.nn.functional.mse_loss(net(x).float(), y)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    return flat(net.module).to(ctx.device)


@family("Lightning")
def trainer_cases(world):
    for precision in ("16-mixed", "bf16-mixed"):
        yield "trainer_ddp_%s_w%d" % (precision.replace("-", "_"), world.size), _trainer_case(precision)


@case("Fabric", "collectives_w{w}")
def fabric_collectives(ctx):
    import torch
    _, fabric_mod, _, _ = _need_lightning(ctx)
    devices, nodes = _devices(ctx)
    fabric = fabric_mod.Fabric(accelerator="cuda" if ctx.on_gpu else "cpu", devices=devices, num_nodes=nodes,
                               strategy="ddp", precision="32-true")
    fabric.launch()
    failures = []
    if (fabric.world_size, fabric.global_rank) != (ctx.size, ctx.rank):
        failures.append("Fabric sees rank %d of %d, the world is rank %d of %d"
                        % (fabric.global_rank, fabric.world_size, ctx.rank, ctx.size))
    count = 1021
    x = payload("f32", ctx.seed, ctx.rank, count, ctx.device)
    summed = fabric.all_reduce(x.clone(), reduce_op="sum")
    bad = mismatch(summed, reduce_expected("f32", "sum", ctx.seed, ctx.size, count, ctx.device), exact=True)
    if bad:
        failures.append("all_reduce sum: " + bad)
    gathered = fabric.all_gather(x)
    want = torch.stack([values("f32", ctx.seed, r, torch.arange(count, device=ctx.device)).float()
                        for r in range(ctx.size)])
    bad = mismatch(gathered.reshape(want.shape), want, exact=True)
    if bad:
        failures.append("all_gather: " + bad)
    got = fabric.broadcast(ctx.rank * 10 + 7, src=0)
    if got != 7:
        failures.append("broadcast from rank 0 gave %r, expected 7" % (got,))
    fabric.barrier()
    if failures:
        raise AssertionError("; ".join(failures))
