"""One cause from the seed guides, reproduced with real libraries and settings on simulated hosts (N ranks
on one GPU, each its own NCCL_HOSTID), run twice: the stack alone (seed_validation.py) and under the
preflight (python -m gpucts_preflight -- seed_validation.py). A cause ending in -torchrun starts each
rank as a node of its own torchrun; one ending in -lightning runs the seed's Lightning Trainer
(seed_lightning.py), with gpucts's preflight callback the second time. Asserts what the stack alone did (its text,
or a hang past the bound, killed) and that the preflight stopped every rank within seconds naming the
cause; prints one table line: cause | the stack alone | the preflight.

    seed_causes.py CAUSE [--bound S] [--preflight-timeout S]     (CAUSE: see CAUSES; --list)
Exit: 0 both held, 1 not, 2 bad usage, 77 skipped (no torch, no GPU, no second NCCL release).
"""
import argparse
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, "seed_validation.py")
LIGHTNING_SCRIPT = os.path.join(HERE, "seed_lightning.py")
SKIP = 77
SYSTEM_NCCL = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"


class Skip(Exception):
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def torch_facts(python):
    code = ("import torch,os;from torch.distributed import ProcessGroupNCCL as P;"
            "print(torch.cuda.is_available(), '.'.join(map(str,P.get_runtime_nccl_version()))"
            " if hasattr(P,'get_runtime_nccl_version') else '?')")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Skip("no torch for %s: %s" % (python, (r.stderr.strip().splitlines() or ["?"])[-1]))
    gpu, nccl = r.stdout.split()
    if gpu != "True":
        raise Skip("torch sees no GPU (torch.cuda.is_available() is False)")
    return nccl


def other_release(torch_nccl, prefer):
    """A libnccl.so.2 of another release than torch's: the wheel cache first, then the system's."""
    cache = os.environ.get("GPUCTS_NCCL_CACHE") or os.path.expanduser("~/.cache/gpucts/nccl")
    found = sorted(glob.glob(os.path.join(cache, "*", "lib", "libnccl.so.2")))
    if prefer == "system":
        found = [SYSTEM_NCCL] if os.path.exists(SYSTEM_NCCL) else []
    for lib in found:
        v = os.path.basename(os.path.dirname(os.path.dirname(lib)))
        if lib == SYSTEM_NCCL:
            v = os.path.basename(os.path.realpath(lib)).replace("libnccl.so.", "")
        if v != torch_nccl:
            return lib, v
    raise Skip("no NCCL release other than torch's %s: %s (ci/fetch_nccl_wheels fills the cache)" % (
        torch_nccl, "no " + SYSTEM_NCCL if prefer == "system" else "the cache %s holds none" % cache))


def base_env(n, r, port, hostids=True):
    e = dict(os.environ)
    for k in ("NCCL_DEBUG", "NCCL_HOSTID", "LD_PRELOAD"):
        e.pop(k, None)
    e.update({"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": "0", "NODE_RANK": str(r),
              "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "NCCL_SOCKET_IFNAME": "lo",
              "NCCL_IB_DISABLE": "1", "PYTHONPATH": PACKAGE_ROOT + os.pathsep + e.get("PYTHONPATH", ""),
              "PYTHONUNBUFFERED": "1", "GPUCTS_PREFLIGHT_TIMEOUT_S": e.get("GPUCTS_PREFLIGHT_TIMEOUT_S", "10")})
    if hostids:
        e["NCCL_HOSTID"] = "%s-simhost%d" % (socket.gethostname(), r)
    return e


# cause -> (ranks, how each rank's env differs, what the stack alone shows (regex; None: anything but
# naming the cause), the preflight's finding id). Each set_up(envs, ctx) edits the per-rank envs.
def _nccl_wheel(envs, ctx):
    lib, v = other_release(ctx["torch_nccl"], "cache")
    envs[1]["LD_PRELOAD"] = lib
    return "rank 1 LD_PRELOADs NCCL %s (%s)" % (v, lib)


def _nccl_system(envs, ctx):
    lib, v = other_release(ctx["torch_nccl"], "system")
    envs[2]["LD_PRELOAD"] = lib
    # The preload maps both libraries into rank 2, so the preflight may name either finding: the
    # release that differs across hosts, or two NCCLs in one process (torch calls one of them).
    # Either names the cause when rank 0's report names the preloaded release and the rank.
    ctx["must_name"] = [v, "rank 2"]
    return "rank 2 of 3 LD_PRELOADs the system NCCL %s" % v


def _ifname(envs, ctx):
    envs[1]["NCCL_SOCKET_IFNAME"] = "eth9"
    return "NCCL_SOCKET_IFNAME=eth9 on rank 1"


def _env_differs(envs, ctx):
    envs[1]["NCCL_PROTO"] = "LL"
    envs[0]["NCCL_PROTO"] = "Simple"
    return "NCCL_PROTO=Simple on rank 0, LL on rank 1"


def _same_gpu(envs, ctx):
    for e in envs:
        e.pop("NCCL_HOSTID", None)
    return "2 ranks on one GPU, no NCCL_HOSTID"


def _node_rank(envs, ctx):
    for e in envs:  # as Lightning computes it: global rank = NODE_RANK * devices + LOCAL_RANK
        e["NODE_RANK"] = "1"
        e["RANK"] = "1"
    return "NODE_RANK=1 on both processes (global rank 1 twice, no rank 0)"


def _port_taken(envs, ctx):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("", int(envs[0]["MASTER_PORT"])))
    s.listen(1)
    ctx["squatter"] = s  # held until the run ends
    return "MASTER_PORT %s held by another process" % envs[0]["MASTER_PORT"]


def _rank_missing(envs, ctx):
    ctx["skip_ranks"] = [1]
    return "rank 1 of 2 never starts"


def _driver_cuda(envs, ctx):
    # Staged as far as one machine allows: the driver cannot be downgraded, so the preflight's probe is
    # told (test mode only) that the driver supports CUDA 12.8; the stack alone runs on the real driver.
    for e in envs:
        e["GPUCTS_TEST_MODE"] = "1"
        e["GPUCTS_FAKE_DRIVER_CUDA"] = "12.8"
    ctx["stack_env_drop"] = ["GPUCTS_TEST_MODE", "GPUCTS_FAKE_DRIVER_CUDA"]
    return "driver reported as CUDA 12.8 (test mode) under torch built for a newer CUDA"


# cause -> the launcher its ranks start under (the others: each rank a process with torchrun's variables).
LAUNCHERS = {"nccl-release-3ranks-torchrun": "torchrun", "nccl-release-3ranks-lightning": "lightning"}

CAUSES = {
    "nccl-release": (2, _nccl_wheel, r"undefined symbol|Mismatched NCCL version|HANG", "cross-host-mismatch|torch-import-failed|rank-not-joined"),
    "nccl-release-3ranks": (3, _nccl_system, r"Mismatched NCCL version|Failed to recv|Broken pipe|HANG",
                            "cross-host-mismatch|nccl-loaded-twice"),
    "nccl-release-3ranks-torchrun": (3, _nccl_system, r"Mismatched NCCL version|Failed to recv|Broken pipe|HANG",
                                     "cross-host-mismatch|nccl-loaded-twice"),
    "nccl-release-3ranks-lightning": (3, _nccl_system, r"Mismatched NCCL version|Failed to recv|Broken pipe|HANG",
                                      "cross-host-mismatch|nccl-loaded-twice"),
    "socket-ifname": (2, _ifname, r"no socket interface found|HANG", "nccl-socket-ifname-no-match"),
    "env-differs": (2, _env_differs, None, "env-differs"),
    "same-gpu-no-hostid": (2, _same_gpu, r"Duplicate GPU detected|HANG", "gpu-shared-by-ranks"),
    "node-rank-twice": (2, _node_rank, r"HANG|EADDRINUSE|address already in use", "rank-0-not-reached"),
    "master-port-taken": (2, _port_taken, r"EADDRINUSE|address already in use|HANG", "master-port-in-use"),
    "rank-missing": (2, _rank_missing, r"HANG", "rank-not-joined"),
    "driver-older-than-torch-cuda": (2, _driver_cuda, None, "driver-too-old-for-torch-cuda"),
}


def lightning_present(python):
    code = "try:\n import lightning.pytorch\nexcept ImportError:\n import pytorch_lightning"
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise Skip("no Lightning for %s (neither lightning nor pytorch_lightning imports)" % python)


def launch(launcher, tag, python, n, r, env):
    """Rank r's command line (and its env, edited in place) as `launcher` starts it: the seed's script
    alone ("stack") or under the preflight ("preflight")."""
    if launcher == "lightning":
        # Lightning's own environment: each process a node (NODE_RANK), its one device LOCAL_RANK 0.
        if tag == "preflight":
            env["GPUCTS_SEED_PREFLIGHT"] = "1"
        return [python, LIGHTNING_SCRIPT]
    target = [SCRIPT] if tag == "stack" else ["-m", "gpucts_preflight", "--", SCRIPT]
    if launcher == "torchrun":
        # Each rank a node of its own torchrun (static rendezvous at MASTER_ADDR:MASTER_PORT, hosted
        # by node 0's agent); torchrun sets the rank variables of its worker itself.
        addr, port = env["MASTER_ADDR"], env["MASTER_PORT"]
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"):
            env.pop(k, None)
        return [python, "-m", "torch.distributed.run", "--nnodes", str(n), "--nproc_per_node", "1",
                "--node_rank", str(r), "--master_addr", addr, "--master_port", port] + target
    return [python] + target


def run_ranks(argvs, envs, bound, logdir, tag):
    """Starts every rank in its own session; kills the ones alive at `bound`. Returns
    (seconds until the last exit or the kill, [(rc or None when killed, output)])."""
    procs, t0 = [], time.monotonic()
    for r, (argv, env) in enumerate(zip(argvs, envs)):
        if argv is None:
            procs.append(None)
            continue
        out = open(os.path.join(logdir, "%s.rank%d.log" % (tag, r)), "w+")
        procs.append((subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True), out))
    live = [p for p in procs if p]
    while time.monotonic() - t0 < bound and any(p.poll() is None for p, _ in live):
        time.sleep(0.1)
    took = time.monotonic() - t0
    res = []
    for p in procs:
        if p is None:
            res.append(("not started", ""))
            continue
        proc, out = p
        rc = proc.poll()
        if rc is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        out.seek(0)
        res.append((rc, out.read()))
        out.close()
    return took, res


def first_error(text):
    for pat in (r"[^\n]*(Mismatched NCCL version|Duplicate GPU detected|no socket interface found|undefined symbol|"
                r"EADDRINUSE|address already in use|Failed to recv|Broken pipe|DistBackendError|DistNetworkError|"
                r"Error)[^\n]*",):
        m = re.search(pat, text)
        if m:
            return m.group(0).strip()[:160]
    return (text.strip().splitlines() or [""])[-1][:160]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cause", nargs="?")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--bound", type=float, default=float(os.environ.get("GPUCTS_SEED_BOUND_S", 30)),
                    help="seconds before the stack alone counts as hung (default: GPUCTS_SEED_BOUND_S or 30; "
                         "every NCCL error seen on the H200 came within 8 s)")
    ap.add_argument("--preflight-within", type=float, default=30, help="seconds the preflight may take")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--logdir", default=os.environ.get("GPUCTS_LOG_DIR") or tempfile.mkdtemp(prefix="seed-causes-"))
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(CAUSES))
        return 0
    if a.cause not in CAUSES:
        sys.stderr.write("seed_causes.py: unknown cause %r (known: %s)\n" % (a.cause, ", ".join(CAUSES)))
        return 2
    n, set_up, stack_expect, preflight_expect = CAUSES[a.cause]
    launcher = LAUNCHERS.get(a.cause, "env")
    os.makedirs(a.logdir, exist_ok=True)
    ctx = {}
    try:
        ctx["torch_nccl"] = torch_facts(a.python)
        if launcher == "lightning":
            lightning_present(a.python)
        results = {}
        for tag in ("stack", "preflight"):
            port = free_port()
            envs = [base_env(n, r, port) for r in range(n)]
            ctx["skip_ranks"] = []
            what = set_up(envs, ctx)
            for e in envs if tag == "stack" else []:
                for k in ctx.get("stack_env_drop", []):
                    e.pop(k, None)
            argvs = [None if r in ctx["skip_ranks"] else launch(launcher, tag, a.python, n, r, envs[r])
                     for r in range(n)]
            bound = a.bound if tag == "stack" else a.preflight_within + 30
            results[tag] = run_ranks(argvs, envs, bound, a.logdir, "%s.%s" % (a.cause, tag))
            if ctx.get("squatter"):
                ctx.pop("squatter").close()
    except Skip as e:
        print("SKIPPED %s: %s" % (a.cause, e))
        return SKIP
    ok = True
    took, res = results["stack"]
    hung = [r for r, (rc, _) in enumerate(res) if rc is None]
    text = "\n".join(o for _, o in res)
    if hung:
        stack = "rank(s) %s hung, killed at %.0f s" % (",".join(map(str, hung)), took)
        others = [first_error(o) for rc, o in res if rc not in (None, 0, "not started")]
        if others:
            stack += "; " + others[0]
        seen = "HANG\n" + text
    else:
        codes = [rc for rc, _ in res if rc != "not started"]
        stack = ("completed (exit %s) after %.1f s" % (",".join(map(str, codes)), took) if all(c == 0 for c in codes)
                 else "failed after %.1f s: %s" % (took, first_error(text)))
        seen = text
    if stack_expect and not re.search(stack_expect, seen):
        print("FAIL %s: the stack alone did not show /%s/: %s" % (a.cause, stack_expect, stack))
        ok = False
    ptook, pres = results["preflight"]
    ptext = "\n".join(o for _, o in pres)
    started = [(rc, o) for rc, o in pres if rc != "not started"]
    m = re.search(r"^ERROR\s+(%s): [^\n]*" % preflight_expect, ptext, re.M)
    if any(rc is None for rc, _ in started):
        print("FAIL %s: a rank outlived the preflight's bound (%.0f s)" % (a.cause, ptook))
        ok = False
    elif any(rc == 0 for rc, _ in started) or len(set(rc for rc, _ in started)) != 1:
        print("FAIL %s: the ranks did not all stop with one non-zero status: %s" % (a.cause, [rc for rc, _ in started]))
        ok = False
    if not m:
        print("FAIL %s: the preflight did not name /%s/:\n%s" % (a.cause, preflight_expect, ptext[-3000:]))
        ok = False
    elif ptook > a.preflight_within:
        print("FAIL %s: the preflight took %.1f s (> %g s)" % (a.cause, ptook, a.preflight_within))
        ok = False
    if m and ctx.get("must_name"):
        # Rank 0 prints the report: its own output must carry the finding with what names the cause.
        report = pres[0][1] if pres and pres[0][0] != "not started" else ""
        line = re.search(r"^ERROR\s+(%s): [^\n]*" % preflight_expect, report, re.M)
        missing = [w for w in ctx["must_name"] if not line or w not in line.group(0)]
        if missing:
            print("FAIL %s: rank 0's report does not name %s: %s" % (
                a.cause, ", ".join(missing), line.group(0) if line else report[-1500:]))
            ok = False
    # The finding with its ranks and hosts; its fix (after " -> ") is in the logs.
    named = m.group(0).split(" -> ")[0][:300] if m else "nothing named"
    print("| %s (%s) | %s | %s, every rank stopped after %.1f s |" % (a.cause, what, stack, named, ptook))
    print("logs: %s" % a.logdir)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
