#!/usr/bin/env python3
"""The counting of ci/flake_hunt: a round fails once whichever ranks report it, and failed test
names are test names, never the "1" of "[  FAILED  ] 1 test, listed below"."""
import importlib.machinery
import importlib.util
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
loader = importlib.machinery.SourceFileLoader("flake_hunt", os.path.join(here, "flake_hunt"))
spec = importlib.util.spec_from_loader("flake_hunt", loader)
hunt = importlib.util.module_from_spec(spec)
loader.exec_module(hunt)

# Two ranks, each printing its summary: round 1 fails on both ranks, round 3 on rank 0 only.
two_ranks = "\n".join([
    "Repeating all tests (iteration 1) . . .",
    "Repeating all tests (iteration 1) . . .",
    "[  FAILED  ] C10d/Refused.ClearError/gloo_avg_f32, where GetParam() = gloo",
    "[  FAILED  ] 1 test, listed below:",
    "[  FAILED  ] C10d/Refused.ClearError/gloo_avg_f32, where GetParam() = gloo",
    "[  FAILED  ] 1 test, listed below:",
    "Repeating all tests (iteration 2) . . .",
    "Repeating all tests (iteration 2) . . .",
    "Repeating all tests (iteration 3) . . .",
    "Repeating all tests (iteration 3) . . .",
    "[  FAILED  ] Faults.Slow (3 ms)",
    "[  FAILED  ] 1 test, listed below:",
    "[  FAILED  ] 2 tests, listed below:",
])
rounds, names = hunt.failures(two_ranks)
problems = []
if rounds != 2:
    problems.append(f"failed rounds: {rounds}, expected 2")
if names != ["C10d/Refused.ClearError/gloo_avg_f32", "Faults.Slow"]:
    problems.append(f"names: {names}")
if hunt.failures("[==========] 3 tests ran.\n[  PASSED  ] 3 tests.\n") != (0, []):
    problems.append("a passing run counted as failing")
for p in problems:
    print("flake_hunt_test:", p)
sys.exit(1 if problems else 0)
