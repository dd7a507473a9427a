"""The comparisons of every rank's fingerprint, each problem with its cause, ranks, hosts and fix.

Pure functions over the gathered fingerprints (dicts of gpucts.fingerprint/1 with the gpucts_rank
annotation), so they run and are tested anywhere; rank 0 calls them, the report goes to every rank.
"""
import csv
import itertools
import os


class Problem:
    def __init__(self, id, cause, ranks, hosts, fix, severity="error"):
        self.id, self.cause, self.fix, self.severity = id, cause, fix, severity
        self.ranks = sorted(set(r for r in ranks if r is not None))
        self.hosts = sorted(set(hosts))

    def line(self):
        where = ""
        if self.ranks:
            where += " [%s %s" % ("rank" if len(self.ranks) == 1 else "ranks", ",".join(map(str, self.ranks)))
            where += (" on %s]" % ", ".join(self.hosts)) if self.hosts else "]"
        return "%-7s %s: %s%s -> %s" % (self.severity.upper(), self.id, self.cause, where, self.fix)

    def to_json(self):
        return {"id": self.id, "severity": self.severity, "cause": self.cause, "ranks": self.ranks,
                "hosts": self.hosts, "fix": self.fix}


def info(fp):
    return fp.get("gpucts_rank") or {}


def rank_of(fp):
    return info(fp).get("rank", fp.get("rank"))


def host_name(fp):
    """The host as NCCL has it: its NCCL_HOSTID where set (simulated hosts), else the host name."""
    i = info(fp)
    if i.get("nccl_hostid") is not None:
        return i["nccl_hostid"]
    return fp.get("host") or "unknown-host"


def host_key(fp):
    """NCCL's host identity: the first 1023 raw bytes of NCCL_HOSTID, else host name and boot id."""
    i = info(fp)
    if i.get("nccl_hostid_hex") is not None:
        return "NCCL_HOSTID:" + i["nccl_hostid_hex"]
    return "machine:%s/%s" % (fp.get("host"), fp.get("boot_id", ""))


def machine_key(fp):
    return "%s/%s" % (fp.get("host"), fp.get("boot_id", ""))


def _get(fp, *path):
    v = fp
    for p in path:
        if not isinstance(v, dict) or p not in v:
            return None
        v = v[p]
    return v


def groups(fps, values):
    """'2.28.3 on rank 1 (simhost1); 2.28.9 on ranks 0,2 (simhost0,simhost2)'."""
    order, by = [], {}
    for fp, v in zip(fps, values):
        if v not in by:
            order.append(v)
            by[v] = []
        by[v].append(fp)
    parts = []
    for v in order:
        rs = sorted(rank_of(f) for f in by[v] if rank_of(f) is not None)
        hs = sorted(set(host_name(f) for f in by[v]))
        parts.append("%s on %s %s (%s)" % (v, "rank" if len(rs) == 1 else "ranks", ",".join(map(str, rs)),
                                           ",".join(hs)))
    return "; ".join(parts)


FIELDS_CSV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cross_rank_fields.csv")


def read_fields(path=FIELDS_CSV):
    """The fields every rank must agree on (cross_rank_fields.csv: the C++ side's two lists, as data)."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


FIELDS = read_fields()


def field_value(fp, row):
    """The row's value of one fingerprint as the C++ compares it; None where unknown."""
    v = None
    for path in row["path"].split("|"):
        v = _get(fp, *path.split("."))
        if v is not None:
            break
    how = row["normalize"]
    if how == "presence":
        return "loaded" if v is not None else "absent"
    if v is None:
        return None
    if how.startswith("release"):
        numbers = []
        for part in str(v).split("."):
            digits = "".join(itertools.takewhile(str.isdigit, part))
            if not digits:
                break
            numbers.append(str(int(digits)))
        want = int(how[len("release"):])
        return ".".join((numbers + ["0"] * want)[:want]) if numbers else str(v)
    return str(v)


def _env_differences(fps):
    """'NCCL_PROTO=Simple on rank 0 (s0); NCCL_PROTO unset on rank 1 (s1) | ...': the variables that differ."""
    names = sorted(set(k for f in fps for k in (info(f).get("env") or {})))
    diffs = []
    for n in names:
        vs = ["%s=%s" % (n, info(f)["env"][n]) if n in (info(f).get("env") or {}) else n + " unset" for f in fps]
        if len(set(vs)) > 1:
            diffs.append(groups(fps, vs))
    return " | ".join(diffs)


def compare_fields(fps, fields=None):
    """A problem per field of the table whose value differs between the ranks."""
    probs = []
    for row in FIELDS if fields is None else fields:
        vals = [field_value(f, row) for f in fps]
        if row["absent"] == "skip":
            known = [(f, v) for f, v in zip(fps, vals) if v is not None]
        else:
            known = [(f, v if v is not None else "absent") for f, v in zip(fps, vals)]
            if all(v is None for v in vals):
                continue
        if len(set(v for _, v in known)) < 2:
            continue
        if row["normalize"] == "env":
            cause = "NCCL_*/TORCH_* settings differ between ranks: " + _env_differences(fps)
        else:
            cause = "%s differs: %s" % (row["field"], groups([f for f, _ in known], [v for _, v in known]))
        probs.append(Problem(row["id"], cause, [rank_of(f) for f, _ in known], [host_name(f) for f, _ in known],
                             row["fix"], row["severity"]))
    return probs


def _version_tuple(s):
    out = []
    for p in str(s).split("."):
        digits = "".join(c for c in p if c.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def ifname_matches(spec, names):
    """NCCL_SOCKET_IFNAME semantics: comma list, '^' excludes, '=' exact, else prefix."""
    exclude = spec.startswith("^")
    spec = spec[1:] if exclude else spec
    exact = spec.startswith("=")
    spec = spec[1:] if exact else spec
    pats = [p for p in spec.split(",") if p]

    def hit(n):
        return any(n == p if exact else n.startswith(p) for p in pats)
    return any((not hit(n)) if exclude else hit(n) for n in names)


def compare(fps, world_size=None, missing=(), claimed_twice=None, master_port_taken=None):
    """Problems of a job. fps: one fingerprint per process that joined; missing: [(rank, host hint)]
    of ranks that never joined; claimed_twice: {rank: [fingerprints]} of a rank several processes
    claimed; master_port_taken: a sentence from rank 0's bind test of MASTER_PORT, or None."""
    probs = []
    for rank, hint in missing:
        probs.append(Problem(
            "rank-not-joined", "rank %d%s did not join the preflight" % (rank, " (%s)" % hint if hint else ""),
            [rank], [], "see why that rank did not start or did not reach the training script (its launcher's "
            "log; a wrong WORLD_SIZE, hostfile or node count)"))
    for rank, fs in sorted((claimed_twice or {}).items()):
        desc = "; ".join("%s pid %s NODE_RANK=%s" % (host_name(f), info(f).get("pid"),
                                                     _get(f, "gpucts_rank", "launcher", "node_rank")) for f in fs)
        probs.append(Problem("rank-claimed-twice", "%d processes claim global rank %d (%s)" % (len(fs), rank, desc),
                             [rank], [host_name(f) for f in fs],
                             "give every process its own rank: a NODE_RANK/GROUP_RANK/SLURM_PROCID set twice "
                             "(check the launch command of each node)"))
    if master_port_taken:
        probs.append(Problem("master-port-in-use", master_port_taken, [0], [],
                             "free the port or pick another MASTER_PORT (a process of an earlier run may hold it)"))

    # Identity and launcher variables.
    node_ranks = {}
    for f in fps:
        lj = _get(f, "gpucts_rank", "launcher") or {}
        for c in lj.get("contradictions") or []:
            probs.append(Problem("launcher-variables-contradict", "the launcher variables of rank %s contradict "
                                 "each other: %s" % (rank_of(f), c), [rank_of(f)], [host_name(f)],
                                 "launch with one launcher's variables, or make them agree"))
        if lj.get("node_rank") is not None:
            node_ranks.setdefault(lj["node_rank"], {}).setdefault(host_key(f), []).append(f)
    for nr, by_host in sorted(node_ranks.items()):
        if len(by_host) > 1:
            fs = [f for v in by_host.values() for f in v]
            probs.append(Problem("node-rank-reused", "NODE_RANK=%d is used on %d hosts (%s)" % (
                nr, len(by_host), ", ".join(sorted(set(host_name(f) for f in fs)))),
                [rank_of(f) for f in fs], [host_name(f) for f in fs],
                "give each node its own NODE_RANK (0..nnodes-1)"))
    sizes = [info(f).get("world_size") for f in fps]
    known = set(s for s in sizes if s is not None)
    if len(known) > 1:
        probs.append(Problem("world-size-differs", "WORLD_SIZE differs: " + groups(fps, sizes), [rank_of(f) for f in fps],
                             [host_name(f) for f in fps], "launch every rank with the same WORLD_SIZE"))
    elif known and world_size is not None and world_size != len(fps) + len(missing) and not missing:
        probs.append(Problem("world-size-differs", "WORLD_SIZE=%d but %d ranks joined" % (world_size, len(fps)),
                             [rank_of(f) for f in fps], [host_name(f) for f in fps],
                             "set WORLD_SIZE to the number of processes the launcher starts"))
    for f in fps:
        i, gpus = info(f), f.get("gpus")
        if gpus is not None and i.get("local_rank", 0) >= len(gpus) and len(gpus) > 0:
            probs.append(Problem("local-rank-beyond-gpus", "LOCAL_RANK=%d but %d GPU(s) visible (CUDA_VISIBLE_DEVICES=%s)" % (
                i["local_rank"], len(gpus), (f.get("env") or {}).get("CUDA_VISIBLE_DEVICES", "unset")),
                [rank_of(f)], [host_name(f)], "start at most one process per visible GPU on each node "
                "(--nproc-per-node, --ntasks-per-node, devices=) or widen CUDA_VISIBLE_DEVICES"))
        if f.get("torch_error"):
            libs = ", ".join("NCCL %s %s" % (l.get("version"), l.get("path")) for l in f.get("nccl_loaded") or [])
            probs.append(Problem("torch-import-failed", "torch cannot be imported: %s%s" % (
                f["torch_error"], " (mapped: %s)" % libs if libs else ""), [rank_of(f)],
                                 [host_name(f)], "remove the LD_PRELOAD/LD_LIBRARY_PATH that loads another "
                                 "libnccl.so.2 (or libcudart) than torch was built with"))
        loaded = f.get("nccl_loaded") or []
        if len(set(l.get("path") for l in loaded)) > 1:
            probs.append(Problem("nccl-loaded-twice", "several libnccl are mapped: " + ", ".join(
                "%s %s" % (l.get("version"), l.get("path")) for l in loaded), [rank_of(f)], [host_name(f)],
                "load one libnccl.so.2 per process"))
        drv, tc = _get(f, "driver", "cuda"), _get(f, "torch", "cuda")
        if drv and tc and _version_tuple(drv)[:1] < _version_tuple(tc)[:1]:
            probs.append(Problem("driver-too-old-for-torch-cuda", "torch is built for CUDA %s, the driver supports "
                                 "CUDA %s" % (tc, drv), [rank_of(f)], [host_name(f)],
                                 "install a driver for CUDA %s or a torch built for CUDA %s" % (tc, drv)))

    # The stack and the settings, as the C++ side compares them (cross_rank_fields.csv).
    probs += compare_fields(fps)

    # Interfaces and placement.
    for f in fps:
        spec = (f.get("env") or {}).get("NCCL_SOCKET_IFNAME")
        names = [i["name"] for i in f.get("interfaces") or []]
        if spec is not None and f.get("interfaces") is not None and not ifname_matches(spec, names):
            probs.append(Problem("nccl-socket-ifname-no-match", "NCCL_SOCKET_IFNAME=%s selects no interface of %s "
                                 "(it has %s)" % (spec, host_name(f), ",".join(names)), [rank_of(f)], [host_name(f)],
                                 "set NCCL_SOCKET_IFNAME to an interface every host has (or unset it)"))
    on_gpu, on_host, gpus_of_host = {}, {}, {}
    for f in fps:
        i = info(f)
        on_host.setdefault(host_key(f), []).append(f)
        gpus_of_host[host_key(f)] = len(f.get("gpus") or [])
        if i.get("gpu_uuid"):
            on_gpu.setdefault((host_key(f), i["gpu_uuid"]), []).append(f)
    for (hk, uuid), fs in sorted(on_gpu.items()):
        if len(fs) > 1:
            probs.append(Problem(
                "gpu-shared-by-ranks", "%d ranks on host %s would share GPU %s (NCCL: \"Duplicate GPU detected\")" % (
                    len(fs), host_name(fs[0]), uuid), [rank_of(f) for f in fs], [host_name(f) for f in fs],
                "one process per GPU: LOCAL_RANK must select a different GPU for each rank of a host; several "
                "ranks on one GPU on purpose (simulated hosts) need a distinct NCCL_HOSTID per rank"))
    for hk, fs in sorted(on_host.items()):
        if gpus_of_host[hk] and len(fs) > gpus_of_host[hk]:
            probs.append(Problem("ranks-exceed-gpus", "%d ranks on host %s, %d GPU(s) visible there" % (
                len(fs), host_name(fs[0]), gpus_of_host[hk]), [rank_of(f) for f in fs], [host_name(fs[0])],
                "start no more ranks on a host than it has GPUs", severity="error"))
    return probs


def simulated_hosts(fps):
    """(NCCL hosts, machines): more hosts than machines means hosts simulated with NCCL_HOSTID."""
    return len(set(host_key(f) for f in fps)), len(set(machine_key(f) for f in fps))
