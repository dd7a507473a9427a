"""gpucts preflight for the user's own job: every rank's stack, settings and placement compared before
the first NCCL call, over the job's own rendezvous address (never NCCL), one report, one exit status.

    import gpucts_preflight; gpucts_preflight.check()        # top of a training script
    torchrun ... -m gpucts_preflight -- train.py --lr 1e-3  # or around it
    Trainer(callbacks=[gpucts_preflight.lightning.GpuctsPreflight()])

Environment: GPUCTS_PREFLIGHT_TIMEOUT_S (default 20), GPUCTS_PREFLIGHT_PORT (absolute) or
GPUCTS_PREFLIGHT_PORT_OFFSET (from MASTER_PORT, default 1000), GPUCTS_PREFLIGHT=0 (skip it),
GPUCTS_PREFLIGHT_WARN_ONLY=1 (report but never stop the job), GPUCTS_HOME / gpucts on PATH.
"""
import json
import os
import sys
import time

from . import compare, launcher, probe

__all__ = ["check", "Report", "PreflightFailed"]
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class PreflightFailed(SystemExit):
    """Raised on every rank when the preflight found a problem: the exit status is the report's."""


class Report:
    def __init__(self, d):
        self.status = d["status"]
        self.text = d["text"]
        self.problems = d.get("problems", [])
        self.processes = d.get("processes")
        self.seconds = d.get("seconds")
        self.printer_pid = d.get("printer_pid")

    @property
    def ok(self):
        return self.status == 0


def _number(name, default, kind=float):
    v = os.environ.get(name)
    if v is None or v == "":
        return default
    try:
        x = kind(v)
        if x <= 0:
            raise ValueError
        return x
    except ValueError:
        sys.stderr.write("gpucts preflight: %s=%r is not a positive number\n" % (name, v))
        raise SystemExit(EXIT_BAD_INPUT)


def _store_port(ident):
    if os.environ.get("GPUCTS_PREFLIGHT_PORT"):
        return _number("GPUCTS_PREFLIGHT_PORT", 0, int)
    off = _number("GPUCTS_PREFLIGHT_PORT_OFFSET", 1000, int)
    port = ident.master_port + off
    return port if port < 65536 else ident.master_port - off


def _render(problems, fps, ranks, seconds, via, simulated):
    errors = [p for p in problems if p.severity == "error"]
    head = "gpucts preflight: %d rank(s)%s, %s: %s (%d error(s), %d warning(s)) in %.1f s" % (
        ranks, simulated, via, "FAIL" if errors else "PASS", len(errors), len(problems) - len(errors), seconds)
    lines = [head]
    for fp in fps:
        n = fp.get("nccl") or {}
        t = fp.get("torch") or {}
        lines.append("  rank %s on %s: NCCL %s (%s), torch %s (CUDA %s), driver %s, GPU %s" % (
            compare.rank_of(fp), compare.host_name(fp), n.get("runtime", "?"), n.get("library", "no libnccl mapped"),
            t.get("version", "?"), t.get("cuda", "?"), (fp.get("driver") or {}).get("version", "?"),
            (fp.get("gpucts_rank") or {}).get("gpu_uuid", "?")))
    order = sorted(problems, key=lambda p: (p.severity != "error", p.id))
    lines += [p.line() for p in order]
    if errors:
        lines.append("gpucts preflight: the job was stopped before any NCCL communicator")
    return "\n".join(lines)


def _evaluate(fps, missing, twice, ident, started):
    """The checker's report: gpucts check over the ranks where installed, plus the job-level checks."""
    port_note = next((f["gpucts_rank"]["master_port_taken"] for f in fps
                      if (f.get("gpucts_rank") or {}).get("master_port_taken")), None)
    problems = compare.compare(fps, ident.world_size, missing, twice, port_note)
    via = "own probe"
    exe = None
    try:
        from . import gpucts_tool
        exe = gpucts_tool.find()
        if exe and fps and all(fp.get("probe", "").startswith("gpucts fingerprint") for fp in fps):
            findings, _ = gpucts_tool.check(exe, fps, 60)
            via = "gpucts check --job-ranks (%s)" % exe
            own_ids = set(p.id for p in problems)
            for f in findings:
                if f.get("id") in own_ids:
                    continue  # the same cause named once, with its ranks and hosts
                problems.append(compare.Problem(f.get("id", "?"), "%s: %s" % (f.get("subject", ""), f.get("message", "")),
                                                [], [], f.get("fix") or f.get("source", ""), f.get("severity", "error")))
    except Exception as e:  # the install tree's check failing must not hide the own comparisons
        problems.append(compare.Problem("gpucts-check-failed", "%s: %s" % (exe, e), [], [],
                                        "see gpucts check's own message", "warning"))
    hosts, machines = compare.simulated_hosts(fps) if fps else (0, 0)
    sim = " on %d simulated hosts (NCCL_HOSTID) of %d machine(s)" % (hosts, machines) if hosts > machines else ""
    errors = [p for p in problems if p.severity == "error"]
    return {"status": EXIT_FAILED if errors else 0,
            "text": _render(problems, fps, len(fps), time.monotonic() - started, via, sim),
            "problems": [p.to_json() for p in problems], "processes": len(fps) + sum(len(v) - 1 for v in twice.values()),
            "seconds": round(time.monotonic() - started, 3)}


def _probe(ident):
    own = probe.fingerprint(ident)
    from . import gpucts_tool
    exe = gpucts_tool.find()
    if exe:
        try:
            return gpucts_tool.fingerprint(exe, own, 60)
        except Exception as e:
            own["gpucts_error"] = str(e)
    return own


def run(rank=None, world_size=None, env=None):
    """The preflight, returning the Report (every rank gets the same one); nothing exits."""
    started = time.monotonic()
    try:
        ident = launcher.Identity(env, rank, world_size)
    except launcher.LauncherError as e:
        return Report({"status": EXIT_BAD_INPUT, "text": "gpucts preflight: " + str(e), "printer_pid": os.getpid()})
    timeout = _number("GPUCTS_PREFLIGHT_TIMEOUT_S", 20.0)
    if ident.rank is None or ident.world_size is None or ident.world_size <= 1 or not ident.master_addr \
            or ident.master_port is None:
        fp = _probe(ident)
        if ident.rank is None:
            ident.rank = 0
        d = _evaluate([fp], [], {}, ident, started)
        d["printer_pid"] = os.getpid()
        d["text"] += "\n(gpucts preflight: one process, no rendezvous: RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT " \
                     "or a launcher's variables absent)"
        return Report(d)
    try:
        import torch.distributed  # noqa: F401  (the rendezvous needs it)
    except Exception:
        # This rank cannot even import torch (a preloaded libnccl lacking a symbol torch needs): it
        # reports its own fingerprint; the other ranks name it as not joined.
        fp = _probe(ident)
        d = _evaluate([fp], [], {}, ident, started)
        d["printer_pid"] = os.getpid()
        d["text"] += "\n(gpucts preflight: rank %s could not join the others: torch does not import)" % ident.rank
        return Report(d)
    from . import gather
    # The process that will host the job's own store must find MASTER_PORT free (torchrun's agent holds it).
    port_note = None
    if ident.rank == 0 and not ident.agent_store and not ident.vars.get("TORCHELASTIC_RUN_ID") \
            and gather._is_local_address(ident.master_addr):
        port_note = gather.port_taken(ident.master_addr, ident.master_port)
    if ident.rank != 0:
        time.sleep(0.3)  # rank 0 hosts the preflight's store where it is there
    try:
        rdv = gather.Rendezvous(ident.master_addr, _store_port(ident), ident.job_id, timeout)
        slot = gather.join(rdv, ident.rank, {"host": compare.host_name({"host": __import__("socket").gethostname(),
                                                                         "gpucts_rank": _hostid_info()}),
                                             "pid": os.getpid()})
        fp = _probe(ident)
        if port_note:
            fp["gpucts_rank"]["master_port_taken"] = port_note
        gather.publish(rdv, ident.rank, slot, fp)
        report = None
        if rdv.server:
            fps, missing, twice = gather.collect(rdv, ident.world_size, started)
            report = _evaluate(fps, missing, twice, ident, started)
            # Rank 0 prints the report; where rank 0 never joined, the checker does.
            zero = [f for f in fps if compare.rank_of(f) == 0]
            report["printer_pid"] = (zero[0].get("gpucts_rank") or {}).get("pid") if zero else os.getpid()
        return Report(gather.finish(rdv, ident.rank, slot, report, ident.world_size))
    except gather.GatherError as e:
        return Report({"status": EXIT_FAILED, "text": "gpucts preflight: rank %d: %s" % (ident.rank, e),
                       "printer_pid": os.getpid()})


def _hostid_info():
    raw = probe.hostid_bytes()
    return {"nccl_hostid": probe.printable(raw)} if raw is not None else {}


def check(rank=None, world_size=None, exit=True):
    """Runs the preflight; on a problem every rank stops with the same status (PreflightFailed), rank 0
    having printed the report. Returns the Report when all is well (or exit=False)."""
    if os.environ.get("GPUCTS_PREFLIGHT") == "0":
        return None
    rep = run(rank, world_size)
    me = rank if rank is not None else launcher.Identity().rank
    if rep.printer_pid == os.getpid():
        sys.stderr.write(rep.text + "\n")
    elif not rep.ok:
        sys.stderr.write("gpucts preflight: FAIL on rank %s (rank 0 prints the report): %s\n" % (
            me, next((p["cause"] for p in rep.problems if p.get("severity") == "error"), rep.text.split("\n")[0])))
    sys.stderr.flush()
    if exit and not rep.ok and os.environ.get("GPUCTS_PREFLIGHT_WARN_ONLY") != "1":
        raise PreflightFailed(rep.status)
    return rep
