"""gpucts preflight for the user's own job: every rank's stack, settings and placement compared before
the first NCCL call, over the job's own rendezvous address (never NCCL), one report, one exit status.

    import gpucts_preflight; gpucts_preflight.check()        # top of a training script
    torchrun ... -m gpucts_preflight -- train.py --lr 1e-3  # or around it
    Trainer(callbacks=[gpucts_preflight.lightning.GpuctsPreflight()])

Environment: GPUCTS_PREFLIGHT_TIMEOUT_S (default 20), GPUCTS_PREFLIGHT_PORT (absolute) or
GPUCTS_PREFLIGHT_PORT_OFFSET (from MASTER_PORT, default 1000), GPUCTS_PREFLIGHT=0 (skip it),
GPUCTS_PREFLIGHT_WARN_ONLY=1 (report but never stop the job), GPUCTS_HOME / gpucts on PATH.
"""
import importlib.util
import json
import os
import socket
import sys
import time

# gpucts_common (the floor shared with gpucts' suites) sits beside this package in the install tree
# (share/gpucts/python); in a source checkout it is python/ beside preflight/, added at the end of the
# search path only where nothing else provides it.
if importlib.util.find_spec("gpucts_common") is None:
    _source_tree = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "python")
    if os.path.isdir(os.path.join(_source_tree, "gpucts_common")):
        sys.path.append(_source_tree)

try:
    from gpucts_common import launcher  # noqa: E402
except ImportError as e:
    raise ImportError("gpucts_preflight needs the package gpucts_common on PYTHONPATH (share/gpucts/python of the "
                      "install tree holds both; python/ of the source tree): %s" % e) from None
from . import compare, probe, settings  # noqa: E402

__all__ = ["check", "Report", "PreflightFailed"]
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
RANK_LINES = 64  # the report lists this many ranks' stacks; the problems name every rank involved


class PreflightFailed(SystemExit):
    """Raised on every rank when the preflight found a problem: the exit status is the report's."""


class Report:
    def __init__(self, d, rank=None):
        self.status = d["status"]
        self.text = d["text"]
        self.problems = d.get("problems", [])
        self.processes = d.get("processes")
        self.seconds = d.get("seconds")
        self.printer_pid = d.get("printer_pid")
        self.rank = rank
        self.stop = not self.ok  # check() clears it under GPUCTS_PREFLIGHT_WARN_ONLY=1 (never for bad input)

    @property
    def ok(self):
        return self.status == 0


def _bad_input(e, rank=None):
    """One line naming the variable, status 2: the preflight cannot run as configured."""
    return Report({"status": EXIT_BAD_INPUT, "text": "gpucts preflight: " + str(e), "printer_pid": os.getpid()}, rank)


def _render(problems, fps, ranks, seconds, via, simulated):
    errors = [p for p in problems if p.severity == "error"]
    head = "gpucts preflight: %d rank(s)%s, %s: %s (%d error(s), %d warning(s)) in %.1f s" % (
        ranks, simulated, via, "FAIL" if errors else "PASS", len(errors), len(problems) - len(errors), seconds)
    lines = [head]
    for fp in fps[:RANK_LINES]:
        n = fp.get("nccl") or {}
        t = fp.get("torch") or {}
        lines.append("  rank %s on %s: NCCL %s (%s), torch %s (CUDA %s), driver %s, GPU %s" % (
            compare.rank_of(fp), compare.host_name(fp), n.get("runtime", "?"), n.get("library", "no libnccl mapped"),
            t.get("version", "?"), t.get("cuda", "?"), (fp.get("driver") or {}).get("version", "?"),
            (fp.get("gpucts_rank") or {}).get("gpu_uuid", "?")))
    if len(fps) > RANK_LINES:
        lines.append("  ... and %d more rank(s)" % (len(fps) - RANK_LINES))
    order = sorted(problems, key=lambda p: (p.severity != "error", p.id))
    lines += [p.line() for p in order]
    if errors:
        lines.append("gpucts preflight: the job was stopped before any NCCL communicator")
    return "\n".join(lines)


def _evaluate(fps, missing, twice, ident, started, bad=()):
    """The checker's report: gpucts check over the ranks where installed, plus the job-level checks. bad:
    entries of the store that could not be believed (entries.EntryError), each one named."""
    port_note = next((f["gpucts_rank"]["master_port_taken"] for f in fps
                      if (f.get("gpucts_rank") or {}).get("master_port_taken")), None)
    problems = compare.compare(fps, ident.world_size, missing, twice, port_note)
    problems += [_entry_problem(e, []) for e in bad]
    # Where the installed gpucts was meant to probe and could not, the report says so: else it reads
    # as gpucts' check while only the own comparisons ran.
    unused = [fp for fp in fps if fp.get("gpucts_error")]
    if unused:
        problems.append(compare.Problem("gpucts-not-used", unused[0]["gpucts_error"],
                                        [compare.rank_of(fp) for fp in unused],
                                        [compare.host_name(fp) for fp in unused],
                                        "only the preflight's own probe ran there: point GPUCTS_HOME at a "
                                        "gpucts install tree (or unset it for gpucts on PATH)", "warning"))
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


def _entry_problem(e, ranks):
    """An entry of the store that could not be believed (entries.EntryError), as a problem of the report."""
    if e.foreign:
        return compare.Problem("store-entry-foreign", e.sentence(), ranks, [], "stop the process that writes to this "
                               "job's preflight store (another job on the same MASTER_PORT or GPUCTS_PREFLIGHT_PORT, a "
                               "process left from an earlier run), or give this job other ports")
    return compare.Problem("store-entry-invalid", e.sentence(), ranks, [],
                           "run the same gpucts_preflight (and gpucts) on every rank of the job")


def _stopped(ident, problem):
    """The Report of a process that could not finish the preflight: its own one problem."""
    return Report({"status": EXIT_FAILED, "printer_pid": os.getpid(), "problems": [problem.to_json()],
                   "text": "gpucts preflight: rank %d: FAIL before rank 0's report\n%s" % (ident.rank, problem.line())},
                  ident.rank)


def _probe(ident):
    own = probe.fingerprint(ident)
    from . import gpucts_tool
    exe = gpucts_tool.find()
    if exe:
        try:
            return gpucts_tool.fingerprint(exe, own, 60)
        except Exception as e:
            own["gpucts_error"] = "%s: %s" % (exe, e)
    else:
        why = gpucts_tool.home_problem()
        if why:
            own["gpucts_error"] = why
    return own


def _fit(report, limit):
    """Cuts the report's problems and text until it fits one store entry (a job of thousands of ranks
    missing): the status and the first problems stay."""
    total, cut = len(report["problems"]), False
    while len(json.dumps(report)) > limit and (len(report["problems"]) > 1 or len(report["text"]) > 4096):
        report["problems"] = report["problems"][:max(len(report["problems"]) // 2, 1)]
        report["text"] = report["text"][:max(len(report["text"]) // 2, 4096)]
        cut = True
    if cut:
        report["text"] += "\n(gpucts preflight: the report was cut to fit the store; %d problem(s) in all)" % total


def _prefix(ident):
    """The job's keys: its id, and torchrun's restart count (the agent's store outlives a restart)."""
    return "gpucts_preflight/%s/%s" % (ident.job_id, "attempt%d/" % ident.restart_count if ident.restart_count else "")


def run(rank=None, world_size=None, env=None):
    """The preflight, returning the Report (every rank gets the same one); nothing exits."""
    started = time.monotonic()
    env = os.environ if env is None else env
    try:
        ident = launcher.Identity(env, rank, world_size)
        timeout = settings.timeout_s(env)
    except (launcher.LauncherError, settings.SettingsError) as e:
        return _bad_input(e, rank)
    if ident.rank is None or ident.world_size is None or ident.world_size <= 1 or not ident.master_addr \
            or ident.master_port is None:
        fp = _probe(ident)
        if ident.rank is None:
            ident.rank = 0
        d = _evaluate([fp], [], {}, ident, started)
        d["printer_pid"] = os.getpid()
        d["text"] += "\n(gpucts preflight: one process, no rendezvous: RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT " \
                     "or a launcher's variables absent)"
        return Report(d, ident.rank)
    try:
        # Under torchrun's agent store every rank is its client; else rank 0 hosts the preflight's own.
        port = ident.master_port if ident.agent_store else settings.store_port(ident.master_port, env)
    except settings.SettingsError as e:
        return _bad_input(e, ident.rank)
    try:
        import torch.distributed  # noqa: F401  (the rendezvous needs it)
    except Exception:
        # This rank cannot even import torch (a preloaded libnccl lacking a symbol torch needs): it
        # reports its own fingerprint; the other ranks name it as not joined.
        fp = _probe(ident)
        d = _evaluate([fp], [], {}, ident, started)
        d["printer_pid"] = os.getpid()
        d["text"] += "\n(gpucts preflight: rank %s could not join the others: torch does not import)" % ident.rank
        return Report(d, ident.rank)
    from . import entries, gather
    # The process that will host the job's own store must find MASTER_PORT free (torchrun's agent holds it).
    port_note = None
    if ident.rank == 0 and not ident.agent_store and not ident.vars.get("TORCHELASTIC_RUN_ID") \
            and gather.is_local_address(ident.master_addr):
        port_note = gather.port_taken(ident.master_addr, ident.master_port)
    rdv = None
    try:
        rdv = gather.Rendezvous(ident.master_addr, port, _prefix(ident), timeout,
                                ident.rank == 0 and not ident.agent_store)
        slot, checker = gather.open_run(rdv, ident.rank)
        gather.join(rdv, ident.rank, slot, {"host": compare.host_name({"host": socket.gethostname(),
                                                                       "gpucts_rank": _hostid_info()}),
                                            "pid": os.getpid()})
        fp = _probe(ident)
        if port_note:
            fp["gpucts_rank"]["master_port_taken"] = port_note
        gather.publish(rdv, ident.rank, slot, fp)
        report = None
        if checker:
            fps, missing, twice, bad, members = gather.collect(rdv, ident.world_size)
            report = _evaluate(fps, missing, twice, ident, started, bad)
            report.update(printer_pid=os.getpid(), members=members, processes=max(len(members), 1))
            _fit(report, entries.MAX_ENTRY_BYTES)
        return Report(gather.finish(rdv, ident.rank, slot, report), ident.rank)
    except gather.GatherError as e:
        return _stopped(ident, compare.Problem(e.id, str(e), [ident.rank], [], e.fix))
    except entries.EntryError as e:
        return _stopped(ident, _entry_problem(e, [ident.rank]))
    finally:
        if rdv is not None:
            rdv.close()


def _hostid_info():
    raw = probe.hostid_bytes()
    return {"nccl_hostid": probe.printable(raw)} if raw is not None else {}


def check(rank=None, world_size=None, exit=True):
    """Runs the preflight; on a problem every rank stops with the same status (PreflightFailed), rank 0
    having printed the report; a variable that is not what it must be stops this process with status 2
    after one line naming it. Returns the Report when all is well (or exit=False; Report.stop then says
    whether the job must stop), None where GPUCTS_PREFLIGHT=0."""
    try:
        if not settings.enabled():
            return None
        warn_only = settings.switch("GPUCTS_PREFLIGHT_WARN_ONLY")
        rep = run(rank, world_size)
    except settings.SettingsError as e:
        rep, warn_only = _bad_input(e, rank), False
    if rep.printer_pid == os.getpid():
        sys.stderr.write(rep.text + "\n")
    elif not rep.ok:
        sys.stderr.write("gpucts preflight: FAIL on rank %s (rank 0 prints the report): %s\n" % (
            rep.rank, next((p["cause"] for p in rep.problems if p.get("severity") == "error"),
                           rep.text.split("\n")[0])))
    sys.stderr.flush()
    rep.stop = not rep.ok and (rep.status == EXIT_BAD_INPUT or not warn_only)
    if exit and rep.stop:
        raise PreflightFailed(rep.status)
    return rep
