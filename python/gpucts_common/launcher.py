"""Who this process is in its job, read from whatever launched it, every number checked.

torchrun and a Kubernetes PyTorchJob set RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT; srun sets
SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID; Open MPI sets OMPI_COMM_WORLD_*; MPICH/PMI sets PMI_*;
Lightning's own launcher sets LOCAL_RANK/NODE_RANK/WORLD_SIZE. Several may be present at once (torchrun
inside an srun step): the torch variables win, and the others must agree with them.

A variable that cannot be what it claims (a word where a number belongs, a port beyond 65535, a negative
index, a rank at or beyond its world size, an address with a space in it) raises LauncherError with one
line naming it: the caller turns that into exit status 2. Variables that are each valid but disagree
with one another are `contradictions`, reported beside the other findings.
"""
import os

# The most processes one job may count: a world size beyond it is refused, never waited for.
MAX_WORLD_SIZE = 65536
MAX_JOB_ID_CHARS = 256

# (launcher, rank variable, world-size variable, local-rank variable), in order of precedence.
SOURCES = (
    ("torch", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
    ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
)

# Counts of processes or nodes: at least 1. Every other number read here is an index: 0 or more.
SIZE_VARS = {s[2] for s in SOURCES} | {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_NNODES"}
INDEX_VARS = {v for s in SOURCES for v in (s[1], s[3])} | {"NODE_RANK", "GROUP_RANK", "SLURM_NODEID",
                                                            "TORCHELASTIC_RESTART_COUNT"}

# Every variable the audit reads; each rank reports them, so rank 0 can compare across ranks.
LAUNCHER_VARS = sorted(SIZE_VARS | INDEX_VARS | {
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "SLURM_STEP_ID",
    "SLURM_NTASKS_PER_NODE", "SLURM_LAUNCH_NODE_IPADDR", "CUDA_VISIBLE_DEVICES", "TORCHELASTIC_USE_AGENT_STORE"})


class LauncherError(ValueError):
    """A launcher variable that is not what it must be; str() is the one line to print."""


def _in_range(label, value, low, high):
    if not low <= value <= high:
        raise LauncherError("%s=%d is out of range (%d to %d)" % (label, value, low, high))
    return value


def integer(env, name, low, high):
    """The variable as an int within [low, high], None where unset or empty."""
    v = env.get(name)
    if v is None or v.strip() == "":
        return None
    try:
        x = int(v.strip(), 10)
    except ValueError:
        raise LauncherError("%s=%r is not an integer" % (name, v)) from None
    return _in_range(name, x, low, high)


def port(env, name):
    """A TCP port (1 to 65535), None where unset."""
    return integer(env, name, 1, 65535)


def integer_bounds(name):
    """(low, high) a launcher number may take: a count of processes or an index below the largest."""
    return (1, MAX_WORLD_SIZE) if name in SIZE_VARS else (0, MAX_WORLD_SIZE - 1)


def _launcher_int(env, name):
    return integer(env, name, *integer_bounds(name))


def checked_argument(label, value, low, high):
    """A rank or world size handed over by a caller (Lightning's init_process_group arguments)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise LauncherError("%s=%r is not an integer" % (label, value))
    return _in_range(label, value, low, high)


class Identity:
    """This process's place in the job and the launcher variables it saw. Raises LauncherError."""

    def __init__(self, env=None, rank=None, world_size=None):
        env = dict(os.environ if env is None else env)
        self.vars = {k: env[k] for k in LAUNCHER_VARS if k in env}
        numbers = {k: _launcher_int(env, k) for k in sorted(SIZE_VARS | INDEX_VARS)}
        self.launcher = None
        self.rank = checked_argument("rank", rank, 0, MAX_WORLD_SIZE - 1)
        self.world_size = checked_argument("world_size", world_size, 1, MAX_WORLD_SIZE)
        self.local_rank = None
        self.contradictions = []  # one sentence each, within this process's own variables
        seen = {}
        for name, rv, wv, lv in SOURCES:
            r, w, l = numbers[rv], numbers[wv], numbers[lv]
            if r is not None and w is not None and r >= w:
                raise LauncherError("%s=%d is not below %s=%d" % (rv, r, wv, w))
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
        if self.rank is not None and self.world_size is not None and self.rank >= self.world_size:
            raise LauncherError("rank %d is not below the world size %d" % (self.rank, self.world_size))
        if self.launcher is None and numbers["LOCAL_RANK"] is not None:
            self.launcher = "lightning"
        if self.local_rank is None:
            self.local_rank = numbers["LOCAL_RANK"]
        self.node_rank = numbers["NODE_RANK"] if numbers["NODE_RANK"] is not None else numbers["GROUP_RANK"]
        self.local_world_size = numbers["LOCAL_WORLD_SIZE"]
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
        nr, gr = numbers["NODE_RANK"], numbers["GROUP_RANK"]
        if nr is not None and gr is not None and nr != gr:
            self.contradictions.append("NODE_RANK=%d but GROUP_RANK=%d" % (nr, gr))
        addr_var = "MASTER_ADDR" if env.get("MASTER_ADDR") else "SLURM_LAUNCH_NODE_IPADDR"
        self.master_addr = env.get(addr_var)
        # One host name or address: `hostname -I` prints all of a host's, separated by spaces, which
        # no resolver takes (rank 0 could host nothing, the others would wait out the timeout).
        if self.master_addr and any(c.isspace() or not c.isprintable() for c in self.master_addr):
            raise LauncherError("%s=%r is not one host name or address" % (addr_var, self.master_addr))
        self.master_port = port(env, "MASTER_PORT")
        self.agent_store = env.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        self.restart_count = numbers["TORCHELASTIC_RESTART_COUNT"]
        self.job_id = (env.get("TORCHELASTIC_RUN_ID") or
                       ("slurm-%s.%s" % (env["SLURM_JOB_ID"], env.get("SLURM_STEP_ID", "0"))
                        if env.get("SLURM_JOB_ID") else "") or "job")
        if len(self.job_id) > MAX_JOB_ID_CHARS:
            raise LauncherError("the job id (TORCHELASTIC_RUN_ID or SLURM_JOB_ID) is longer than %d characters"
                                % MAX_JOB_ID_CHARS)

    def to_json(self):
        return {"launcher": self.launcher, "rank": self.rank, "world_size": self.world_size,
                "local_rank": self.local_rank, "node_rank": self.node_rank,
                "local_world_size": self.local_world_size, "vars": self.vars,
                "contradictions": self.contradictions}
