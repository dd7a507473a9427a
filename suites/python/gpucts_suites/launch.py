"""Starting a world the way users start one, with a hard deadline so nothing hangs.

Worlds: "1" (one rank), "<n>" (n ranks on this host: Gloo on the CPU), "sim<n>" (n simulated
hosts on one GPU: each rank its own NCCL_HOSTID, NCCL_SOCKET_IFNAME=lo, LOCAL_RANK=0,
NODE_RANK=rank), "gpus" (one process per visible GPU). Ranks are started through torchrun
(`python -m torch.distributed.run`, the same interpreter) where it is there, else as plain
subprocesses with the torchrun variables set.

Rendezvous cannot race: this process creates the TCPStore server itself on port 0 and keeps it
open for the world's life; the ranks (and torchrun's c10d rendezvous, as a client) connect to the
port it was given. No port is ever picked by binding and releasing it.

No rank outlives the launcher, even one killed with SIGKILL: every process it starts (a rank, or a
torchrun agent, whose ranks do the same towards it) asks the kernel for SIGKILL when its parent
ends (die_with_parent)."""
import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

from . import report
from .inject import InjectError, is_ascii_decimal, plan_from_env
from .runner import WorldInfo, plan, print_result

_DROP_PREFIXES = ("SLURM_", "TORCHELASTIC_", "LSB_", "PMI_", "PMIX_", "OMPI_COMM_WORLD_")
_DROP = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK",
         "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def apply_ctest_resource_groups():
    """CTest's RESOURCE_GROUPS (gpus:1 each) -> CUDA_VISIBLE_DEVICES, as the C++ suites do."""
    n = os.environ.get("CTEST_RESOURCE_GROUP_COUNT")
    if not n or not n.isdigit():
        return
    outer = [x for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x]
    ids = []
    for g in range(int(n)):
        for res in os.environ.get("CTEST_RESOURCE_GROUP_%d_GPUS" % g, "").split(";"):
            for kv in res.split(","):
                if kv.startswith("id:"):
                    i = kv[3:]
                    if outer and i.isdigit() and int(i) < len(outer):
                        i = outer[int(i)]
                    ids.append(i)
    if ids:
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(ids)


def parse_world(text):
    """"1", "<n>", "sim<n>", "gpus" -> (kind, n or None); ValueError with the reason."""
    if text == "gpus":
        return "gpus", None
    body = text[3:] if text.startswith("sim") else text
    if not is_ascii_decimal(body) or not 1 <= int(body) <= 64:
        raise ValueError("--world=%s: expected 1, <n>, sim<n> (n from 1 to 64) or gpus" % text)
    return ("sim" if text.startswith("sim") else "ranks"), int(body)


def probe(kind, n, backend):
    """The world as this machine allows it: (WorldInfo fields, skip reason). Imports torch."""
    try:
        import torch
        import torch.distributed as dist
    except Exception as e:  # ImportError, or a broken install raising something else
        size = n or 2
        return size, "", "torch is not importable by %s: %s: %s" % (sys.executable, type(e).__name__, e)
    version = torch.__version__
    if not dist.is_available():
        return n or 2, "", "torch %s is built without torch.distributed" % version
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    nccl = dist.is_nccl_available()
    if backend == "auto":
        backend = "nccl" if gpus and nccl else "gloo"
    if kind == "gpus":
        n = max(gpus, 2)
        if backend != "nccl":
            return n, backend, "one process per GPU runs over NCCL; this world is --backend=%s" % backend
    if backend == "nccl":
        if not nccl:
            return n, backend, "torch %s is built without NCCL (ProcessGroupNCCL absent)" % version
        if gpus == 0:
            return n, backend, ("no GPU visible to torch %s (torch.cuda.device_count() == 0): ProcessGroupNCCL "
                                "needs one; the Gloo entries run these cases on the CPU" % version)
        if kind == "gpus" and gpus < 2:
            return n, backend, "one process per GPU needs 2 GPUs or more; %d visible" % gpus
        if kind == "ranks" and n > gpus:
            return n, backend, ("%d NCCL ranks need %d GPUs (%d visible); sim%d runs them as simulated hosts "
                                "on one GPU" % (n, n, gpus, n))
    elif backend == "gloo" and not dist.is_gloo_available():
        return n, backend, "torch %s is built without Gloo" % version
    return n, backend, ""


def torchrun_problem():
    """Why torchrun (torch.distributed.run of this interpreter) cannot start a world here, or ""."""
    try:
        import torch
        import torch.distributed.run  # noqa: F401
        from torch.distributed.elastic.multiprocessing.api import Std, to_map
        # torch 1.13's elastic agent cannot parse its own default redirects on Python 3.11.
        to_map(Std.from_str("0"), 1)
        return ""
    except Exception as e:
        return "torchrun of torch %s does not work with Python %d.%d here (%s: %s)" % (
            getattr(sys.modules.get("torch"), "__version__", "?"), sys.version_info[0], sys.version_info[1],
            type(e).__name__, e)


def rank_env(world, rank, port, base_env):
    env = {k: v for k, v in base_env.items() if k not in _DROP and not k.startswith(_DROP_PREFIXES)}
    env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(world.size),
                "PYTHONUNBUFFERED": "1"})
    env.setdefault("OMP_NUM_THREADS", "1")
    if rank is not None:
        env["RANK"] = str(rank)
        env["LOCAL_RANK"] = "0" if world.kind != "gpus" else str(rank)
        env["NODE_RANK"] = str(rank) if world.kind != "gpus" else "0"
    if world.simulated_hosts and rank is not None:
        # Each rank is a host of its own to NCCL, joined over its socket transport on loopback.
        env["NCCL_HOSTID"] = "%s-simhost%d" % (socket.gethostname(), rank)
        env.setdefault("NCCL_SOCKET_IFNAME", "lo")
        env.setdefault("NCCL_IB_DISABLE", "1")
    return env


_PARENT_PID = "GPUCTS_PY_PARENT_PID"  # the process that started this one, set by whoever started it
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent():
    """Makes this process get SIGKILL when the process that started it ends (Linux prctl
    PR_SET_PDEATHSIG), so that a launcher killed with SIGKILL leaves no rank behind. The kernel sends
    it when the *thread* that forked this process ends: the launcher starts ranks from its main
    thread only. A parent that ended before the call left this process to another one: it exits."""
    parent = os.environ.get(_PARENT_PID, "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        print("gpucts_python_suites: prctl(PR_SET_PDEATHSIG) failed: %s: this process may outlive its launcher"
              % os.strerror(ctypes.get_errno()), file=sys.stderr, flush=True)
    if os.getppid() != int(parent):  # the launcher was gone before the call could take effect
        print("gpucts_python_suites: the launcher (pid %s) is gone: exiting" % parent, file=sys.stderr, flush=True)
        os._exit(1)


def torchrun_agent(argv):
    """torchrun (torch.distributed.run) with `argv`, dying with the launcher, and its ranks with it."""
    die_with_parent()
    os.environ[_PARENT_PID] = str(os.getpid())
    from torch.distributed.run import main
    main(argv)


def _kill_world(procs, workdir):
    """SIGTERM every process group and every rank that left its pid, then SIGKILL what is left."""
    pids = set()
    for name in os.listdir(workdir):
        if name.startswith("pid."):
            try:
                pids.add(int(open(os.path.join(workdir, name)).read().strip()))
            except (OSError, ValueError):
                pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, sig)
                except OSError:
                    pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        end = time.time() + 5
        while time.time() < end and any(p.poll() is None for p in procs):
            time.sleep(0.1)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


_SIGNALS = []  # what ended the launcher early: the ranks run in sessions of their own, so it ends them


def _note_signal(signum, _frame):
    _SIGNALS.append(signum)


def _stop_reason(args, deadline_at):
    """Why no world may run on: a signal, then the deadline ("" while neither holds)."""
    if _SIGNALS:
        return "interrupted by %s" % signal.Signals(_SIGNALS[0]).name
    if time.time() > deadline_at:
        return "the world's deadline of %d s passed" % args.deadline
    return ""


def run_world(args, worker_args):
    """Launches the ranks, waits within the deadline, and returns the exit code."""
    apply_ctest_resource_groups()
    kind, n = parse_world(args.world)
    size, backend, skip = probe(kind, n, args.backend)
    launcher = args.launcher
    problem = torchrun_problem() if not skip and launcher != "subprocess" else ""
    if launcher == "auto":
        launcher = "subprocess" if skip or problem else "torchrun"
        if problem:
            print("gpucts_python_suites: %s: starting the ranks as plain processes" % problem, flush=True)
    elif launcher == "torchrun" and problem:
        skip = "--launcher=torchrun: " + problem
    world = WorldInfo(kind if kind != "ranks" else str(size), size, backend, launcher, skip)
    test = os.environ.get("GPUCTS_TEST_NAME", "gpucts_py")
    jdir = os.environ.get("GPUCTS_JOURNAL_DIR", "")
    start_ms = report.now_ms()
    cases = plan(world, args.filter)
    if not cases:
        print("gpucts_python_suites: --filter=%s selects no case of world %s" % (args.filter, args.world),
              file=sys.stderr)
        return 2
    try:
        plan_from_env().check_world(size, cases)
    except InjectError as e:
        print("gpucts_python_suites: %s" % e, file=sys.stderr)
        return 2
    deadline_at = time.time() + args.deadline
    print("gpucts_python_suites: world %s: %d rank(s), backend %s, launcher %s, %d case(s), deadline %d s"
          % (args.world, size, backend or "none", launcher, len(cases), args.deadline), flush=True)
    if skip:
        print("gpucts_python_suites: every case skips: " + skip, flush=True)
        from .worker import run_skipped
        return run_skipped(world, cases, args, jdir, test)

    # One world runs the cases; where a case stalls (a rank left it, its peers wait on it), the
    # world is ended and a new one runs the cases after it, until they are done or the deadline.
    earlier, first = [], 0
    # From here a signal (qualify's deadline or ^C) is noted and ends the world in order: the ranks
    # run in sessions of their own and would outlive this process.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _note_signal)
    while True:
        server, procs, workdir = _start_world(args, worker_args, world, kind, size, launcher, first, deadline_at,
                                              jdir, test)
        stall = args.stall if size > 1 else 0
        watch = StallWatch(server, size, stall, args.case_timeout) if stall or args.case_timeout else None
        try:
            why, stalled = _wait_world(procs, args, deadline_at, watch)
            if stalled is not None:
                # Ended before its results are read: no rank writes to its journal meanwhile.
                _kill_world(procs, workdir)
                index, posted = stalled
                segment = cases[first:]
                why, unfinished = watch.describe(segment[index], index, posted)
                earlier += watch.results(segment[: index + 1], unfinished)
        except BaseException:  # an interrupt, or a fault of this launcher: no rank outlives it
            _kill_world(procs, workdir)
            raise
        if stalled is None:
            if why:
                print("gpucts_python_suites: " + why + ": ending the world", file=sys.stderr, flush=True)
                from .worker import note_watchdog
                note_watchdog(jdir or workdir, test, size, why)
                _kill_world(procs, workdir)
            from .worker import finish_world
            rc = finish_world(world, cases[first:], args, jdir or workdir, test, workdir, procs, why, start_ms,
                              earlier)
            del server  # the store lives until every rank is gone
            return rc
        print_result(earlier[-1])  # rank 0 never came out of it to print it
        from .worker import _cleanup, end_stalled_case, note_watchdog, write_outcome
        end_stalled_case(jdir or workdir, test, size, segment[index], posted, unfinished)
        first += index + 1
        stop = _stop_reason(args, deadline_at)
        more = first < len(cases) and not stop
        print("gpucts_python_suites: %s: ending the world%s" % (
            why, "; a new one runs the %d case(s) from %s on" % (len(cases) - first, cases[first].display)
            if more else ""), file=sys.stderr, flush=True)
        if not more:  # this world was the last: its journals end here, saying why
            note_watchdog(jdir or workdir, test, size, stop or why)
        _cleanup(workdir)
        del server
        if not more:
            rest = [report.Result(c.suite, c.name, "failed", "did not run: " + stop, "", 0.0, report.now_ms())
                    for c in cases[first:]]
            code = write_outcome(earlier + rest, args, "", start_ms)
            return max(code, 1) if code != 77 else 1


def _start_world(args, worker_args, world, kind, size, launcher, first, deadline_at, jdir, test):
    """Starts the ranks of one world on a store of its own: (store server, processes, work folder)."""
    import torch.distributed as dist
    workdir = tempfile.mkdtemp(prefix="gpucts_py_")
    try:
        server = dist.TCPStore("127.0.0.1", 0, None, True,
                               datetime.timedelta(seconds=max(30, deadline_at - time.time())), wait_for_workers=False)
    except BaseException:  # no world starts: nothing of it stays behind
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    port = server.port
    base = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base["PYTHONPATH"] = pkg_root + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
    base["GPUCTS_PY_STORE"] = "127.0.0.1:%d" % port
    base["GPUCTS_PY_JOURNAL_DIR"] = jdir or workdir
    base["GPUCTS_TEST_NAME"] = test
    base[_PARENT_PID] = str(os.getpid())
    worker = [sys.executable, "-m", "gpucts_suites", "--worker", "--world=" + args.world,
              "--backend=" + world.backend, "--launcher=" + launcher, "--workdir=" + workdir,
              "--deadline-at=%d" % deadline_at, "--first-case=%d" % first] + worker_args
    procs = []
    run_id = "gpucts-" + uuid.uuid4().hex[:12]
    if launcher == "torchrun":
        # One torchrun per simulated host (the TorchElastic path of a multi-node job), one torchrun
        # with a process per GPU otherwise; c10d rendezvous on this process's store.
        agents = size if kind == "sim" else 1
        per_agent = 1 if kind == "sim" else size
        for a in range(agents):
            env = rank_env(world, None, port, base)
            if world.simulated_hosts:
                env["NCCL_HOSTID"] = "%s-simhost%d" % (socket.gethostname(), a)
                env.setdefault("NCCL_SOCKET_IFNAME", "lo")
                env.setdefault("NCCL_IB_DISABLE", "1")
            cmd = [sys.executable, "-m", "gpucts_suites.launch", "--nnodes=%d" % agents,
                   "--nproc_per_node=%d" % per_agent, "--rdzv_backend=c10d",
                   "--rdzv_endpoint=127.0.0.1:%d" % port, "--rdzv_id=" + run_id, "--rdzv_conf=is_host=false",
                   "--max_restarts=0", "--module"] + worker[2:]
            procs.append(subprocess.Popen(cmd, env=env, start_new_session=True))
    else:
        for r in range(size):
            procs.append(subprocess.Popen(worker, env=rank_env(world, r, port, base), start_new_session=True))
    return server, procs, workdir


def _wait_world(procs, args, deadline_at, watch):
    """Waits for the ranks: ("", None) when they ended, (why, None) at the deadline or when a rank
    died and the others did not follow, ("", (case index, ranks out of it)) when a case stalled."""
    while any(p.poll() is None for p in procs):
        stop = _stop_reason(args, deadline_at)
        if stop:
            return stop, None
        # A rank that died leaves the others waiting on it: give them a moment to notice, then end.
        dead = [i for i, p in enumerate(procs) if p.poll() not in (None, 0)]
        if dead:
            grace = time.time() + 30
            while time.time() < grace and any(p.poll() is None for p in procs) and not _SIGNALS:
                time.sleep(0.2)
            if _SIGNALS:
                return _stop_reason(args, deadline_at), None
            if any(p.poll() is None for p in procs):
                return "process %d exited with %d; the others did not finish within 30 s" % (
                    dead[0], procs[dead[0]].returncode), None
            return "", None
        stalled = watch.poll() if watch else None
        if stalled:
            return "", stalled
        time.sleep(0.2)
    return "", None


class StallWatch:
    """Reads the ranks' progress as they post it (runner.run_cases: the counters posted/<case>/<rank>
    and cases_done, read with add(key, 0), which never waits, as every torch release has it) and
    finds a case that some ranks have left while the others stay in it for `limit` seconds: a rank
    that raised before a collective leaves its peers waiting in that collective until the process
    group's timeout, and every case after it would go unrun. With `case_limit`, also a case that no
    rank leaves for that long after every rank entered it (a collective that hangs everywhere). 0
    turns either off."""

    _PREFIX = "gpucts/results/"

    def __init__(self, store, size, limit, case_limit=0):
        self.store, self.size, self.limit, self.case_limit = store, size, limit, case_limit
        # entered_at: when every rank was seen in the case (runner.run_cases: started/<case>). Timing a
        # case from the world's start instead would count the ranks' start-up (importing torch,
        # joining the group), seconds on a loaded machine, against the first case of each world.
        self.case, self.since, self.entered_at = 0, None, None

    def _has(self, key):
        return self.store.add(self._PREFIX + key, 0) > 0

    def poll(self):
        now = time.time()
        done = self.store.add(self._PREFIX + "cases_done", 0)
        if done != self.case:
            self.case, self.since, self.entered_at = done, None, None
        if self.entered_at is None and self.store.add(self._PREFIX + "started/%d" % self.case, 0) >= self.size:
            self.entered_at = now
        posted = [k for k in range(self.size) if self._has("posted/%d/%d" % (self.case, k))]
        if self.limit and posted and len(posted) < self.size:
            if self.since is None:
                self.since = now
            return (self.case, posted) if now - self.since >= self.limit else None
        self.since = None
        if self.case_limit and not posted and self.entered_at is not None and now - self.entered_at >= self.case_limit:
            return self.case, []
        return None

    def _posted(self, index, rank):
        return json.loads(self.store.get(self._PREFIX + "res/%d/%d" % (index, rank)).decode("utf-8"))

    def describe(self, case, index, posted):
        """(why the world ends, the result of a rank that stayed in the case)."""
        if not posted:
            within = "within %g s" % self.case_limit
            return ("no rank came out of %s %s (--case-timeout)" % (case.display, within),
                    "did not finish: no rank came out of the case " + within)
        stayed = [k for k in range(self.size) if k not in posted]
        first = self._posted(index, posted[0])
        how = first["status"] + (": " + first["message"] if first["message"] else "")
        ranks = lambda rs: "rank%s %s" % ("s" if len(rs) > 1 else "", ", ".join(map(str, rs)))
        left = "%g s after %s left it" % (self.limit, ranks(posted))
        return ("%s still in %s %s (%s)" % (ranks(stayed), case.display, left, report.one_line(how, 300)),
                "did not finish: still in the case " + left)

    def results(self, cases, unfinished):
        """The merged results of `cases` (this world's, the stalled one last) from what the ranks
        posted; a rank that did not post the last one failed it with `unfinished`."""
        from .runner import merge
        out = []
        for i, c in enumerate(cases):
            posted = {k: self._posted(i, k) for k in range(self.size) if self._has("posted/%d/%d" % (i, k))}
            # A rank that stayed in the case was in it from about when the others started it until now.
            start = min((p["start_ms"] for p in posted.values()), default=(self.entered_at or time.time()) * 1000.0)
            stayed = {"status": "failed", "message": unfinished, "detail": "", "start_ms": start,
                      "time_s": max(0.0, (report.now_ms() - start) / 1000.0), "props": {}}
            out.append(merge(c, [posted.get(k, stayed) for k in range(self.size)]))
        return out


if __name__ == "__main__":  # a torchrun agent of _start_world
    torchrun_agent(sys.argv[1:])
