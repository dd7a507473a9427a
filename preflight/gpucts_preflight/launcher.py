"""Who this process is in its job, read from whatever launched it.

torchrun and a Kubernetes PyTorchJob set RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT; srun sets
SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID; Open MPI sets OMPI_COMM_WORLD_*; MPICH/PMI sets PMI_*;
Lightning's own launcher sets LOCAL_RANK/NODE_RANK/WORLD_SIZE. Several may be present at once (torchrun
inside an srun step): the torch variables win, and the others must agree with them.
"""
import os

# (launcher, rank variable, world-size variable, local-rank variable), in order of precedence.
SOURCES = (
    ("torch", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
)

# Every variable the audit reads; each rank reports them, so rank 0 can compare across ranks.
LAUNCHER_VARS = sorted({v for s in SOURCES for v in s[1:]} | {
    "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
    "SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID", "SLURM_NNODES", "SLURM_NTASKS_PER_NODE",
    "SLURM_LAUNCH_NODE_IPADDR", "OMPI_COMM_WORLD_LOCAL_SIZE", "CUDA_VISIBLE_DEVICES",
    "TORCHELASTIC_USE_AGENT_STORE"})


class LauncherError(ValueError):
    """A launcher variable that is not what it must be (a word where a number belongs)."""


def _int(env, name):
    v = env.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v.strip())
    except ValueError:
        raise LauncherError("%s=%r is not an integer" % (name, v)) from None


class Identity:
    """This process's place in the job and the launcher variables it saw."""

    def __init__(self, env=None, rank=None, world_size=None):
        env = dict(os.environ if env is None else env)
        self.vars = {k: env[k] for k in LAUNCHER_VARS if k in env}
        self.launcher = None
        self.rank = rank
        self.world_size = world_size
        self.local_rank = None
        self.contradictions = []  # one sentence each, within this process's own variables
        seen = {}
        for name, rv, wv, lv in SOURCES:
            r, w, l = _int(env, rv), _int(env, wv), _int(env, lv)
            if r is None and w is None:
                continue
            seen[name] = (rv, r, wv, w, lv, l)
            if self.launcher is None:
                self.launcher = name
                if self.rank is None:
                    self.rank = r
                if self.world_size is None:
                    self.world_size = w
                self.local_rank = l
        if self.launcher is None and _int(env, "LOCAL_RANK") is not None:
            self.launcher = "lightning"
            self.local_rank = _int(env, "LOCAL_RANK")
        if self.local_rank is None:
            self.local_rank = _int(env, "LOCAL_RANK")
        self.node_rank = _int(env, "NODE_RANK")
        if self.node_rank is None:
            self.node_rank = _int(env, "GROUP_RANK")
        self.local_world_size = _int(env, "LOCAL_WORLD_SIZE")
        # A second launcher's view must match the first's (torchrun inside srun -n1 per node is fine:
        # only rank and size of the same granularity are compared, so a per-node srun is skipped).
        first = seen.get(self.launcher)
        for name, (rv, r, wv, w, lv, l) in seen.items():
            if first is None or name == self.launcher:
                continue
            if w is not None and self.world_size is not None and w == self.world_size:
                if r is not None and self.rank is not None and r != self.rank:
                    self.contradictions.append("%s=%d but %s=%d" % (first[0], self.rank, rv, r))
            elif w is not None and self.world_size is not None and w > self.world_size:
                self.contradictions.append("%s=%d but %s=%d: the launcher started more processes than "
                                           "the job counts" % (first[2], self.world_size, wv, w))
        nr, gr = _int(env, "NODE_RANK"), _int(env, "GROUP_RANK")
        if nr is not None and gr is not None and nr != gr:
            self.contradictions.append("NODE_RANK=%d but GROUP_RANK=%d" % (nr, gr))
        if self.rank is not None and self.world_size is not None and not 0 <= self.rank < self.world_size:
            self.contradictions.append("rank %d is outside WORLD_SIZE=%d" % (self.rank, self.world_size))
        self.master_addr = env.get("MASTER_ADDR") or env.get("SLURM_LAUNCH_NODE_IPADDR")
        self.master_port = _int(env, "MASTER_PORT")
        self.agent_store = env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        self.job_id = (env.get("TORCHELASTIC_RUN_ID") or
                       ("slurm-%s.%s" % (env["SLURM_JOB_ID"], env.get("SLURM_STEP_ID", "0"))
                        if env.get("SLURM_JOB_ID") else "") or "job")

    def to_json(self):
        return {"launcher": self.launcher, "rank": self.rank, "world_size": self.world_size,
                "local_rank": self.local_rank, "node_rank": self.node_rank,
                "local_world_size": self.local_world_size, "vars": self.vars,
                "contradictions": self.contradictions}
