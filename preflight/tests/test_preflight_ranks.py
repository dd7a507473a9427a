"""The preflight across real processes on this machine, over torch's TCPStore (CPU only: no GPU, no
NCCL). Each process is a simulated host (its own NCCL_HOSTID), started the way torchrun would leave
it (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT). Skips with its reason where no interpreter here
imports torch (GPUCTS_PYTHON names one that does)."""
import os
import socket
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
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


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(ranks, world_size, extra_env=None, timeout_s=JOINING_TIMEOUT_S):
    """Starts one process per entry of `ranks` (its RANK); returns [(rank, exit, output)] and seconds."""
    master, store = _free_port(), _free_port()
    procs = []
    started = time.monotonic()
    for i, rank in enumerate(ranks):
        env = dict(os.environ)
        env.update({"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": "0", "NODE_RANK": str(rank),
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master), "GPUCTS_PREFLIGHT_PORT": str(store),
                    "GPUCTS_PREFLIGHT_TIMEOUT_S": str(timeout_s), "NCCL_HOSTID": "simhost%d-%d" % (rank, i),
                    "PYTHONPATH": PACKAGE_ROOT, "PYTHONDONTWRITEBYTECODE": "1"})
        for k in [k for k in env if k.startswith("NCCL_") and k != "NCCL_HOSTID"]:
            del env[k]
        env.update((extra_env or {}).get(i, {}))
        procs.append((rank, subprocess.Popen([PYTHON, "-m", "gpucts_preflight"], env=env, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True)))
        if i == 0:
            time.sleep(0.2)
    out = []
    for rank, p in procs:
        text, _ = p.communicate(timeout=timeout_s + 90)
        out.append((rank, p.returncode, text))
    return out, time.monotonic() - started


def report(results):
    return "\n".join("--- rank %d exit %d\n%s" % r for r in results)


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


if __name__ == "__main__":
    unittest.main()
