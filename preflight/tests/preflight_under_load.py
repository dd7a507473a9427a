"""A healthy world of N ranks under CPU load, R times over: every run must pass on every rank.

    python3 preflight/tests/preflight_under_load.py --ranks 8 --runs 50 [--burners N] [--timeout S]

Starts --burners busy-looping processes (default: one per CPU core, as `stress -c` does) for the whole
sweep, then runs the preflight's world R times: one `python -m gpucts_preflight` per rank over torch's
TCPStore on this machine (CPU only), started in a shuffled order each run so that rank 0 is as often
late as early, up to --stagger seconds apart (at random, as launchers on several nodes start them). Prints a line per run and the counts; exit 0 when every run passed on every rank, 1
otherwise, 2 for bad arguments. GPUCTS_PYTHON names the interpreter with torch.
"""
import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_preflight_ranks as ranks  # noqa: E402


def positive(kind):
    def parse(v):
        x = kind(v)
        if not x > 0:
            raise argparse.ArgumentTypeError("%s is not above 0" % v)
        return x
    return parse


def one_run(n, timeout_s, order, gaps):
    """(passed, seconds, why) of one world of n ranks started in `order`, gaps[i] seconds before the i-th."""
    started = time.monotonic()
    master, store = ranks.free_port(), ranks.free_port()
    procs = []
    for r, gap in zip(order, gaps):
        time.sleep(gap)
        procs += ranks.start_ranks([r], n, timeout_s=timeout_s, ports=(master, store))[0]
    results = ranks.finish(procs, timeout_s + 120)
    seconds = time.monotonic() - started
    bad = [(r, rc, text) for r, rc, text in results if rc != 0]
    zero = next(text for r, _, text in results if r == 0)
    if not bad and "PASS" in zero and "%d rank(s)" % n in zero:
        return True, seconds, ""
    r, rc, text = (bad or [(0, 0, zero)])[0]
    lines = [ln for ln in text.splitlines() if ln.startswith(("gpucts preflight", "ERROR"))]
    return False, seconds, "rank %d exit %s: %s" % (r, rc, " | ".join(lines[:3]) or text.strip()[-300:])


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=positive(int), default=2)
    ap.add_argument("--runs", type=positive(int), default=50)
    ap.add_argument("--burners", type=int, default=os.cpu_count() or 1, help="busy processes (0: none)")
    ap.add_argument("--timeout", type=positive(float), default=20.0, help="GPUCTS_PREFLIGHT_TIMEOUT_S of each rank")
    ap.add_argument("--stagger", type=float, default=0.0,
                    help="the most seconds between two starts, drawn at random (launchers on several nodes)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if not ranks.HAS_TORCH:
        sys.stderr.write("preflight_under_load: no torch in %s (set GPUCTS_PYTHON)\n" % ranks.PYTHON)
        return 2
    order = random.Random(a.seed)
    # A SIGTERM (a CTest or CI bound) unwinds through the finally below: no burner outlives the sweep.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(a.burners, 0))]
    passed, times = 0, []
    try:
        for i in range(a.runs):
            o = list(range(a.ranks))
            order.shuffle(o)
            gaps = [0.0] + [round(order.uniform(0, a.stagger), 2) if a.stagger > 0 else 0.0 for _ in o[1:]]
            ok, seconds, why = one_run(a.ranks, a.timeout, o, gaps)
            passed += ok
            times.append(seconds)
            print("run %d/%d: %s in %.1f s (start order %s, gaps %s s)%s" % (
                i + 1, a.runs, "PASS" if ok else "FAIL", seconds, ",".join(map(str, o)), ",".join(map(str, gaps[1:])),
                "" if ok else ": " + why), flush=True)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    print("%d ranks x %d runs under %d burner(s) on %d core(s), timeout %g s, starts up to %g s apart: %d passed, %d "
          "failed; seconds per run min %.1f median %.1f max %.1f" % (
              a.ranks, a.runs, len(burners), os.cpu_count() or 0, a.timeout, a.stagger, passed, a.runs - passed,
              min(times), statistics.median(times), max(times)))
    return 0 if passed == a.runs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
