"""Diagnostics for two Python-suite findings on one GPU, world size 1 (run under NCCL_DEBUG=INFO
NCCL_DEBUG_SUBSYS=COLL to see which collectives reach NCCL):
  rs    reduce_scatter_tensor and all_reduce with premul_sum and avg: result against input
  pl    Lightning's Trainer (16-mixed, bf16-mixed) against the suite's raw-DDP reference, step by
        step: where the two first differ, the GradScaler scale each ends with, and the reference
        run twice (is it deterministic at all?)
  python3 bench/py_parity_probe.py [rs] [pl]"""
import copy
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "suites", "python"))
import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29547")
os.environ.setdefault("RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")
os.environ.setdefault("LOCAL_RANK", "0")
dev = torch.device("cuda", 0)
torch.cuda.set_device(dev)
dist.init_process_group("nccl", device_id=dev)


def rs():
    for dt in (torch.float32, torch.bfloat16, torch.float8_e4m3fn):
        x = torch.full((8,), 3.0, device=dev).to(dt)
        for name, op in (("premul_sum(2)", dist._make_nccl_premul_sum(2.0)), ("avg", dist.ReduceOp.AVG)):
            for coll in ("reduce_scatter_tensor", "all_reduce"):
                y = x.clone()
                out = torch.empty_like(x)
                try:
                    print("probe: %s %s %s ..." % (coll, name, dt), file=sys.stderr, flush=True)
                    if coll == "all_reduce":
                        dist.all_reduce(y, op=op)
                        out = y
                    else:
                        dist.reduce_scatter_tensor(out, y, op=op)
                    torch.cuda.synchronize()
                    print("rs: %-22s %-14s %-20s in 3.0 -> out %s" % (coll, name, dt, out.float()[0].item()),
                          flush=True)
                except Exception as e:  # the probe reports every outcome, a refusal too
                    print("rs: %-22s %-14s %-20s raised %s" % (coll, name, dt, str(e).splitlines()[0][:120]),
                          flush=True)


def pl():
    from gpucts_suites import cases_lightning as cl
    from gpucts_suites.cases_ddp import LR, LOCAL_BATCH, flat, model
    import lightning.pytorch as L
    from lightning.pytorch.strategies import DDPStrategy
    ctx = SimpleNamespace(device=dev, rank=0, size=1, local_rank=0, on_gpu=True, backend="nccl",
                          world=SimpleNamespace(kind="sim", launcher="env"))
    data = cl._dataset(ctx)

    def reference(start, precision):
        from torch.nn.parallel import DistributedDataParallel
        net = DistributedDataParallel(copy.deepcopy(start), device_ids=[0], gradient_as_bucket_view=True,
                                      static_graph=True)
        opt = torch.optim.SGD(net.parameters(), lr=LR)
        dtype = torch.float16 if precision == "16-mixed" else torch.bfloat16
        scaler = torch.amp.GradScaler("cuda") if precision == "16-mixed" else None
        steps = []
        for s in range(cl.STEPS):
            x = data.tensors[0][s * LOCAL_BATCH:(s + 1) * LOCAL_BATCH].to(dev)
            y = data.tensors[1][s * LOCAL_BATCH:(s + 1) * LOCAL_BATCH].to(dev)
            opt.zero_grad()
            with torch.autocast("cuda", dtype=dtype):
                loss = torch.nn.functional.mse_loss(net(x).float(), y)
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            steps.append((flat(net.module).clone(), scaler.get_scale() if scaler else None, loss.item()))
        return steps

    for precision in ("16-mixed", "bf16-mixed"):
        base = model(ctx)
        start = copy.deepcopy(base)
        got = []

        class Record(L.Callback):
            def on_train_batch_end(self, trainer, module, outputs, batch, idx):
                sc = getattr(trainer.precision_plugin, "scaler", None)
                loss = outputs["loss"].item() if isinstance(outputs, dict) else float(outputs)
                got.append((flat(module.net).clone(), sc.get_scale() if sc else None, loss))

        class Module(L.LightningModule):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def training_step(self, batch, _):
                x, y = batch
                return torch.nn.functional.mse_loss(self.net(x).float(), y)

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=LR)

        trainer = L.Trainer(accelerator="gpu", devices=1, num_nodes=1, precision=precision, max_steps=cl.STEPS,
                            strategy=DDPStrategy(gradient_as_bucket_view=True, static_graph=True),
                            logger=False, enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, num_sanity_val_steps=0, callbacks=[Record()])
        trainer.fit(Module(base), torch.utils.data.DataLoader(data, batch_size=LOCAL_BATCH, shuffle=False))
        ref, ref2 = reference(start, precision), reference(start, precision)
        w0 = flat(start)
        for s, ((wl, sl, ll), (wr, sr, lr_), (wr2, _, _)) in enumerate(zip(got, ref, ref2)):
            print("pl: %-10s step %d: max|L-R| %.3g  max|R-R2| %.3g  max|update R| %.3g  scale L %s R %s  "
                  "loss L %.6g R %.6g" % (precision, s + 1, (wl - wr).abs().max().item(),
                                         (wr - wr2).abs().max().item(), (wr - w0).abs().max().item(), sl, sr,
                                         ll, lr_), flush=True)


for what in sys.argv[1:] or ["rs", "pl"]:
    {"rs": rs, "pl": pl}[what]()
dist.destroy_process_group()
