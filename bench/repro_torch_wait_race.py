#!/usr/bin/env python3
"""Standalone reproducer (torch only, no gpucts code): ProcessGroupNCCL, one rank never joins an
allreduce, every other rank waits with the group's timeout. Each waiting rank should get the
timeout error. gpucts saw libtorch 2.11 sometimes throw "Attempting to mark a completed Future as
complete again" instead: the watchdog and wait(timeout) both finish the timed-out work.

Ranks are simulated hosts on one GPU (NCCL_HOSTID per process, sockets on loopback), as in gpucts's
simulated-hosts mode; TORCH_NCCL_ASYNC_ERROR_HANDLING=2 keeps the process alive after the abort.

  repro_torch_wait_race.py [--ranks 4] [--rounds 5] [--timeout-s 3] [--python PY]
  exit 0: every waiting rank saw a timeout; 1: some saw another error or none; 2: could not run
"""
import argparse
import collections
import os
import re
import socket
import subprocess
import sys
import time


def child(rank, world, timeout_s):
    import datetime

    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    meet = dist.new_group(backend="gloo")
    # The first collective creates the communicator and connects its channels: all ranks join it.
    warm = torch.ones(1024, device="cuda")
    dist.all_reduce(warm)
    torch.cuda.synchronize()
    if rank != world - 1:
        t = torch.ones(1024, device="cuda")
        t0 = time.monotonic()
        try:
            dist.all_reduce(t, async_op=True).wait(timeout=datetime.timedelta(seconds=timeout_s))
            print(f"RESULT {rank} completed after {time.monotonic() - t0:.1f} s", flush=True)
        except Exception as e:  # what the user's code would see
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print(f"RESULT {rank} {type(e).__name__} after {time.monotonic() - t0:.1f} s: {first[:300]}",
                  flush=True)
    dist.barrier(group=meet)
    os._exit(0)  # teardown of an aborted group is not what is measured here


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kind_of(line):
    if " completed after " in line:
        return "completed (no error)"
    if "mark a completed Future" in line:
        return "future completed twice"
    if re.search(r"time[d]? ?out", line, re.I):
        return "timeout"
    return "other error"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--timeout-s", type=int, default=3)
    p.add_argument("--python", default=sys.executable, help="the Python whose torch is tested")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child is not None:
        return child(a.child, a.ranks, a.timeout_s)
    if a.ranks < 2 or a.rounds < 1 or a.timeout_s < 1:
        print("error: --ranks >= 2, --rounds >= 1, --timeout-s >= 1", file=sys.stderr)
        return 2
    probe = subprocess.run([a.python, "-c", "import torch;print(torch.__version__, torch.cuda.nccl.version(),"
                            " torch.cuda.is_available())"], capture_output=True, text=True)
    if probe.returncode != 0 or not probe.stdout.strip().endswith("True"):
        print(f"error: {a.python}: no torch with CUDA: {(probe.stderr or probe.stdout).strip()[-200:]}",
              file=sys.stderr)
        return 2
    print(f"torch {probe.stdout.strip().rsplit(' ', 1)[0]}, {a.ranks} ranks on GPU 0, "
          f"{a.rounds} round(s), {a.timeout_s} s timeout", flush=True)
    seen = collections.Counter()
    for r in range(a.rounds):
        port = free_port()
        procs = []
        for rank in range(a.ranks):
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       NCCL_HOSTID=f"reprohost{rank}", NCCL_SOCKET_IFNAME="lo", NCCL_IB_DISABLE="1",
                       CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES", "0"),
                       TORCH_NCCL_ASYNC_ERROR_HANDLING="2", TORCH_NCCL_DUMP_ON_TIMEOUT="0",
                       TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC="1000")
            procs.append(subprocess.Popen(
                [a.python, os.path.abspath(__file__), "--child", str(rank), "--ranks", str(a.ranks),
                 "--timeout-s", str(a.timeout_s)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True))
        lines = []
        for rank, pr in enumerate(procs):
            try:
                out, _ = pr.communicate(timeout=30 + 10 * a.timeout_s)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                out = (pr.communicate()[0] or "") + f"\nRESULT {rank} hung: killed after the round's deadline"
            lines += [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        got = {int(ln.split()[1]) for ln in lines}
        lines += [f"RESULT {k} no result line" for k in range(a.ranks - 1) if k not in got]
        for ln in sorted(lines):
            k = kind_of(ln) if "no result line" not in ln and " hung:" not in ln else "no result"
            seen[k] += 1
            print(f"round {r + 1}: {ln[7:]}  [{k}]", flush=True)
    total = sum(seen.values())
    print("summary: " + ", ".join(f"{v}/{total} {k}" for k, v in seen.most_common()))
    return 0 if seen["timeout"] == total else 1


if __name__ == "__main__":
    sys.exit(main())
