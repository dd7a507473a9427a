"""The preflight across real processes on this machine, over torch's TCPStore (CPU only: no GPU, no
NCCL). Each process is a simulated host (its own NCCL_HOSTID), started the way torchrun would leave
it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT), or by torchrun itself. Skips with its reason where
no interpreter here imports torch (GPUCTS_PYTHON names one that does)."""
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
COMMON_ROOT = os.path.join(os.path.dirname(PACKAGE_ROOT), "python")  # gpucts_common
PYTHONPATH = PACKAGE_ROOT + os.pathsep + COMMON_ROOT
PYTHON = os.environ.get("GPUCTS_PYTHON") or sys.executable
TIMEOUT_S = 4  # the preflight's own bound for a rank that never joins
# Where every rank does join the bound is only reached by a slow start (each process imports torch,
# seconds on a loaded machine): a long one keeps those tests about the verdict, not the start.
JOINING_TIMEOUT_S = 60


def _has_torch():
    try:
        return subprocess.run([PYTHON, "-c", "import torch.distributed"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


HAS_TORCH = _has_torch()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def rank_env(rank, world_size, master, store, timeout_s, hostid):
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("NCCL_") or k.startswith("GPUCTS_PREFLIGHT")]:
        del env[k]
    env.update({"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": "0", "NODE_RANK": str(rank),
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master), "GPUCTS_PREFLIGHT_PORT": str(store),
                "GPUCTS_PREFLIGHT_TIMEOUT_S": str(timeout_s), "NCCL_HOSTID": hostid,
                "PYTHONPATH": PYTHONPATH, "PYTHONDONTWRITEBYTECODE": "1"})
    return env


def start_ranks(ranks, world_size, extra_env=None, timeout_s=JOINING_TIMEOUT_S, ports=None):
    """Starts one `python -m gpucts_preflight` per entry of `ranks` (its RANK): [(rank, Popen)], (master, store)."""
    master, store = ports or (free_port(), free_port())
    procs = []
    for i, rank in enumerate(ranks):
        env = rank_env(rank, world_size, master, store, timeout_s, "simhost%d-%d" % (rank, i))
        env.update((extra_env or {}).get(i, {}))
        procs.append((rank, subprocess.Popen([PYTHON, "-m", "gpucts_preflight"], env=env, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True)))
    return procs, (master, store)


def finish(procs, limit_s):
    """[(rank, exit, output)] once every process ended; one still running at limit_s is killed (exit None)."""
    out, stop = [], time.monotonic() + limit_s
    for rank, p in procs:
        try:
            text, _ = p.communicate(timeout=max(stop - time.monotonic(), 1))
            out.append((rank, p.returncode, text))
        except subprocess.TimeoutExpired:
            p.kill()
            out.append((rank, None, p.communicate()[0] + "\n[killed: still running after %g s]" % limit_s))
    return out


def run_ranks(ranks, world_size, extra_env=None, timeout_s=JOINING_TIMEOUT_S):
    """Starts the ranks together; returns [(rank, exit, output)] and seconds."""
    started = time.monotonic()
    procs, _ = start_ranks(ranks, world_size, extra_env, timeout_s)
    results = finish(procs, timeout_s + 90)
    return results, time.monotonic() - started


def report(results):
    return "\n".join("--- rank %d exit %s\n%s" % r for r in results)


STRAY_WRITER = """
import datetime, sys, time
import torch.distributed as dist
port, limit_s = int(sys.argv[1]), float(sys.argv[2])
writes, adds = eval(sys.stdin.read())
stop = time.monotonic() + limit_s
while True:
    try:
        s = dist.TCPStore("127.0.0.1", port, None, False, datetime.timedelta(seconds=5))
        break
    except Exception:
        if time.monotonic() > stop:
            sys.exit("stray writer: no store")
        time.sleep(0.1)
for k, v in writes:
    s.set(k, v)
for k, n in adds:
    s.add(k, n)
print("stray writer: wrote", [k for k, _ in writes], [k for k, _ in adds], flush=True)
"""


def stray_writer(store_port, writes, adds=(), limit_s=60):
    """A process outside the job: a TCPStore client of the preflight's store (retrying until it is up)
    that writes raw values and bumps counters under the job's keys."""
    p = subprocess.Popen([PYTHON, "-c", STRAY_WRITER, str(store_port), str(limit_s)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p.stdin.write(repr((list(writes), list(adds))))
    p.stdin.close()
    p.stdin = None  # written: communicate() only reads its output
    return p


AGENT_STORE = """
import datetime, sys, time
import torch.distributed as dist
s = dist.TCPStore("127.0.0.1", int(sys.argv[1]), None, True, datetime.timedelta(seconds=60), wait_for_workers=False)
print("agent store up", flush=True)
time.sleep(float(sys.argv[2]))
"""


def torchrun_works():
    """None where this torch's torchrun starts workers, else why not (Debian's torch 1.13 under Python 3.11
    fails in its own redirects code before any worker)."""
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "w.py")
        with open(script, "w") as f:
            f.write("print('worker up')\n")
        r = subprocess.run([PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "1",
                            "--rdzv_backend", "static", "--master_addr", "127.0.0.1", "--master_port",
                            str(free_port()), "--node_rank", "0", script], capture_output=True, text=True, timeout=300)
    if r.returncode == 0 and "worker up" in r.stdout:
        return None
    return "torchrun of %s does not start a worker: %s" % (PYTHON, (r.stderr.strip().splitlines() or ["?"])[-1])


def torch_mapped(pid):
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "libtorch" in f.read()
    except OSError:
        return False


@unittest.skipUnless(HAS_TORCH, "no torch in %s (set GPUCTS_PYTHON to an interpreter with torch)" % PYTHON)
class PreflightAcrossProcesses(unittest.TestCase):
    def test_agreeing_ranks_pass_on_every_rank(self):
        results, _ = run_ranks([0, 1, 2], 3)
        self.assertEqual([r[1] for r in results], [0, 0, 0], report(results))
        self.assertIn("PASS", results[0][2], report(results))
        self.assertIn("3 rank(s) on 3 simulated hosts", results[0][2], report(results))

    def test_a_setting_on_one_rank_stops_every_rank_naming_it(self):
        results, _ = run_ranks([0, 1], 2, {1: {"NCCL_ALGO": "Ring"}})
        self.assertTrue(all(r[1] == 1 for r in results), report(results))
        self.assertIn("NCCL_ALGO", results[0][2], report(results))
        self.assertIn("env-differs", results[0][2], report(results))

    def test_a_rank_that_never_joins_is_named_within_the_timeout(self):
        results, seconds = run_ranks([0, 1], 3, timeout_s=TIMEOUT_S)
        self.assertTrue(all(r[1] == 1 for r in results), report(results))
        self.assertIn("rank 2", results[0][2], report(results))
        self.assertIn("did not join", results[0][2], report(results))
        self.assertLess(seconds, TIMEOUT_S + 30, report(results))

    def test_a_rank_claimed_twice_is_named(self):
        results, _ = run_ranks([0, 1, 1], 3, timeout_s=15)  # rank 2 never joins: the wait is the bound
        self.assertTrue(all(r[1] == 1 for r in results), report(results))
        self.assertIn("claim global rank 1", results[0][2], report(results))

    def test_rank_0_hosts_the_store_however_late_it_starts(self):
        # The other ranks come first and reach the rendezvous long before rank 0 (a loaded machine):
        # none of them may host the store (two hosts split the job in two), all wait for rank 0.
        procs, ports = start_ranks([1, 2], 3)
        first, hosted_early = procs[0][1], False
        try:
            stop = time.monotonic() + 60
            while not torch_mapped(first.pid) and first.poll() is None and time.monotonic() < stop:
                time.sleep(0.1)
            # torch's import goes on for seconds after libtorch is mapped (more on a loaded machine); a rank
            # that would host the store does so as soon as it reaches the rendezvous.
            stop = time.monotonic() + 20
            while time.monotonic() < stop and not hosted_early:
                hosted_early = listening(ports[1])
                time.sleep(0.1)
        finally:
            zero, _ = start_ranks([0], 3, ports=ports)
            results = finish(procs + zero, JOINING_TIMEOUT_S + 90)
        self.assertFalse(hosted_early, "a rank other than 0 hosted the preflight's store\n" + report(results))
        self.assertEqual([r[1] for r in results], [0, 0, 0], report(results))
        self.assertIn("3 rank(s) on 3 simulated hosts", results[2][2], report(results))

    def test_a_stray_writer_is_named_within_the_timeout_never_believed(self):
        # Rank 0 alone in a world of 3; a process outside the job writes the entries of ranks 1 and 2
        # (a world size of 1e9, a value above the size limit) and bumps rank 0's claim counter.
        prefix, timeout_s = "gpucts_preflight/job/", 15
        writes = [(prefix + "fp/1/0", '{"gpucts_rank":{"world_size":1000000000}}'),
                  (prefix + "fp/2/0", "x" * (2 << 20))]
        procs, ports = start_ranks([0], 3, timeout_s=timeout_s)
        stray = stray_writer(ports[1], writes, [(prefix + "claims/0", 10 ** 9)])
        started = time.monotonic()
        results = finish(procs, timeout_s + 60)
        seconds = time.monotonic() - started
        text = report(results) + "\n" + stray.communicate(timeout=60)[0]
        self.assertEqual(results[0][1], 1, text)
        for key in ("fp/1/0", "fp/2/0", "claims/0"):
            self.assertIn("the key %s%s was written by a process outside this job" % (prefix, key), results[0][2], text)
        self.assertNotIn("Traceback", results[0][2], text)
        self.assertLess(seconds, timeout_s + 45, text)

    def test_a_report_from_outside_the_job_is_not_believed(self):
        # A stray report (not JSON, no signature) is there before rank 0's: rank 1 waits for rank 0's
        # own report and both pass, no traceback.
        procs, ports = start_ranks([0], 2)
        stray = stray_writer(ports[1], [("gpucts_preflight/job/report", "not a report")])
        stray_out = stray.communicate(timeout=120)[0]
        one, _ = start_ranks([1], 2, ports=ports)
        results = finish(procs + one, JOINING_TIMEOUT_S + 90)
        text = report(results) + "\n" + stray_out
        self.assertIn("stray writer: wrote ['gpucts_preflight/job/report']", text)
        self.assertEqual([r[1] for r in results], [0, 0], text)

    def test_a_port_held_by_something_else_is_named_not_a_hang(self):
        # The store's port is held by a process that accepts connections and never answers.
        with socket.socket() as other:
            other.bind(("", 0))
            other.listen(8)
            taken, started = other.getsockname()[1], time.monotonic()
            procs, _ = start_ranks([0, 1], 2, timeout_s=TIMEOUT_S, ports=(free_port(), taken))
            results = finish(procs, TIMEOUT_S + 90)
        self.assertEqual([r[1] for r in results], [1, 1], report(results))
        self.assertIn("ERROR   preflight-port-taken: port %d was already taken" % taken, results[0][2], report(results))
        self.assertIn("ERROR   preflight-store-lost:", results[1][2], report(results))
        self.assertLess(time.monotonic() - started, TIMEOUT_S + 60, report(results))

    def test_the_agent_store_is_the_rendezvous_under_torchrun(self):
        # Where torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True) every rank is its client:
        # nobody hosts another, so the port beside MASTER_PORT may well be taken by something else.
        master = free_port()
        agent = subprocess.Popen([PYTHON, "-c", AGENT_STORE, str(master), str(JOINING_TIMEOUT_S + 90)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            self.assertEqual(agent.stdout.readline().strip(), "agent store up")
            with socket.socket() as other:
                other.bind(("", 0))
                other.listen(1)
                agent_env = {"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RUN_ID": "none",
                             "TORCHELASTIC_RESTART_COUNT": "0"}
                procs, _ = start_ranks([0, 1], 2, {0: agent_env, 1: agent_env},
                                       ports=(master, other.getsockname()[1]))
                results = finish(procs, JOINING_TIMEOUT_S + 90)
        finally:
            agent.kill()
            agent.communicate()
        self.assertEqual([r[1] for r in results], [0, 0], report(results))
        self.assertIn("2 rank(s) on 2 simulated hosts", results[0][2], report(results))

    def test_torchrun_itself(self):
        why = torchrun_works()
        if why:
            self.skipTest(why)
        master = free_port()
        with socket.socket() as other:
            other.bind(("", 0))
            other.listen(1)
            env = dict(os.environ, PYTHONPATH=PYTHONPATH, PYTHONDONTWRITEBYTECODE="1",
                       GPUCTS_PREFLIGHT_PORT=str(other.getsockname()[1]), GPUCTS_PREFLIGHT_TIMEOUT_S="20")
            for k in [k for k in env if k.startswith("NCCL_")]:
                del env[k]
            r = subprocess.run([PYTHON, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
                                "--rdzv_backend", "static", "--master_addr", "127.0.0.1", "--master_port", str(master),
                                "--node_rank", "0", "-m", "gpucts_preflight"],
                               env=env, capture_output=True, text=True, timeout=JOINING_TIMEOUT_S + 90)
        out = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, out)
        self.assertIn("gpucts preflight: 2 rank(s)", out)
        self.assertIn("PASS", out)


if __name__ == "__main__":
    unittest.main()
