"""FSDP2 (`fully_shard`) against DDP, as PyTorch's own FSDP2 training-parity tests: the same model
and data on each rank, the loss of every step equal, and the gathered parameters equal to DDP's."""
import copy

from .cases_ddp import LR, STEPS, model, ddp, flat
from .nccl_data import describe, torch_known_defects, torch_release
from .runner import case


def fully_shard_api():
    """fully_shard, or None with why it cannot be imported here."""
    why = []
    for where in ("torch.distributed.fsdp", "torch.distributed._composable.fsdp"):  # 2.6+, 2.4/2.5
        try:
            return getattr(__import__(where, fromlist=["fully_shard"]), "fully_shard"), ""
        except AttributeError:
            why.append("%s has no fully_shard" % where)
        except Exception as e:  # an old torch on a newer Python fails while importing, not only ImportError
            why.append("%s: %s: %s" % (where, type(e).__name__, " ".join(str(e).split())[:160]))
    return None, "; ".join(why)


@case("FSDP2", "fully_shard_vs_ddp_w{w}")
def fully_shard_vs_ddp(ctx):
    import torch
    fully_shard, why = fully_shard_api()
    if fully_shard is None:
        ctx.skip("torch %s has no FSDP2 fully_shard (torch 2.4 and later): %s" % (torch.__version__, why))
    release = torch_release(torch.__version__)
    if ctx.device.type == "cpu" and release is not None and release < (2, 7, 0):
        # Measured on CPU worlds: 2.4.1 (2.5.1 has the same code) makes FSDP2's streams with
        # torch.cuda.Stream whatever the mesh, a CUDA error; 2.6.0 asks the mesh's device, but
        # torch.cpu.Stream has no record_event. 2.7.1 runs it.
        ctx.skip("torch %s's FSDP2 does not run on the CPU (before 2.6 its streams are CUDA streams, in 2.6 "
                 "the CPU stream lacks record_event); the CPU world covers fully_shard from torch 2.7"
                 % torch.__version__)
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh(ctx.device.type, (ctx.size,))
    base = model(ctx)
    sharded = copy.deepcopy(base)
    for layer in sharded:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(sharded, mesh=mesh)
    reference = ddp(ctx, base)
    opts = [torch.optim.SGD(m.parameters(), lr=LR) for m in (sharded, reference)]
    # Each rank its own data (seed per rank, as PyTorch's FSDP2 parity tests).
    g = torch.Generator().manual_seed(42 + ctx.rank + 1)
    failures = []
    losses = []
    for step in range(STEPS):
        x = torch.randn(4, 8, generator=g).to(ctx.device)
        y = torch.randn(4, 4, generator=g).to(ctx.device)
        step_losses = []
        for m, opt in zip((sharded, reference), opts):
            loss = torch.nn.functional.mse_loss(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_losses.append(loss.detach().float())
        losses.append(float(step_losses[0]))
        try:
            torch.testing.assert_close(step_losses[0], step_losses[1], rtol=1.3e-6, atol=1e-5)
        except AssertionError:
            failures.append("step %d: loss %r under fully_shard, %r under DDP"
                            % (step + 1, float(step_losses[0]), float(step_losses[1])))
    full = torch.cat([(p.full_tensor() if hasattr(p, "full_tensor") else p).detach().reshape(-1).float()
                      for p in sharded.parameters()])
    ref = flat(reference.module)
    ctx.same_on_every_rank(full, "gathered fully_shard parameters")
    try:
        torch.testing.assert_close(full, ref, rtol=1.3e-6, atol=1e-5)
    except AssertionError as e:
        failures.append("gathered parameters differ from DDP's: %s" % " ".join(str(e).split())[:300])
    ctx.prop("gpucts.losses", " ".join("%.6g" % v for v in losses))
    # FSDP2 reduce-scatters fp32 gradients with op avg over more than one rank: a process group
    # defect of that op (torch_defects.csv) shows here as a loss that drifts from DDP's.
    defects = torch_known_defects("reduce_scatter_tensor", "f32", "avg", False, ctx.size, release,
                                  ctx.backend) if ctx.size > 1 else []
    if failures and defects:
        ctx.prop("gpucts.known_defect", ",".join(defects))
        raise AssertionError("%s\n  known torch defect of the gradients' reduce_scatter (op avg): %s"
                             % (failures[0], describe(defects)))
    if failures:
        raise AssertionError(failures[0])
    if defects:
        ctx.prop("gpucts.known_defect_not_seen", ",".join(defects))
