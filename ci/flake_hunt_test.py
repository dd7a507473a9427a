#!/usr/bin/env python3
"""The counting of ci/flake_hunt: a round fails once whichever ranks report it, and failed test
names are test names, never the "1" of "[  FAILED  ] 1 test, listed below"; the Python entries
(the Python suites' launcher, python -m unittest) are hunted too, one run per round."""
import importlib.machinery
import importlib.util
import os
import sys
import tempfile

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

# The names of the Python suites (rank 0's line; another rank's is prefixed and not counted twice)
# and of unittest (Python 3.11 and older spellings).
python_out = "\n".join([
    "[  FAILED  ] SelfCheck/hung_case_resumes (17.633 s): the case before the hung one: ...",
    "[rank 1] [  FAILED  ] Collectives/all_reduce_sum_i32_1021: rank 1 of 2: ...",
    "[       OK ] Collectives/barrier (0.002 s)",
    "FAIL: test_store_host (tests.test_preflight_ranks.Ranks.test_store_host)",
    "ERROR: test_timeout (tests.test_preflight_logic.Logic)",
])
names = hunt.failures(python_out)[1]
if names != ["SelfCheck/hung_case_resumes", "tests.test_preflight_logic.Logic.test_timeout",
             "tests.test_preflight_ranks.Ranks.test_store_host"]:
    problems.append(f"Python names: {names}")

# Which entries are hunted, and how: ctest's json-v1 entries of each kind.
def entry(name, command, labels, **props):
    properties = [{"name": "LABELS", "value": labels}] + [{"name": k, "value": v} for k, v in props.items()]
    return {"name": name, "command": command, "properties": properties}

tests = [
    entry("gpucts_unit", ["/b/gpucts_unit", "--gtest_output=xml:/b/x.xml"], ["cpu"]),
    entry("gpucts_py_logic", ["/b/suites/gpucts_python_suites", "--junit-output=/b/x.xml", "--world=2"],
          ["cpu", "torch"]),
    entry("gpucts_py_selfcheck", ["/b/suites/gpucts_python_suites", "--selfcheck"], ["cpu", "torch", "self-test"]),
    entry("gpucts_preflight_ranks", ["/usr/bin/python3", "-m", "unittest", "-v", "tests.test_preflight_ranks"],
          ["cpu", "harness", "install-only"]),
    entry("gpucts_layers", ["/usr/bin/cmake", "-P", "/s/check.cmake"], ["cpu", "self-test"]),
    entry("gpucts_py_torch_w1", ["/b/suites/gpucts_python_suites", "--world=1"], ["torch", "single-gpu"]),
]
got = [(n, k) for n, _, _, k in hunt.select(tests, "cpu|torch", "", "")]
want = [("gpucts_unit", "gtest"), ("gpucts_py_logic", "rerun"), ("gpucts_py_selfcheck", "rerun"),
        ("gpucts_preflight_ranks", "rerun"), ("gpucts_py_torch_w1", "rerun")]
if got != want:
    problems.append(f"selected {got}, expected {want}")
got = [n for n, _, _, _ in hunt.select(tests, "cpu", "self-test", "^gpucts_(py|preflight)_")]
if got != ["gpucts_py_logic", "gpucts_preflight_ranks"]:
    problems.append(f"--label cpu --exclude-label self-test --tests ^gpucts_(py|preflight)_: {got}")

# A Python entry runs once per round: a command that fails only its second run fails one round of
# three, and its JUnit option is dropped (the hunt's results stay out of the build's folders).
with tempfile.TemporaryDirectory() as tmp:
    count = os.path.join(tmp, "count")
    script = ("import sys\n"
              "n = int(open(sys.argv[1]).read()) + 1\n"
              "open(sys.argv[1], 'w').write(str(n))\n"
              "assert not any(a.startswith('--junit-output') for a in sys.argv), sys.argv\n"
              "print('[  FAILED  ] Py/second_round (0.1 s)' if n == 2 else '[       OK ] Py/second_round (0.1 s)')\n"
              "sys.exit(1 if n == 2 else 0)\n")
    with open(count, "w") as f:
        f.write("0")
    name, ok, rc, rounds, names, _, skipped, _ = hunt.run_entry(
        "py", [sys.executable, "-c", script, count, "--junit-output=" + os.path.join(tmp, "x.xml")],
        {"TIMEOUT": 60}, 3, tmp, "rerun")
    if (ok, rc, rounds, names, skipped) != (False, 1, 1, ["Py/second_round"], 0) or open(count).read() != "3":
        problems.append(f"a Python entry failing its second of 3 runs: ok={ok} exit={rc} rounds={rounds} "
                        f"names={names} runs={open(count).read()}")
    log = open(os.path.join(tmp, "py.log")).read()
    if "--- round 2 of 3: exit 1, FAILED ---" not in log:
        problems.append("the log does not name the failed round: " + log[:300])
    # CTest's judgement: the skip code passes, a PASS_REGULAR_EXPRESSION must match, a
    # FAIL_REGULAR_EXPRESSION must not.
    judged = [hunt.round_passed("x", 77, {}), hunt.round_passed("bad", 1, {"PASS_REGULAR_EXPRESSION": ["bad"]}),
              hunt.round_passed("OK ] A", 0, {"FAIL_REGULAR_EXPRESSION": ["OK \\] A"]}), hunt.round_passed("", 1, {})]
    if judged != [True, True, False, False]:
        problems.append(f"round_passed: {judged}")

# A round that ran nothing is told apart from one that passed: the skip code, a unittest run whose
# every test skipped, a GoogleTest round that passed no test (one per --gtest_repeat round).
ran_nothing = [hunt.skipped_rounds("", 77, {}, "rerun"),
               hunt.skipped_rounds("Ran 3 tests in 0.1s\n\nOK (skipped=3)\n", 0, {}, "rerun"),
               hunt.skipped_rounds("Ran 3 tests in 0.1s\n\nOK (skipped=1)\n", 0, {}, "rerun"),
               hunt.skipped_rounds("[  PASSED  ] 0 tests.\n[  PASSED  ] 0 tests.\n", 0, {}, "gtest"),
               hunt.skipped_rounds("[  PASSED  ] 2 tests.\n", 0, {}, "gtest")]
if ran_nothing != [1, 1, 0, 2, 0]:
    problems.append(f"skipped_rounds: {ran_nothing}")
with tempfile.TemporaryDirectory() as tmp:
    out = hunt.run_entry("skips", [sys.executable, "-c", "print('no torch here: skip'); raise SystemExit(77)"],
                         {"TIMEOUT": 60}, 2, tmp, "rerun")
    if out[1:3] != (True, 77) or out[6:] != (2, "no torch here: skip"):
        problems.append(f"an entry that skips every round: {out}")

for p in problems:
    print("flake_hunt_test:", p)
sys.exit(1 if problems else 0)
