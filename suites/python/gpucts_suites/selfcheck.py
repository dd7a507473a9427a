"""The package's own logic checked on the CPU over Gloo (CI): payloads exact by construction, the
mismatch report, and what a world writes (JUnit, journals, exit codes) for passing, corrupted,
skipped, timed-out worlds and bad input. Cases of their own, reported like any other."""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from . import report
from .runner import Case, Context, Skip, WorldInfo, run_cases, summary_line

_TIME = re.compile(r"^\d+\.\d{3}$")
_PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _torch():
    try:
        import torch
        return torch
    except Exception as e:
        raise Skip("torch is not importable by %s: %s: %s" % (sys.executable, type(e).__name__, e))


def payloads_exact(ctx):
    torch = _torch()
    from .payloads import DTYPES, FLOAT_OPS_CHECKED, is_exact, reduce_expected, torch_dtype
    checked = 0
    for name, _, _, floating, _ in DTYPES:
        t = torch_dtype(name)
        if t is None:
            continue
        for world in range(1, 9):
            for op in (FLOAT_OPS_CHECKED if floating else ("sum", "min", "max")):
                if not is_exact(op, world):
                    continue
                want = reduce_expected(name, op, 3, world, 4099, "cpu")
                got = want.to(t).to(want.dtype)
                if not torch.equal(got, want):
                    k = int((got != want).nonzero()[0][0])
                    raise AssertionError("%s %s at %d ranks is not exact in %s: index %d %r -> %r"
                                         % (op, name, world, name, k, want[k].item(), got[k].item()))
                checked += 1
    ctx.prop("gpucts.checked", checked)


def mismatch_report(ctx):
    torch = _torch()
    from .inject import flip_element
    from .payloads import mismatch, payload
    x = payload("f32", 1, 0, 100, "cpu")
    if mismatch(x, x.double(), exact=True) is not None:
        raise AssertionError("identical tensors reported as different")
    y = x.clone()
    flip_element(y, 42)
    got = mismatch(y, x.double(), exact=True)
    if not got or "1 of 100 element(s) wrong, first at index 42" not in got:
        raise AssertionError("a flipped element 42 reported as %r" % got)
    i = payload("u8", 1, 1, 10, "cpu")
    j = i.clone()
    flip_element(j, 9)
    if "first at index 9" not in (mismatch(j, i, exact=True) or ""):
        raise AssertionError("u8 flip at the last element not found")
    del torch


def nccl_library_names(ctx):
    """The package's rule for which mapped file is NCCL (not a plugin) against the one table the C++
    probe and the preflight package are tested against too (suites/data, share/gpucts/test-data)."""
    from .nccl_library import is_nccl_library
    places = [os.environ.get("GPUCTS_TEST_DATA_DIR", ""), os.path.join(_PKG_ROOT, "..", "data"),
              os.path.join(_PKG_ROOT, "..", "test-data")]
    tables = [os.path.join(d, "nccl_library_names.csv") for d in places if d]
    table = next((t for t in tables if os.path.isfile(t)), None)
    if table is None:
        raise AssertionError("nccl_library_names.csv is in none of: " + ", ".join(tables))
    with open(table, newline="") as f:
        rows = list(csv.DictReader(ln for ln in f if not ln.startswith("#")))
    wrong = ["%s (table: %s)" % (r["path"], r["is_nccl"]) for r in rows
             if r["is_nccl"] not in ("yes", "no") or is_nccl_library(r["path"]) != (r["is_nccl"] == "yes")]
    if wrong or not rows:
        raise AssertionError("%s: %d of %d row(s) disagree: %s" % (table, len(wrong), len(rows), "; ".join(wrong)))
    ctx.prop("gpucts.checked", len(rows))


def _world_env(tmp, name, env=None, path_first=""):
    """The environment of a world run by a check; `path_first`: a folder put before the package."""
    e = dict(os.environ)
    e.pop("GPUCTS_INJECT", None)
    e.pop("GPUCTS_PYTHON", None)
    path = [d for d in (path_first, _PKG_ROOT, e.get("PYTHONPATH")) if d]
    # TMPDIR: a launcher a check kills with SIGKILL cannot remove its work folder; it stays in `tmp`,
    # which the check removes, not in /tmp.
    e.update({"GPUCTS_JOURNAL_DIR": os.path.join(tmp, "journal"), "GPUCTS_TEST_NAME": name,
              "PYTHONPATH": os.pathsep.join(path), "TMPDIR": tmp})
    e.update(env or {})
    return e


def _slow_start(tmp, seconds):
    """A folder whose sitecustomize makes every rank (a process with RANK set) sleep as Python
    starts: the start-up of a loaded machine, made certain."""
    folder = os.path.join(tmp, "slow-start")
    os.makedirs(folder)
    with open(os.path.join(folder, "sitecustomize.py"), "w") as f:
        f.write("import os, time\nif 'RANK' in os.environ:\n    time.sleep(%g)\n" % seconds)
    return folder


def _processes_naming(text):
    """The pids of live processes whose command line holds `text` (a zombie's is empty)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if pid.isdigit() and text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _world(tmp, name, args, env=None, path_first=""):
    """Runs a world of this package; returns (exit code, output, JUnit root or None)."""
    junit = os.path.join(tmp, name + ".xml")
    p = subprocess.run([sys.executable, "-m", "gpucts_suites", "--junit-output=" + junit] + args,
                       env=_world_env(tmp, name, env, path_first), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=300)
    root = ET.parse(junit).getroot() if os.path.exists(junit) else None
    return p.returncode, p.stdout, root


def _cases(root):
    return [(ts.get("name"), tc) for ts in root.findall("testsuite") for tc in ts.findall("testcase")]


def _journal(tmp, name):
    with open(os.path.join(tmp, "journal", name)) as f:
        return [json.loads(line) for line in f]


def world2_results(ctx):
    _torch()
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, root = _world(tmp, "two", ["--world=2", "--backend=gloo", "--launcher=subprocess", "--filter=^("
                                            "Collectives/(all_reduce_sum_i32_1021|broadcast_f32_61_root[01])|"
                                            "DDP/fp32_parity_w2)$"])
        if rc != 0 or root is None:
            raise AssertionError("a passing 2-rank world exited %d: %s" % (rc, out[-600:]))
        if root.tag != "testsuites" or [ts.get("name") for ts in root.findall("testsuite")] != ["Collectives", "DDP"]:
            raise AssertionError("JUnit layout: <%s> with suites %s" % (root.tag, [t.get("name") for t in root]))
        cases = _cases(root)
        names = ["%s/%s" % (s, tc.get("name")) for s, tc in cases]
        if names != ["Collectives/all_reduce_sum_i32_1021", "Collectives/broadcast_f32_61_root0",
                     "Collectives/broadcast_f32_61_root1", "DDP/fp32_parity_w2"]:
            raise AssertionError("cases in the JUnit: %s" % names)
        for el in [root] + root.findall("testsuite") + [tc for _, tc in cases]:
            if not _TIME.match(el.get("time", "")):
                raise AssertionError("time=%r is not plain decimal seconds" % el.get("time"))
        if root.get("tests") != "4" or root.get("failures") != "0":
            raise AssertionError("testsuites counts tests=%s failures=%s" % (root.get("tests"), root.get("failures")))
        props = {p.get("name"): p.get("value") for p in cases[3][1].iter("property")}
        if "gpucts.max_abs_diff_vs_reference" not in props:
            raise AssertionError("DDP case without its property: %s" % props)
        for r in (0, 1):
            events = _journal(tmp, "two.rank%d.jsonl" % r)
            kinds = [e["event"] for e in events]
            if kinds != ["program_start"] + ["start", "end"] * 4 + ["program_end"]:
                raise AssertionError("rank %d journal events %s" % (r, kinds))
            end = events[2]
            for k in ("case", "suite", "name", "rank", "result", "message", "time_ms", "duration_ms"):
                if k not in end:
                    raise AssertionError("rank %d end event without %s: %s" % (r, k, end))
            if end["case"] != "Collectives.all_reduce_sum_i32_1021" or end["rank"] != r or end["result"] != "passed":
                raise AssertionError("rank %d end event %s" % (r, end))
            if events[-1]["passed"] != 4 or events[0]["cases"] != 4:
                raise AssertionError("rank %d program_start/end counts %s %s" % (r, events[0], events[-1]))


def inject_names_rank(ctx):
    _torch()
    with tempfile.TemporaryDirectory() as tmp:
        spec = r"rank=1:corrupt:^(Collectives\.all_reduce_sum_i32_1021|DDP\.fp32_parity_w2)$:7"
        rc, out, root = _world(tmp, "inject", ["--world=2", "--backend=gloo", "--launcher=subprocess", "--filter=^("
                                               "Collectives/(all_reduce_sum_i32_1021|broadcast_f32_61_root0)|"
                                               "DDP/fp32_parity_w2)$"],
                               {"GPUCTS_INJECT": spec})
        if rc != 1 or root is None:
            raise AssertionError("a corrupted world exited %d: %s" % (rc, out[-600:]))
        got = {"%s/%s" % (s, tc.get("name")): tc.find("failure") for s, tc in _cases(root)}
        coll, bcast, ddp = (got["Collectives/all_reduce_sum_i32_1021"], got["Collectives/broadcast_f32_61_root0"],
                            got["DDP/fp32_parity_w2"])
        if coll is None or not re.search(r"^rank 1 of 2: .*first at index 7", coll.get("message")):
            raise AssertionError("the corrupted all_reduce: %s" % (coll is not None and coll.get("message")))
        if bcast is not None:
            raise AssertionError("a case GPUCTS_INJECT did not select failed: %s" % bcast.get("message"))
        if ddp is None or "rank 1 differs from rank 0" not in ddp.get("message"):
            raise AssertionError("the DDP case with a corrupted gradient: %s" % (ddp is not None and ddp.get("message")))


# all_reduce_sum_i32_1021 (the case made to stall or hang) with one case before it and two after.
_AROUND_ONE_CASE = "^Collectives/(all_reduce_sum_i32_(1|1021)|broadcast_f32_61_root[01])$"


def stalled_case_resumes(ctx):
    """A rank that leaves a case before its collective (it raised) leaves its peer waiting in that
    collective: the launcher ends the world after --stall seconds, the case fails naming both
    ranks, and a new world runs the cases after it; the journals keep every case once."""
    _torch()
    import time
    with tempfile.TemporaryDirectory() as tmp:
        start = time.time()
        rc, out, root = _world(tmp, "stall", ["--world=2", "--backend=gloo", "--launcher=subprocess", "--stall=3",
                                              "--filter=" + _AROUND_ONE_CASE],
                               {"GPUCTS_INJECT": r"rank=1:raise:^Collectives\.all_reduce_sum_i32_1021$"})
        took = time.time() - start
        if rc != 1 or root is None:
            raise AssertionError("a world with a stalled case exited %d: %s" % (rc, out[-600:]))
        got = {"%s/%s" % (s, tc.get("name")): tc for s, tc in _cases(root)}
        names = list(got)
        if names != ["Collectives/all_reduce_sum_i32_1", "Collectives/all_reduce_sum_i32_1021",
                     "Collectives/broadcast_f32_61_root0", "Collectives/broadcast_f32_61_root1"]:
            raise AssertionError("cases in the JUnit: %s" % names)
        stalled = got["Collectives/all_reduce_sum_i32_1021"].find("failure")
        want = r"^rank 0 of 2: did not finish: still in the case 3 s after rank 1 left it; rank 1 of 2: InjectedFault"
        if stalled is None or not re.search(want, stalled.get("message", "")):
            raise AssertionError("the stalled case: %s" % (stalled is not None and stalled.get("message")))
        for n in names[:1] + names[2:]:
            if got[n].find("failure") is not None or got[n].find("skipped") is not None:
                raise AssertionError("%s did not pass in the world after the stalled case" % n)
        if took > 60:
            raise AssertionError("the world took %.0f s: the stall was not cut at 3 s" % took)
        for r in (0, 1):
            kinds = [e["event"] for e in _journal(tmp, "stall.rank%d.jsonl" % r)]
            if kinds.count("program_start") != 1 or kinds.count("end") != 4 or kinds[-1] != "program_end":
                raise AssertionError("rank %d journal events %s" % (r, kinds))


def hung_case_resumes(ctx):
    """A case no rank comes out of (a collective that hangs everywhere) ends its world after
    --case-timeout, fails naming it, and a new world runs the cases after it. The ranks start slower
    than the timeout (as on a loaded machine): a case is timed from when every rank is in it, so the
    first case of each world still passes."""
    _torch()
    import time
    with tempfile.TemporaryDirectory() as tmp:
        start = time.time()
        rc, out, root = _world(tmp, "hang", ["--world=2", "--backend=gloo", "--launcher=subprocess",
                                             "--case-timeout=3", "--filter=" + _AROUND_ONE_CASE],
                               {"GPUCTS_INJECT": r"hang:^Collectives\.all_reduce_sum_i32_1021$"},
                               path_first=_slow_start(tmp, 4))
        took = time.time() - start
        if rc != 1 or root is None:
            raise AssertionError("a world with a hung case exited %d: %s" % (rc, out[-600:]))
        got = {"%s/%s" % (s, tc.get("name")): tc for s, tc in _cases(root)}
        first = got.get("Collectives/all_reduce_sum_i32_1")
        if first is None or first.find("failure") is not None:
            raise AssertionError("the case before the hung one: %s" % (
                first is not None and first.find("failure").get("message")))
        hung = got.get("Collectives/all_reduce_sum_i32_1021")
        failure = hung.find("failure") if hung is not None else None
        if failure is None or "no rank came out of the case within 3 s" not in failure.get("message", ""):
            raise AssertionError("the hung case: %s" % (failure is not None and failure.get("message")))
        after = [n for n in got if n.startswith("Collectives/broadcast")]
        if len(after) != 2 or any(got[n].find("failure") is not None for n in after):
            raise AssertionError("the cases after the hung one: %s" % after)
        # Two worlds that start 4 s late on a loaded machine, against the 540 s deadline had it not been cut.
        if took > 120:
            raise AssertionError("the world took %.0f s: the hang was not cut at 3 s" % took)


def interrupt_ends_world(ctx):
    """SIGTERM to the launcher (qualify's deadline or ^C, a batch system) ends every rank, though
    they run in sessions of their own, and still writes the JUnit: the running case did not finish."""
    _torch()
    import signal
    import time
    with tempfile.TemporaryDirectory() as tmp:
        junit = os.path.join(tmp, "int.xml")
        p = subprocess.Popen([sys.executable, "-m", "gpucts_suites", "--junit-output=" + junit, "--world=2",
                              "--backend=gloo", "--launcher=subprocess", "--filter=^Collectives/"],
                             env=_world_env(tmp, "int"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        journal = os.path.join(tmp, "journal", "int.rank0.jsonl")
        until = time.time() + 120
        while time.time() < until and p.poll() is None and not (
                os.path.exists(journal) and '"start"' in open(journal).read()):
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
        left = _processes_naming(junit)
        if left:
            raise AssertionError("rank processes outlived the interrupted launcher: %s" % left)
        if p.returncode != 1 or not os.path.exists(junit):
            raise AssertionError("an interrupted world exited %s: %s" % (p.returncode, out[-600:]))
        messages = [tc.find("failure").get("message", "") for _, tc in _cases(ET.parse(junit).getroot())
                    if tc.find("failure") is not None]
        if not any("interrupted by SIGTERM" in m for m in messages):
            raise AssertionError("no case names the interruption: %s" % messages[:3])


def killed_launcher_takes_ranks(ctx):
    """SIGKILL of the launcher (the OOM killer, a cancelled CI job) can run no handler, yet no rank
    outlives it: each rank, and a torchrun agent between them, dies with the process that started
    it. The ranks are held in a case (GPUCTS_INJECT=hang) when the launcher is killed."""
    _torch()
    import signal
    import time
    from .launch import torchrun_problem
    launchers = ["subprocess"] + ([] if torchrun_problem() else ["torchrun"])
    for launcher in launchers:
        with tempfile.TemporaryDirectory() as tmp:
            junit = os.path.join(tmp, "kill.xml")
            env = _world_env(tmp, "kill", {"GPUCTS_INJECT": r"hang:^Collectives\.all_reduce_sum_i32_1$"})
            p = subprocess.Popen([sys.executable, "-m", "gpucts_suites", "--junit-output=" + junit, "--world=2",
                                  "--backend=gloo", "--launcher=" + launcher,
                                  "--filter=^Collectives/all_reduce_sum_i32_1$"],
                                 env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            journals = [os.path.join(tmp, "journal", "kill.rank%d.jsonl" % r) for r in (0, 1)]
            until = time.time() + 120
            while time.time() < until and p.poll() is None and not all(
                    os.path.exists(j) and '"start"' in open(j).read() for j in journals):
                time.sleep(0.1)
            ranks = [pid for pid in _processes_naming(junit) if pid != p.pid]
            p.kill()
            p.wait()
            until = time.time() + 10
            while time.time() < until and _processes_naming(junit):
                time.sleep(0.1)
            left = _processes_naming(junit)
            for pid in left:  # this check's own clean-up: they would hang for good
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if len(ranks) < 2:
                raise AssertionError("--launcher=%s: the ranks never got into the case (%d process(es) seen)"
                                     % (launcher, len(ranks)))
            if left:
                raise AssertionError("--launcher=%s: %d of %d process(es) of the world outlived the launcher's "
                                     "SIGKILL by 10 s: %s" % (launcher, len(left), len(ranks), left))
    ctx.prop("gpucts.launchers", ",".join(launchers))


def failed_store_leaves_nothing(ctx):
    """A world whose store cannot start leaves no work folder behind (a temp folder per failed run)."""
    _torch()
    import time
    import torch.distributed as dist
    from . import launch

    def refuse(*args, **kwargs):
        raise RuntimeError("the store refuses (a fault this check makes)")
    saved_store, saved_tmp = dist.TCPStore, tempfile.tempdir
    with tempfile.TemporaryDirectory() as tmp:
        dist.TCPStore, tempfile.tempdir = refuse, tmp
        try:
            launch._start_world(None, [], None, "", 1, "subprocess", 0, time.time() + 60, "", "x")
        except RuntimeError as e:
            if "the store refuses" not in str(e):
                raise
        else:
            raise AssertionError("_start_world started a world without its store")
        finally:
            dist.TCPStore, tempfile.tempdir = saved_store, saved_tmp
        left = os.listdir(tmp)
        if left:
            raise AssertionError("a world that never started left %s in the temp folder" % left)


def skipped_world(ctx):
    _torch()
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, root = _world(tmp, "skipped", ["--world=gpus", "--backend=gloo", "--filter=^DDP"])
        if rc != 77 or root is None:
            raise AssertionError("a world that cannot run exited %d: %s" % (rc, out[-400:]))
        for _, tc in _cases(root):
            s = tc.find("skipped")
            if s is None or "one process per GPU runs over NCCL" not in s.get("message", ""):
                raise AssertionError("%s not skipped with the reason" % tc.get("name"))


def deadline_ends_world(ctx):
    _torch()
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, root = _world(tmp, "late", ["--world=2", "--backend=gloo", "--launcher=subprocess",
                                             "--deadline=0.5", "--filter=^DDP"])
        if rc != 1 or root is None:
            raise AssertionError("a world past its deadline exited %d: %s" % (rc, out[-400:]))
        for _, tc in _cases(root):
            f = tc.find("failure")
            if f is None or "deadline" not in f.get("message", ""):
                raise AssertionError("%s after the deadline: %s" % (tc.get("name"), f is not None and f.get("message")))


def _launcher(tmp):
    """The launcher script that started this check (GPUCTS_PY_LAUNCHER), else the source tree's
    template configured into `tmp` as CMake would; None where neither is there."""
    named = os.environ.get("GPUCTS_PY_LAUNCHER", "")
    if named and os.access(named, os.X_OK):
        return named
    template = os.path.join(_PKG_ROOT, "gpucts_python_suites.in")
    if not os.path.isfile(template):
        return None
    with open(template) as f:
        text = f.read().replace("@GPUCTS_PY_PACKAGE_DIR@", _PKG_ROOT).replace("@GPUCTS_PY_WHERE@", "in " + _PKG_ROOT)
    path = os.path.join(tmp, "gpucts_python_suites")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def launcher_refuses_python(ctx):
    """GPUCTS_PYTHON names the interpreter: one that is not a Python importing torch (a program that
    is no Python at all, a missing file, a Python without torch) is bad input, exit 2 with one line
    naming it, before any case; never a pass or a skip."""
    with tempfile.TemporaryDirectory() as tmp:
        launcher = _launcher(tmp)
        if launcher is None:
            raise Skip("neither GPUCTS_PY_LAUNCHER nor gpucts_python_suites.in beside the package")
        no_torch = os.path.join(tmp, "no-torch", "torch")
        os.makedirs(no_torch)
        with open(os.path.join(no_torch, "__init__.py"), "w") as f:
            f.write("raise ImportError('no torch in this test')\n")
        junit = os.path.join(tmp, "py.xml")
        args = [launcher, "--junit-output=" + junit, "--world=1", "--backend=gloo", "--filter=^Collectives/barrier$"]
        tries = [("/bin/true", "", "it printed nothing"), (os.path.join(tmp, "no-such-python"), "", "not found"),
                 (sys.executable, os.path.dirname(no_torch), "ImportError: no torch in this test")]
        for python, path_first, why in tries:
            if not os.path.exists(python) and python == "/bin/true":
                continue
            p = subprocess.run(args, env=_world_env(tmp, "py", {"GPUCTS_PYTHON": python}, path_first),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
            want = "gpucts_python_suites: GPUCTS_PYTHON=%s is not a Python with torch: " % python
            lines = p.stdout.strip().splitlines()
            if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith(want) or why not in lines[0]:
                raise AssertionError("GPUCTS_PYTHON=%s: exit %d, output %r" % (python, p.returncode, p.stdout[-300:]))
            if os.path.exists(junit):
                raise AssertionError("GPUCTS_PYTHON=%s: a JUnit was written" % python)
        _torch()
        p = subprocess.run([launcher, "--list", "--world=1", "--filter=^Collectives/barrier$"],
                           env=_world_env(tmp, "py", {"GPUCTS_PYTHON": sys.executable}), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
        if p.returncode != 0 or p.stdout.strip() != "Collectives/barrier":
            raise AssertionError("GPUCTS_PYTHON=%s (with torch): exit %d, output %r"
                                 % (sys.executable, p.returncode, p.stdout[-300:]))


def bad_input(ctx):
    with tempfile.TemporaryDirectory() as tmp:
        for args, words in ((["--world=sim0"], "--world=sim0"), (["--filter=("], "--filter=("),
                            (["--world=2", "--filter=^NoSuchSuite/"], "selects no case")):
            rc, out, _ = _world(tmp, "bad", args)
            if rc != 2 or words not in out:
                raise AssertionError("%s: exit %d, output %r" % (args, rc, out[-300:]))
        rc, out, _ = _world(tmp, "bad", ["--world=1"], {"GPUCTS_INJECT": "corrupt:x"})
        if rc != 2 or "GPUCTS_INJECT='corrupt:x'" not in out:
            raise AssertionError("a malformed GPUCTS_INJECT: exit %d, %r" % (rc, out[-300:]))
        # A digit that is no ASCII digit ('²' passes str.isdigit(), not int()): one line, not a traceback.
        for spec, words in (("rank=\u00b2:raise:x", "rank '\u00b2' is not a number"),
                            ("corrupt:x:\u00b2", "index '\u00b2' is not a number")):
            rc, out, _ = _world(tmp, "bad", ["--world=1"], {"GPUCTS_INJECT": spec})
            _one_line_exit_2("GPUCTS_INJECT=" + spec, rc, out, words)
        rc, out, _ = _world(tmp, "bad", ["--world=sim\u00b2"])
        _one_line_exit_2("--world=sim\u00b2", rc, out, "--world=sim\u00b2: expected")


def _one_line_exit_2(what, rc, out, words):
    lines = out.strip().splitlines()
    if rc != 2 or len(lines) != 1 or words not in lines[0]:
        raise AssertionError("%s: exit %d, output %r (expected exit 2 and one line with %r)"
                             % (what, rc, out[-400:], words))


def outputs_checked_first(ctx):
    """Where the results go is checked before the first case: a JUnit path that is a folder, lies
    under /proc or under a file, a journal folder that is a file, a deadline that is no number: one
    line naming it, exit 2, no case run and nothing left behind."""
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain-file")
        with open(plain, "w") as f:
            f.write("x")
        ok = os.path.join(tmp, "ok.xml")
        tries = [(tmp, {}, "--junit-output=%s: is a folder" % tmp),
                 ("/proc/gpucts-none/o.xml", {}, "--junit-output=/proc/gpucts-none/o.xml: cannot write in /proc"),
                 (os.path.join(plain, "o.xml"), {}, "%s is not a folder" % plain),
                 (ok, {"GPUCTS_JOURNAL_DIR": plain}, "GPUCTS_JOURNAL_DIR=%s: %s is not a folder" % (plain, plain)),
                 (ok, {"GPUCTS_PY_DEADLINE": "soon"}, "GPUCTS_PY_DEADLINE=soon")]
        run = ["--world=1", "--backend=gloo", "--filter=^Collectives/barrier$"]
        for junit, env, words in tries:
            what = "--junit-output=%s %s" % (junit, env)
            before = sorted(os.listdir(tmp))
            p = subprocess.run([sys.executable, "-m", "gpucts_suites", "--junit-output=" + junit] + run,
                               env=_world_env(tmp, "out", env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, timeout=300)
            _one_line_exit_2(what, p.returncode, p.stdout, words)
            if sorted(os.listdir(tmp)) != before:
                raise AssertionError("%s left %s" % (what, sorted(set(os.listdir(tmp)) - set(before))))
        # 1e10 s: beyond a day, where torch's store timeout would overflow after the world started.
        for bad, words in (("--deadline=inf", "--deadline=inf"), ("--deadline=nan", "--deadline=nan"),
                           ("--deadline=1e10", "at most 86400")):
            rc, out, _ = _world(tmp, "out", run + [bad])
            _one_line_exit_2(bad, rc, out, words)


def inject_checked_against_world(ctx):
    """GPUCTS_INJECT must be able to act in the world it is given, or a self-test passes without
    injecting: a rank outside the world, or a regex that selects none of its cases, is one line and
    exit 2 before the first case; an element beyond a selected case's result fails that case."""
    _torch()
    one = "--filter=^Collectives/all_reduce_sum_i32_1$"
    with tempfile.TemporaryDirectory() as tmp:
        tries = ((r"rank=2:raise:all_reduce", "rank 2 is not in this world of 2"),
                 (r"corrupt:^Collectives\.no_such_case$:0", "the case regex selects none of this world's 1 case(s)"))
        for spec, words in tries:
            rc, out, root = _world(tmp, "inj", ["--world=2", "--backend=gloo", "--launcher=subprocess", one],
                                   {"GPUCTS_INJECT": spec})
            _one_line_exit_2("GPUCTS_INJECT=" + spec, rc, out, "GPUCTS_INJECT='%s': %s" % (spec, words))
            if root is not None:
                raise AssertionError("GPUCTS_INJECT=%s: a JUnit was written" % spec)
        rc, out, root = _world(tmp, "inj", ["--world=1", "--backend=gloo", one],
                               {"GPUCTS_INJECT": r"corrupt:^Collectives\.all_reduce_sum_i32_1$:5"})
        failure = root.find("testsuite/testcase/failure") if root is not None else None
        if rc != 1 or failure is None or "changed nothing" not in failure.get("message", ""):
            raise AssertionError("an index beyond a 1-element result: exit %d, %s" % (
                rc, failure.get("message") if failure is not None else out[-400:]))


class _FakeCase:
    """What _reduction reads of a case's context, on no GPU: the world, the backend, its properties."""

    def __init__(self, backend, size):
        self.backend, self.size, self.on_gpu, self.props = backend, size, False, {}

    def prop(self, name, value):
        self.props[name] = str(value)

    def skip(self, why):
        raise Skip(why)


def torch_defect_tagging(ctx):
    """torch_defects.csv as the collective cases use it: a failing bf16 premul_sum over
    ProcessGroupNCCL of an affected torch names torch-190745, a passing one says it was not seen,
    and neither another dtype, another backend nor an older torch is named; the one-rank
    reduce_scatter row; Gloo's strided rows."""
    from . import cases_collectives as cc
    from . import nccl_data
    if not nccl_data.rows("torch_defects.csv"):
        raise AssertionError("torch_defects.csv not found beside the package (share/gpucts/matrix or matrix/data)")
    zeros = "all_reduce premul_sum of bf16 x1021 (in place): 1021 of 1021 element(s) wrong, first at index 0"
    saved = cc._torch_version

    def run(torch, backend, dt, fails):
        cc._torch_version = lambda: torch
        fake = _FakeCase(backend, 2)

        def check():
            if fails:
                raise AssertionError(zeros)
        try:
            cc._reduction(fake, "all_reduce", dt, "premul_sum", True, "all_reduce premul_sum of " + dt,
                          lambda: None, check)
        except AssertionError as e:
            return fake.props, str(e)
        return fake.props, None

    try:
        props, err = run("2.11.0+cu130", "nccl", "bf16", True)
        if props.get("gpucts.known_defect") != "torch-190745" or "known torch defect: torch-190745" not in err:
            raise AssertionError("a failing bf16 premul_sum on torch 2.11: %r, %r" % (props, err))
        props, err = run("2.11.0+cu130", "nccl", "bf16", False)
        if err or props != {"gpucts.known_defect_not_seen": "torch-190745"}:
            raise AssertionError("a passing bf16 premul_sum on torch 2.11: %r, %r" % (props, err))
        for torch, backend, dt in (("2.11.0+cu130", "nccl", "f32"), ("2.11.0+cu130", "gloo", "bf16"),
                                   ("1.12.1+cu116", "nccl", "bf16")):
            props, err = run(torch, backend, dt, True)
            if props or err != zeros:
                raise AssertionError("torch %s %s %s: named %r, %r" % (torch, backend, dt, props, err))
    finally:
        cc._torch_version = saved
    if nccl_data.torch_release("1.13.0a0") != (1, 13, 0) or nccl_data.torch_release("2.11.0+cu130") != (2, 11, 0):
        raise AssertionError("torch_release misreads a version")
    one_rank_rs = [nccl_data.torch_known_defects("reduce_scatter_tensor", dt, "premul_sum", False, n, (2, 11, 0), "nccl")
                   for dt, n in (("f32", 1), ("f8e4m3", 1), ("f32", 2))]
    if one_rank_rs != [["torch-rs1-premulsum"], ["torch-rs1-premulsum"], []]:
        raise AssertionError("one-rank reduce_scatter premul_sum on torch 2.11 (f32, fp8; f32 at 2 ranks): %r"
                             % one_rank_rs)
    strided = nccl_data.torch_known_defects("all_reduce", "f32", "sum", True, 2, (2, 11, 0), "gloo", strided=True)
    if strided != ["torch-192920"]:
        raise AssertionError("strided all_reduce over Gloo 2.11: %r" % strided)
    if nccl_data.torch_known_defects("all_reduce", "f32", "sum", True, 2, (2, 11, 0), "gloo"):
        raise AssertionError("a contiguous all_reduce over Gloo is named")
    a2a = [nccl_data.torch_known_defects("all_to_all_single", "i32", None, False, 2, v, "gloo", strided=True)
           for v in ((1, 13, 1), (2, 11, 0))]
    if a2a != [["torch-192920-alltoall"], []]:
        raise AssertionError("strided all_to_all_single over Gloo 1.13 / 2.11: %r" % a2a)
    gloo_rs = [nccl_data.torch_known_defects("reduce_scatter_tensor", "f32", op, False, 2, v, "gloo")
               for op, v in (("min", (2, 8, 0)), ("avg", (2, 3, 1)), ("sum", (2, 8, 0)), ("max", (2, 9, 1)))]
    gloo_rs.append(nccl_data.torch_known_defects("reduce_scatter_tensor", "f32", "premul_sum", False, 1, (2, 8, 0),
                                                 "gloo"))
    if gloo_rs != [["torch-gloo-rs-op"], ["torch-gloo-rs-op"], [], [], ["torch-gloo-rs-op"]]:
        raise AssertionError("Gloo reduce_scatter_tensor min/avg in range, sum, max on 2.9.1, premul_sum at "
                             "one rank: %r" % gloo_rs)
    # An NCCL tail defect never explains a result wrong from index 0; a torch defect does.
    if nccl_data.explaining(["nccl-1950"], [], zeros) or nccl_data.explaining(["nccl-1950"], [], "x first at index 7") \
            != ["nccl-1950"]:
        raise AssertionError("nccl_data.explaining misjudges an NCCL tail defect")
    ctx.prop("gpucts.checked", 10)


CHECKS = [("payloads_exact", payloads_exact), ("mismatch_report", mismatch_report),
          ("nccl_library_names", nccl_library_names), ("torch_defect_tagging", torch_defect_tagging),
          ("world2_results", world2_results), ("inject_names_rank", inject_names_rank),
          ("stalled_case_resumes", stalled_case_resumes), ("hung_case_resumes", hung_case_resumes),
          ("interrupt_ends_world", interrupt_ends_world),
          ("killed_launcher_takes_ranks", killed_launcher_takes_ranks),
          ("skipped_world", skipped_world), ("failed_store_leaves_nothing", failed_store_leaves_nothing),
          ("deadline_ends_world", deadline_ends_world),
          ("bad_input", bad_input),
          ("launcher_refuses_python", launcher_refuses_python),
          ("outputs_checked_first", outputs_checked_first),
          ("inject_checked_against_world", inject_checked_against_world)]


def selfcheck_main(args):
    cases = [Case("SelfCheck", n, fn) for n, fn in CHECKS
             if not args.filter or re.search(args.filter, "SelfCheck/" + n)]
    test = os.environ.get("GPUCTS_TEST_NAME", "gpucts_py_selfcheck")
    jdir = os.environ.get("GPUCTS_JOURNAL_DIR", "")
    journal = report.Journal(report.journal_path(jdir, test, 0, 1) if jdir else "", -1)
    ctx = Context(WorldInfo("1", 1, "", "subprocess"), 0, 0, None, None)
    start = report.now_ms()
    results = run_cases(cases, ctx, journal)
    from .worker import write_junit
    code = report.exit_code(results)
    if args.junit_output and not write_junit(args.junit_output, results, start):
        code = 1
    print(summary_line(results), flush=True)
    return code
