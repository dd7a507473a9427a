"""The seed guides' validation script: one NCCL process group and one all-reduce of ones."""
import os

import torch
import torch.distributed as dist

local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl")
t = torch.ones(1, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
print("rank %d: all_reduce gave %g of %d" % (dist.get_rank(), t.item(), dist.get_world_size()), flush=True)
assert t.item() == dist.get_world_size()
dist.destroy_process_group()
