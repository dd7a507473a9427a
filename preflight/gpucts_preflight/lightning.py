"""GpuctsPreflight: the preflight as a Lightning Callback.

Lightning's DDP strategies create the process group (with device_id, so NCCL's communicator is formed
at once) in setup_environment, before any callback hook. So the callback, when constructed, also wraps
torch.distributed.init_process_group: the first call of this process with an NCCL backend runs the
preflight first, with the rank and world size Lightning passes. `setup` runs it too where nothing did
yet (a strategy that never calls init_process_group). Either way a failed preflight stops every rank
(PreflightFailed, a SystemExit with the report's status; 2 with one line for a launcher or preflight
variable that is not what it must be).
"""
import functools

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    from pytorch_lightning.callbacks import Callback

from . import check

_state = {"done": False}


def _given(v):
    """init_process_group's rank or world_size: -1 (its default) means "from the environment"."""
    return None if v is None or (isinstance(v, int) and not isinstance(v, bool) and v == -1) else v


def _wrap_init_process_group():
    import torch.distributed as dist
    original = dist.init_process_group
    if getattr(original, "_gpucts_preflight", False):
        return

    @functools.wraps(original)
    def init_process_group(*args, **kwargs):
        backend = kwargs.get("backend", args[0] if args else None)
        if not _state["done"] and (backend is None or "nccl" in str(backend)):
            _state["done"] = True
            check(rank=_given(kwargs.get("rank")), world_size=_given(kwargs.get("world_size")))
        return original(*args, **kwargs)

    init_process_group._gpucts_preflight = True
    dist.init_process_group = init_process_group


class GpuctsPreflight(Callback):
    def __init__(self):
        super().__init__()
        _wrap_init_process_group()

    def setup(self, trainer, pl_module, stage):
        if _state["done"]:
            return
        _state["done"] = True
        check(rank=trainer.global_rank, world_size=trainer.world_size)
