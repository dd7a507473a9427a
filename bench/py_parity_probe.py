"""What a one-rank ProcessGroupNCCL returns for reduce_scatter_tensor and all_reduce with
premul_sum and avg, input against result, on one GPU; run under NCCL_DEBUG=INFO
NCCL_DEBUG_SUBSYS=COLL to see which of the calls reach NCCL (torch-rs1-premulsum).
  python3 bench/py_parity_probe.py"""
import os
import sys

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


rs()
dist.destroy_process_group()
