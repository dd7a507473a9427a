"""One rank of a world (started by launch.py, directly or through torchrun), and what the launcher
does when the world is over: the JUnit of every rank's results, rebuilt from the journals when
the world did not end by itself."""
import json
import os
import sys

from . import report
from .launch import parse_world
from .runner import Context, WorldInfo, merge, plan, run_cases, store_timeout, summary_line


def _journal_rank(rank, size):
    return rank if size > 1 else -1


def write_junit(path, results, start_ms):
    """Writes the JUnit of `results` to `path`; False, said in one line, where that fails after all
    (the path was checked before the first case, but a disk fills or a folder goes meanwhile)."""
    try:
        report.write_atomic(path, report.junit_xml(results, start_ms=start_ms))
        return True
    except OSError as e:
        print("gpucts_python_suites: the JUnit was not written: %s" % e, file=sys.stderr, flush=True)
        return False


def write_outcome(results, args, workdir, start_ms):
    code = report.exit_code(results)
    if args.junit_output and not write_junit(args.junit_output, results, start_ms):
        code = 1
    if workdir:
        report.write_atomic(os.path.join(workdir, "result.json"), json.dumps({"code": code}))
    print(summary_line(results), flush=True)
    return code


def run_skipped(world, cases, args, jdir, test):
    """A world that cannot start here: every case reported skipped with the reason, no process group."""
    path = report.journal_path(jdir, test, 0, world.size) if jdir else ""
    journal = report.Journal(path, _journal_rank(0, world.size))
    ctx = Context(world, 0, 0, None, None)
    start_ms = report.now_ms()
    results = run_cases(cases, ctx, journal)
    journal.close()
    return write_outcome(results, args, "", start_ms)


def worker_main(args):
    rank = int(os.environ["RANK"])
    size = int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", "0"))
    kind, _ = parse_world(args.world)
    world = WorldInfo(kind if kind != "ranks" else str(size), size, args.backend, args.launcher)
    test = os.environ.get("GPUCTS_TEST_NAME", "gpucts_py")
    jdir = os.environ.get("GPUCTS_PY_JOURNAL_DIR") or os.environ.get("GPUCTS_JOURNAL_DIR") or args.workdir
    journal = report.Journal(report.journal_path(jdir, test, rank, size), _journal_rank(rank, size))
    if args.workdir:
        report.write_atomic(os.path.join(args.workdir, "pid.%d" % rank), str(os.getpid()))
    try:
        import torch
        import torch.distributed as dist
        host, port = os.environ["GPUCTS_PY_STORE"].rsplit(":", 1)
        timeout = store_timeout(args.deadline_at)
        store = dist.TCPStore(host, int(port), size, False, timeout)
        device = torch.device("cpu")
        if world.backend == "nccl":
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
        # Parity against a single process is only meaningful without TF32 (as PyTorch's own tests).
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        kw = {}
        import inspect
        if world.backend == "nccl" and "device_id" in inspect.signature(dist.init_process_group).parameters:
            kw["device_id"] = device
        dist.init_process_group(world.backend, store=dist.PrefixStore("gpucts/pg", store), rank=rank,
                                world_size=size, timeout=timeout, **kw)
        results_store = dist.PrefixStore("gpucts/results", store)
    except Exception as e:
        reason = "could not join the world: %s: %s" % (type(e).__name__, e)
        journal.write("bootstrap", rank=_journal_rank(rank, size), time_ms=report.now_ms(), reason=reason)
        print("[rank %d] gpucts_python_suites: %s" % (rank, reason), file=sys.stderr, flush=True)
        return 3
    ctx = Context(world, rank, local, device, results_store)
    start_ms = report.now_ms()
    resumed = args.first_case > 0
    results = run_cases(plan(world, args.filter)[args.first_case:], ctx, journal, results_store, resumed)
    journal.close()
    if rank == 0 and resumed:
        # The launcher writes the JUnit of every world it started; this one's results go to it.
        report.write_atomic(os.path.join(args.workdir, "results.json"),
                            json.dumps([report.result_to_dict(r) for r in results]))
    elif rank == 0:
        write_outcome(results, args, args.workdir, start_ms)
    try:
        # Everyone is past the last case (rank 0 released it); leave the communicator together.
        results_store.set("done/%d" % rank, "1")
        for r in range(size):
            results_store.get("done/%d" % r)
        dist.destroy_process_group()
    except Exception as e:
        print("[rank %d] gpucts_python_suites: at the end: %s: %s" % (rank, type(e).__name__, e),
              file=sys.stderr, flush=True)
    return 0


def note_watchdog(jdir, test, size, why):
    """Appends a watchdog line to the journal of every rank that had not ended."""
    for r in range(size):
        path = report.journal_path(jdir, test, r, size)
        if not os.path.exists(path):
            continue
        _, running, ended = report.read_journal(path)
        if not ended:
            j = report.Journal(path, _journal_rank(r, size))
            j.write("watchdog", rank=_journal_rank(r, size), time_ms=report.now_ms(), reason=why,
                    case=(running or {}).get("case", ""), exit_code=124)
            j.close()


def results_from_journals(cases, jdir, test, size, why):
    """The world's results from its journals: finished cases as recorded, the running case failed
    ("did not finish"), the cases never reached failed ("did not run"), each naming the reason."""
    ranks = [report.read_journal(report.journal_path(jdir, test, r, size)) for r in range(size)]
    out = []
    for c in cases:
        key = c.suite + "." + c.name
        per_rank, reached = [], False
        for r, (finished, running, _) in enumerate(ranks):
            if key in finished:
                ev = finished[key]
                reached = True
                per_rank.append({"status": ev.get("result", "failed"), "message": ev.get("message", ""),
                                 "detail": "", "time_s": ev.get("duration_ms", 0) / 1000.0,
                                 "start_ms": ev.get("time_ms", 0) - ev.get("duration_ms", 0), "props": {}})
            elif running and running.get("case") == key:
                reached = True
                per_rank.append({"status": "failed", "message": "did not finish: " + why, "detail": "",
                                 "time_s": max(0.0, (report.now_ms() - running.get("time_ms", 0)) / 1000.0),
                                 "start_ms": running.get("time_ms", 0), "props": {}})
            else:
                per_rank.append({"status": "failed", "message": "did not run: " + why, "detail": "",
                                 "time_s": 0.0, "start_ms": report.now_ms(), "props": {}})
        if reached:
            out.append(merge(c, per_rank))
        else:
            out.append(report.Result(c.suite, c.name, "failed", "did not run: " + why, "", 0.0, report.now_ms()))
    return out


def end_stalled_case(jdir, test, size, case, posted, message):
    """Ends `case` in the journal of every rank that did not leave it (the launcher ends that world),
    so each journal holds every case of every world it took part in."""
    for r in range(size):
        path = report.journal_path(jdir, test, r, size)
        if r in posted or not os.path.exists(path):
            continue
        finished, running, _ = report.read_journal(path)
        if case.suite + "." + case.name in finished:
            continue  # it came out of the case after all, before the launcher ended it
        j = report.Journal(path, _journal_rank(r, size))
        j.end(case.suite, case.name, "failed", message, (running or {}).get("time_ms", report.now_ms()))
        j.close()


def finish_world(world, cases, args, jdir, test, workdir, procs, why, start_ms, earlier=()):
    """The outcome of the launcher's last world (`cases`: its cases), after `earlier` (the results
    of the worlds before it, each ended after a case that stalled)."""
    result_file = os.path.join(workdir, "result.json")
    results_file = os.path.join(workdir, "results.json")
    codes = [p.returncode for p in procs]
    try:
        if not why and (os.path.exists(results_file) or os.path.exists(result_file)):
            if os.path.exists(results_file):  # a resumed world: its rank 0 left its results here
                with open(results_file, encoding="utf-8") as f:
                    results = list(earlier) + [report.result_from_dict(d) for d in json.load(f)]
                code = write_outcome(results, args, "", start_ms)
            else:  # the first world: its rank 0 wrote the outcome itself
                code = json.load(open(result_file))["code"]
            bad = [(i, c) for i, c in enumerate(codes) if c != 0]
            if bad:
                print("gpucts_python_suites: process %d exited with %s after the run" % bad[0], file=sys.stderr)
                code = 1
            return code
        if not why:
            why = "the world ended without its results (process exit codes %s)" % codes
        results = list(earlier) + results_from_journals(cases, jdir, test, world.size, why)
        print("gpucts_python_suites: " + why, file=sys.stderr, flush=True)
        code = write_outcome(results, args, "", start_ms)
        return max(code, 1) if code != 77 else 1
    finally:
        _cleanup(workdir)


def _cleanup(workdir):
    for name in os.listdir(workdir):
        try:
            os.remove(os.path.join(workdir, name))
        except OSError:
            pass
    try:
        os.rmdir(workdir)
    except OSError:
        pass
