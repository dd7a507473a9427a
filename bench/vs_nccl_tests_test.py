#!/usr/bin/env python3
"""CPU test of vs_nccl_tests.py on the samples in bench/samples/, and of vs_nccl_tests.sh with stand-ins
for nccl-tests and gpucts_bandwidth (CTest entry gpucts_vs_nccl_tests)."""
import csv
import json
import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vs_nccl_tests as v  # noqa: E402

SAMPLES = os.path.join(HERE, "samples")
LOGS = [os.path.join(SAMPLES, "all_reduce_perf.log"), os.path.join(SAMPLES, "sendrecv_perf.log")]
OURS = os.path.join(SAMPLES, "gpucts_bandwidth.bandwidth.json")


class ParseNcclTests(unittest.TestCase):
    def test_rows_and_banner(self):
        with open(LOGS[0]) as f:
            rows, meta = v.parse_nccl_tests(f.read(), "all_reduce_perf.log")
        self.assertEqual([r["bytes"] for r in rows], [8, 16, 1 << 30])
        self.assertEqual(rows[0]["type"], "float")
        self.assertEqual(rows[0]["out_of_place"]["time_us"], 6.31)
        self.assertIsNone(rows[0]["out_of_place"]["wrong"], "N/A without a check")
        self.assertEqual(rows[2]["out_of_place"]["algbw_gbps"], 2103.6)
        self.assertEqual(rows[2]["in_place"]["algbw_gbps"], 5e6, "nccl-tests' exponent form")
        self.assertEqual(meta, {"nccl_header": 22803, "nccl_library": 22803, "ranks": 1})

    def test_file_names_name_the_row(self):
        self.assertEqual(v.row_of_log("/x/all_reduce_perf.log"), "AllReduce")
        self.assertEqual(v.row_of_log("reduce_perf_mpi.txt"), "Reduce")
        self.assertEqual(v.row_of_log("reduce_scatter_perf.log"), "ReduceScatter")
        self.assertEqual(v.row_of_log("sendrecv_perf.log"), "SendRecvRing")
        with self.assertRaises(v.ParseError):
            v.row_of_log("hypercube_perf.log")

    def test_goal_points_where_nccl_tests_rounds_to_16_bytes_per_rank(self):
        self.assertEqual(v.smallest_bytes("AllReduce", 4), 8)
        self.assertEqual(v.smallest_bytes("AllGather", 1), 16)
        self.assertEqual(v.smallest_bytes("AlltoAll", 2), 32)
        goal = {"collective": "AllGather", "placement": "out_of_place", "ranks": 1}
        self.assertTrue(v.is_goal(dict(goal, bytes=16)))
        self.assertFalse(v.is_goal(dict(goal, bytes=8)), "nccl-tests ran 0 B there")
        self.assertTrue(v.is_goal(dict(goal, bytes=1 << 30)))
        self.assertFalse(v.is_goal(dict(goal, bytes=1 << 30, placement="in_place")))

    def test_sweep_starts_where_nccl_tests_runs_and_keeps_its_last_size(self):
        self.assertEqual(v.sweep_for("AllReduce", 1, "8", "1G", "134217728"), (8, 1 << 27))
        self.assertEqual(v.sweep_for("AllGather", 1, "8", "1G", "134217728"), (16, 1 << 26))
        self.assertEqual(v.sweep_for("AllGather", 1, "4", "1G", "4"), (16, 4), "the factor kept: 16 * 4^13 = 1 GiB")
        self.assertEqual(v.sweep_for("AllGather", 1, "8", "1G", "4"), (16, 2), "8 * 4^13 = 512 MiB, odd from 16 by 4")
        self.assertEqual(v.sweep_for("AllGather", 1, "8", "1G", "2"), (16, 2))
        self.assertEqual(v.sweep_for("AllGather", 1, "8", "1G", "512"), (8, 512),
                         "no factor from 16 B reaches 1 GiB: the given sweep")
        self.assertEqual(v.sweep_for("AllGather", 3, "8", "1G", "134217728"), (8, 1 << 27), "48 B: none reaches 1 GiB")
        self.assertEqual(v.sweep_for("AlltoAll", 2, "08", "1G", "134217728"), (32, 1 << 25), "leading zero")
        for bad in (("x", "1G", "2"), ("8", "1G", "1"), ("1G", "8", "2")):
            with self.assertRaises(v.ParseError):
                v.sweep_for("AllReduce", 1, *bad)

    def test_a_goal_size_neither_tool_ran_is_a_miss(self):
        row = {"collective": "AllGather", "placement": "out_of_place", "ranks": 1, "bytes": 16,
               "modes": {"blocking": {"ratio": 1.0}}}
        miss = v.misses([row])
        self.assertEqual(miss, ["AllGather 1 GiB: run by neither tool"])

    def test_bad_output_is_an_error(self):
        with self.assertRaises(v.ParseError):
            v.parse_nccl_tests("# only a banner\n", "empty")
        with self.assertRaises(v.ParseError):
            v.parse_nccl_tests("           8             2     float     sum      -1     6.31\n", "short")
        with self.assertRaises(v.ParseError):
            v.parse_nccl_tests("8 2 float sum -1 x 0 0 0 1 1 1 0\n", "nan")


class Reading(unittest.TestCase):
    @staticmethod
    def entry(ratio, ratio_host=None, mine=None, theirs=None):
        return {"collective": "AllReduce", "bytes": 8, "placement": "out_of_place", "nccl_tests_enqueue_us": theirs,
                "modes": {"blocking": {"ratio": ratio, "ratio_host": ratio_host, "enqueue_us": mine}}}

    def test_where_a_difference_comes_from(self):
        self.assertEqual(v.reading(self.entry(1.02)), "within the goal")
        self.assertEqual(v.reading(self.entry(0.6, ratio_host=0.98)),
                         "the timing method: by the host clock gpucts is 0.98x")
        self.assertEqual(v.reading(self.entry(0.6, ratio_host=0.62, mine=9.0, theirs=6.0)),
                         "the host between two calls: gpucts' enqueue 1.50x nccl-tests'")
        self.assertEqual(v.reading(self.entry(0.6, ratio_host=0.62, mine=6.1, theirs=6.0)),
                         "not the host between calls (enqueue 1.02x): the device side or the wait")
        self.assertEqual(v.reading(self.entry(0.6, ratio_host=0.62, mine=6.1)),
                         "not read: no enqueue figure of nccl-tests (-C 1)")
        self.assertEqual(v.reading(self.entry(0.6, ratio_host=0.62, theirs=6.0)), "not read: no enqueue figure of gpucts")
        self.assertEqual(v.reading(self.entry(0.6, ratio_host=0.62)), "not read: no enqueue figure of either tool")
        self.assertEqual(v.reading(self.entry(None)), "")
        unsteady = self.entry(0.75, ratio_host=0.8, mine=6.1, theirs=6.0)
        unsteady["nccl_tests_run_spread"], unsteady["modes"]["blocking"]["run_spread"] = 1.05, 1.4
        self.assertEqual(v.reading(unsteady),
                         "launch to launch: over each tool's own runs the time spans 1.05x (nccl-tests), 1.40x (gpucts)")
        unsteady["nccl_tests_run_spread"] = None
        self.assertEqual(v.reading(unsteady), "launch to launch: over each tool's own runs the time spans 1.40x (gpucts)",
                         "a tool with one run has no span to show")
        unsteady["nccl_tests_run_spread"] = 1.05
        unsteady["modes"]["blocking"].update(ratio_min=1.15, ratio_max=1.3)
        self.assertIn("not the host between calls", v.reading(unsteady), "every round above the band")
        unsteady["modes"]["blocking"].update(ratio_min=0.6, ratio_max=0.85)
        self.assertEqual(v.reading(unsteady), "not the host between calls (enqueue 1.02x): the device side or the wait",
                         "every round below the band: not the draw of each run")
        unsteady["modes"]["blocking"].update(ratio_min=0.6, ratio_max=0.95)
        self.assertIn("launch to launch", v.reading(unsteady))
        unsteady["modes"]["blocking"]["run_spread"] = 1.2
        self.assertEqual(v.reading(unsteady), "not the host between calls (enqueue 1.02x): the device side or the wait",
                         "a spread within the band's width explains nothing")

    def test_run_spread(self):
        self.assertAlmostEqual(v.run_spread([5.0, 7.5, 6.0]), 1.5)
        self.assertIsNone(v.run_spread([5.0]))
        self.assertIsNone(v.run_spread([None, 5.0]))
        self.assertAlmostEqual(v.run_spread([0, 5.0, 6.0]), 1.2, msg="a zero time is no run")


class CputimeLogs(unittest.TestCase):
    def test_a_log_without_its_cputime_column_is_left_out_with_a_warning(self):
        said = []
        self.assertEqual(v.load_cputime([LOGS[0]], warn=said.append), {})
        self.assertEqual(len(said), 1)
        self.assertIn("left out: no cputime column", said[0])
        with tempfile.TemporaryDirectory() as d:
            failed = os.path.join(d, "all_reduce_perf.cpu.r2.log")
            with open(failed, "w") as f:
                f.write("#       size  count  type  redop  root  cputime  algbw  busbw  #wrong  cputime\nexit 1\n")
            self.assertEqual(v.load_cputime([failed], warn=said.append), {})
            self.assertIn("no result rows", said[-1])
            path = os.path.join(d, "all_reduce_perf.cpu.r1.log")
            with open(LOGS[0]) as f, open(path, "w") as g:
                g.write(re.sub(r"(root\s+)time(\s+algbw\s+busbw\s+#wrong\s+)time", r"\1cputime\2cputime", f.read()))
            got = v.load_cputime([path])
            self.assertEqual(got[("AllReduce", 8, "out_of_place")], 6.31)


class Compare(unittest.TestCase):
    def test_ratio_per_collective_size_and_mode_kept_apart(self):
        table, modes, runs = v.compare(LOGS, [OURS])
        self.assertEqual(modes, ["blocking", "nonblocking"], "the default first")
        by = {(e["collective"], e["bytes"], e["placement"]): e for e in table}
        sr8 = by[("SendRecvRing", 8, "out_of_place")]
        self.assertAlmostEqual(sr8["modes"]["blocking"]["ratio"], 9.69 / 9.5)
        self.assertAlmostEqual(sr8["modes"]["nonblocking"]["ratio"], 9.69 / 51.1)
        self.assertEqual(v.misses(table, "blocking"), [])
        self.assertIn("SendRecvRing 8 B: 0.19x", v.misses(table, "nonblocking"))
        self.assertIn("AllReduce 1 GiB: not measured by gpucts (nonblocking)", v.misses(table, "nonblocking"))
        self.assertEqual(runs[0]["nccl"], "2.28.3")

    def test_a_failed_nccl_tests_run_costs_its_round_and_a_lost_collective_is_a_miss(self):
        with tempfile.TemporaryDirectory() as d:
            import shutil
            good = os.path.join(d, "all_reduce_perf.r1.log")
            shutil.copy(LOGS[0], good)
            cut = os.path.join(d, "all_reduce_perf.r2.log")  # killed before its first row
            lost = os.path.join(d, "sendrecv_perf.r1.log")   # failed in its only round
            for path in (cut, lost):
                with open(path, "w") as f:
                    f.write("# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\nexit 1\n")
            table, _, _ = v.compare([good, cut, lost], [OURS])
            by = {(e["collective"], e["bytes"], e["placement"]): e for e in table}
            self.assertEqual(by[("AllReduce", 8, "out_of_place")]["rounds"], 1, "round 2 left out")
            self.assertIsNone(by[("AllReduce", 8, "out_of_place")]["nccl_tests_failed"])
            self.assertEqual(by[("SendRecvRing", 8, "out_of_place")]["nccl_tests_failed"], [lost])
            miss = v.misses(table, "blocking")
            self.assertEqual(miss, ["SendRecvRing 8 B: nccl-tests gave no result rows (sendrecv_perf.r1.log)",
                                    "SendRecvRing 1 GiB: nccl-tests gave no result rows (sendrecv_perf.r1.log)"])
            args = ["compare", "--gpucts", OURS, "--out", os.path.join(d, "vs"), "--require"]
            for log in (good, cut, lost):
                args += ["--nccl-tests", log]
            self.assertEqual(v.main(args), 1, "the lost goal points fail --require")
            with open(os.path.join(d, "vs.md")) as f:
                self.assertIn("| SendRecvRing | 8 B | out of place | no result rows (sendrecv_perf.r1.log) |", f.read())

    def test_outputs_and_require(self):
        with tempfile.TemporaryDirectory() as d:
            args = ["compare", "--gpucts", OURS, "--out", os.path.join(d, "vs")]
            for log in LOGS:
                args += ["--nccl-tests", log]
            self.assertEqual(v.main(args + ["--require"]), 0)
            with open(os.path.join(d, "vs.md")) as f:
                md = f.read()
            self.assertIn("| SendRecvRing | 8 B | out of place | 9.69 us | 9.50 us | 1.02x ok | 1.02-1.02 (0%, 1) "
                          "| 51.10 us | **0.19x** | 0.19-0.19 (0%, 1) |", md)
            # One rank in place moves nothing: no figure, the reason instead of 5e+06 GB/s.
            self.assertIn("| AllReduce | 1 GiB | in place | no data moves (1 rank, in place) |", md)
            self.assertNotIn("5000000", md)
            self.assertIn("blocking: 4 of 4 goal points within 0.9-1.1x", md)
            with open(os.path.join(d, "vs.csv")) as f:
                head = f.readline().strip().split(",")
            self.assertEqual(head[:3], ["collective", "bytes", "placement"])
            self.assertIn("ratio_nonblocking", head)
            # A blocking goal point 20% slower than nccl-tests fails --require.
            with open(OURS) as f:
                j = json.load(f)
            for p in j["points"]:
                if p["collective"] == "AllReduce" and p["bytes"] == 1 << 30:
                    p["time_us"] *= 1.25
            slow = os.path.join(d, "slow.json")
            with open(slow, "w") as f:
                json.dump(j, f)
            args[2] = slow
            self.assertEqual(v.main(args + ["--require"]), 1)
            self.assertEqual(v.main(args), 0, "without --require the table is written, the run passes")
            with open(os.path.join(d, "bad.json"), "w") as f:
                f.write("{")
            args[2] = os.path.join(d, "bad.json")
            self.assertEqual(v.main(args), 2)


class Interleaved(unittest.TestCase):
    """Five rounds, the tools alternating: each round's ratio pairs the two tools' runs of that round."""

    NT = [6.31, 6.31, 12.62, 6.60, 6.00]  # nccl-tests' AllReduce 8 B per round; round 3 ran slow for both
    OURS_US = [6.00, 6.00, 12.00, 6.00, 6.00]

    def write_rounds(self, d):
        with open(LOGS[0]) as f:
            log = f.read()
        with open(OURS) as f:
            ours = json.load(f)
        logs, files = [], []
        for r, (nt, us) in enumerate(zip(self.NT, self.OURS_US), 1):
            path = os.path.join(d, "all_reduce_perf.r%d.log" % r)
            with open(path, "w") as f:
                f.write(log.replace("-1     6.31 ", "-1     %.2f " % nt, 1))
            logs.append(path)
            j = json.loads(json.dumps(ours))
            for p in j["points"]:
                if p["collective"] == "AllReduce" and p["bytes"] == 8 and not p["in_place"]:
                    p["time_us"] = us
            path = os.path.join(d, "gpucts_blocking.r%d.all_reduce.json" % r)
            with open(path, "w") as f:
                json.dump(j, f)
            files.append(path)
        return logs, files

    def test_median_of_paired_ratios_and_their_range(self):
        self.assertEqual(v.round_of("x/all_reduce_perf.r12.log"), 12)
        self.assertEqual(v.round_of("all_reduce_perf.log"), 0)
        with tempfile.TemporaryDirectory() as d:
            logs, files = self.write_rounds(d)
            table, modes, _ = v.compare(logs, files)
            by = {(e["collective"], e["bytes"], e["placement"]): e for e in table}
            ar8 = by[("AllReduce", 8, "out_of_place")]
            m = ar8["modes"]["blocking"]
            ratios = sorted(nt / us for nt, us in zip(self.NT, self.OURS_US))
            self.assertEqual(m["rounds"], 5)
            self.assertAlmostEqual(m["ratio"], ratios[2])
            self.assertAlmostEqual(m["ratio_min"], 1.0)
            self.assertAlmostEqual(m["ratio_max"], 1.1)
            self.assertAlmostEqual(m["ratio_spread_pct"], (1.1 - 1.0) / ratios[2] * 100)
            # The slow third round moved both tools: paired, it is a ratio like the others.
            self.assertAlmostEqual(ratios[2], 1.0517, places=3)
            self.assertEqual(ar8["nccl_tests_us"], 6.31, "times are medians over the rounds")
            self.assertEqual(m["time_us"], 6.0)
            out = os.path.join(d, "vs")
            args = ["compare", "--out", out, "--title", "t"]
            for log in logs:
                args += ["--nccl-tests", log]
            for g in files:
                args += ["--gpucts", g]
            self.assertEqual(v.main(args), 0)
            with open(out + ".md") as f:
                md = f.read()
            self.assertIn("| AllReduce | 8 B | out of place | 6.31 us | 6.00 us | 1.05x ok | 1.00-1.10 (10%, 5) |", md)
            self.assertIn("each the median over 5 round(s)", md)


def edited_json(d, name, edit):
    """The sample gpucts file changed in place by `edit(j)`, written to d/name; its path."""
    with open(OURS) as f:
        j = json.load(f)
    edit(j)
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump(j, f)  # NaN and Infinity written as JSON's extension spells them
    return path


def edited_log(d, name, old, new, source=LOGS[0]):
    """A sample nccl-tests log with its first `old` replaced by `new`, written to d/name; its path."""
    with open(source) as f:
        text = f.read()
    assert old in text, old
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))
    return path


class WhatItCannotJudge(unittest.TestCase):
    """Inputs compare refuses (one line on stderr, exit 2) and rows it fails."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def run_compare(self, *args, own_process=False):
        """compare's exit code, stderr and stdout; in a process of its own where it might hang, so
        that a hang is a timeout here, not a stuck test."""
        args = ["compare", "--out", os.path.join(self.d, "vs")] + list(args)
        if own_process:
            import subprocess
            p = subprocess.run([sys.executable, os.path.join(HERE, "vs_nccl_tests.py")] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
            return p.returncode, p.stderr, p.stdout
        import contextlib
        import io
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = v.main(args)
        return rc, err.getvalue(), out.getvalue()

    def assertRefused(self, args, *fragments, own_process=False):
        rc, err, _ = self.run_compare(*args, own_process=own_process)
        self.assertEqual(rc, 2, "%s: %s" % (args, err))
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertNotIn("Traceback", err)
        for text in fragments:
            self.assertIn(text, err)
        return err

    @staticmethod
    def at_world(ranks):
        """An edit of a gpucts file: its run and every point at `ranks`."""
        def edit(j):
            j["world_size"] = ranks
            for p in j["points"]:
                p["ranks"] = ranks
        return edit

    def test_runs_of_two_world_sizes_are_refused_naming_both(self):
        w8 = edited_json(self.d, "w8.json", self.at_world(8))
        err = self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", w8, "--require"], LOGS[0], w8)
        self.assertRegex(err, r"world sizes differ: gpucts at 8 rank\(s\) .*, nccl-tests at 1 ")
        # A point of another world size than its file's.
        odd = edited_json(self.d, "odd.json", lambda j: j["points"][0].update(ranks=2))
        self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", odd], "points[0].ranks is 2, the file's world_size 1")
        # An -C 1 log of two ranks beside a one-rank run.
        two = edited_log(self.d, "all_reduce_perf.cpu.log", "#\n# Collective",
                         "#  Rank  1 Group  0 Pid 4243 on gpuhost device  0 [0000:18:00] NVIDIA H200\n#\n# Collective")
        with open(two) as f:
            text = f.read()
        with open(two, "w") as f:
            f.write(re.sub(r"(root\s+)time(\s+algbw\s+busbw\s+#wrong\s+)time", r"\1cputime\2cputime", text))
        self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", OURS, "--nccl-tests-cputime", two],
                           "nccl-tests -C 1 at 2", two)
        # Two runs of a table, one of one rank, one of two.
        runs = []
        for name, ranks in (("one", 1), ("two", 2)):
            folder = os.path.join(self.d, name)
            os.makedirs(os.path.join(folder, "nccl-tests"))
            os.makedirs(os.path.join(folder, "gpucts"))
            src = LOGS[0] if name == "one" else LOGS[1]
            lines = "".join("#  Rank %2d Group  0 Pid 1 on h device  0 [0000:18:00] NVIDIA H200\n" % r
                            for r in range(ranks))
            edited_log(os.path.join(folder, "nccl-tests"), os.path.basename(src),
                       "#  Rank  0 Group  0 Pid   4242 on   gpuhost device  0 [0000:18:00] NVIDIA H200\n", lines, src)
            edited_json(os.path.join(folder, "gpucts"), "blocking.json", self.at_world(ranks))
            runs += ["--from", folder]
        self.assertRefused(runs, "world sizes differ", "at 1 rank(s)", "at 2 (")
        # A log whose ranks it does not say.
        anonymous = edited_log(self.d, "all_reduce_perf.log", "#  Rank  0", "#  Device  0")
        self.assertRefused(["--nccl-tests", anonymous, "--gpucts", OURS], "world size is unknown")

    def test_wrong_results_fail_their_row_never_the_goal(self):
        # 5 wrong results at the AllReduce 8 B goal point, in exponent form at 16 B (not a goal point).
        wrong = edited_log(self.d, "all_reduce_perf.log", "6.31    0.00    0.00     N/A", "6.31    0.00    0.00       5")
        with open(wrong) as f:
            text = f.read()
        with open(wrong, "w") as f:
            f.write(text.replace("6.40    0.00    0.00     N/A", "6.40    0.00    0.00   1.2e+06"))
        rc, err, out = self.run_compare("--nccl-tests", wrong, "--gpucts", OURS, "--require")
        self.assertEqual(rc, 1, err)
        with open(os.path.join(self.d, "vs.md")) as f:
            md = f.read()
        self.assertIn("| AllReduce | 8 B | out of place | **failed: nccl-tests reported 5 wrong results** | 6.00 us |  |  |",
                      md, "gpucts' figure kept, no ratio")
        self.assertIn("blocking: 1 of 2 goal points within 0.9-1.1x: outside AllReduce 8 B: nccl-tests reported 5 "
                      "wrong results", md)
        self.assertIn("failed rows (no ratio): AllReduce 8 B out of place: nccl-tests reported 5 wrong results; "
                      "AllReduce 16 B out of place: nccl-tests reported 1200000 wrong results", md)
        self.assertNotIn("within the goal", md)
        with open(os.path.join(self.d, "vs.csv")) as f:
            row = next(r for r in csv.DictReader(f) if r["bytes"] == "8" and r["placement"] == "out_of_place")
        self.assertEqual((row["nccl_tests_wrong"], row["ratio_blocking"]), ("5", ""))
        # Wrong results off the goal points still fail --require.
        off_goal = edited_log(self.d, "all_reduce_perf.r1.log", "6.40    0.00    0.00     N/A",
                              "6.40    0.00    0.00       2")
        rc, err, out = self.run_compare("--nccl-tests", off_goal, "--gpucts", OURS, "--require")
        self.assertEqual(rc, 1, out)
        self.assertIn("blocking: 2 of 2 goal points within", out)
        self.assertEqual(self.run_compare("--nccl-tests", off_goal, "--gpucts", OURS)[0], 0,
                         "without --require the table is written, the run passes")

    def test_only_regular_files_are_read(self):
        fifo = os.path.join(self.d, "all_reduce_perf.log")
        os.mkfifo(fifo)  # no writer: opening it blocks, reading it would never end
        self.assertRefused(["--nccl-tests", fifo, "--gpucts", OURS], fifo, "not a regular file", own_process=True)
        self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", fifo], "not a regular file", own_process=True)
        folder = os.path.join(self.d, "run")
        os.makedirs(os.path.join(folder, "nccl-tests"))
        os.symlink(fifo, os.path.join(folder, "nccl-tests", "sendrecv_perf.log"))
        self.assertRefused(["--from", folder], "sendrecv_perf.log: not a regular file", own_process=True)
        os.mkdir(os.path.join(self.d, "sendrecv_perf.log"))
        self.assertRefused(["--nccl-tests", os.path.join(self.d, "sendrecv_perf.log"), "--gpucts", OURS],
                           "not a regular file")
        self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", os.devnull], os.devnull, "not a regular file")
        self.assertRefused(["--nccl-tests", os.path.join(self.d, "gather_perf.log"), "--gpucts", OURS],
                           "gather_perf.log: No such file or directory")
        if os.path.exists("/proc/self/status"):
            self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", "/proc/self/status"], "malformed JSON")
            os.unlink(os.path.join(folder, "nccl-tests", "sendrecv_perf.log"))
            os.symlink("/proc/self/status", os.path.join(folder, "nccl-tests", "all_reduce_perf.log"))
            self.assertRefused(["--from", folder], "not nccl-tests' output")

    def test_fields_of_the_wrong_type_name_the_file_and_field(self):
        def point(key, value):
            return lambda j: j["points"][1].__setitem__(key, value)
        cases = [
            ("world_size '8'", lambda j: j.update(world_size="8"), "world_size is \"8\", expected a whole number >= 1"),
            ("world_size 0", lambda j: j.update(world_size=0), "world_size is 0"),
            ("points an object", lambda j: j.update(points={}), "points is {}, expected a list"),
            ("a point a list", lambda j: j["points"].__setitem__(0, []), "points[0] is [], expected an object"),
            ("bytes a string", point("bytes", "8"), "points[1].bytes is \"8\", expected a whole number >= 0"),
            ("bytes negative", point("bytes", -8), "points[1].bytes is -8"),
            ("bytes a fraction", point("bytes", 8.5), "points[1].bytes is 8.5"),
            ("time NaN", point("time_us", float("nan")), "points[1].time_us is NaN, expected a finite number >= 0"),
            ("time inf", point("time_us", float("inf")), "points[1].time_us is Infinity"),
            ("time negative", point("time_us", -1.0), "points[1].time_us is -1.0"),
            ("time a bool", point("time_us", True), "points[1].time_us is true"),
            ("algbw a list", point("algbw_gbps", [1]), "points[1].algbw_gbps is [1]"),
            ("host time a string", point("host_time_us", "6.1"), "points[1].host_time_us is \"6.1\""),
            ("in_place a string", point("in_place", "no"), "points[1].in_place is \"no\", expected true or false"),
            ("collective a number", point("collective", 5), "points[1].collective is 5, expected a string"),
            ("dtype missing", lambda j: j["points"][1].pop("dtype"), "points[1].dtype is missing"),
            ("the top a list", None, "the top level is [{}], expected an object"),
        ]
        for what, edit, message in cases:
            with self.subTest(what):
                path = os.path.join(self.d, "bad.json")
                if edit:
                    edited_json(self.d, "bad.json", edit)
                else:
                    with open(path, "w") as f:
                        f.write("[{}]")
                self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", path], path + ": " + message)
        # nccl-tests' columns: a number that is none is the row's error, naming it.
        for bad in ("nan", "inf", "1e999", "-6.31"):
            with self.subTest(bad), self.assertRaisesRegex(v.ParseError, r"^log:1: out_of_place time_us is "):
                v.parse_nccl_tests("8 2 float sum -1 %s 0 0 0 1 1 1 0\n" % bad, "log")
        with self.assertRaisesRegex(v.ParseError, r"^log:1: in_place wrong is \"x\""):
            v.parse_nccl_tests("8 2 float sum -1 1 0 0 0 1 1 1 x\n", "log")

    def test_broken_files_one_line_and_exit_2(self):
        import random
        garbage = random.Random(7).randbytes(4096)
        with open(OURS) as f:
            whole = f.read()
        for name, data in (("truncated.json", whole[:len(whole) // 2].encode()), ("garbage.json", garbage),
                           ("empty.json", b""), ("deep.json", b"[" * 100000), ("latin1.json", b'{"schema": "\xe9"}')):
            with self.subTest(name):
                path = os.path.join(self.d, name)
                with open(path, "wb") as f:
                    f.write(data)
                self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", path], path + ": malformed JSON")
        for name, data in (("garbage", garbage), ("empty", b""), ("text", b"hello\n8 bytes later\n")):
            with self.subTest(name):
                path = os.path.join(self.d, "all_reduce_perf.%s.log" % name)
                with open(path, "wb") as f:
                    f.write(data)
                self.assertRefused(["--nccl-tests", path, "--gpucts", OURS], path + ": not nccl-tests' output")
        rc, err, _ = self.run_compare("--nccl-tests", LOGS[0], "--gpucts", OURS, "--out",
                                      os.path.join(self.d, "no", "such", "folder", "vs"))
        self.assertEqual((rc, len(err.splitlines())), (2, 1), err)

    def test_outputs_only_where_a_file_may_be_written(self):
        # A PREFIX without a file name would write the hidden .csv/.md; a FIFO at PREFIX.csv blocked the
        # write for good; a link at PREFIX.md sent the table to its target. Each is refused at once.
        fifo = os.path.join(self.d, "fifo")
        os.mkfifo(fifo + ".csv")
        victim = os.path.join(self.d, "victim")
        with open(victim, "w") as f:
            f.write("keep me\n")
        os.symlink(victim, os.path.join(self.d, "link.md"))
        for prefix, words in (("", "--out '': expected a PREFIX that ends in a file name"),
                              (self.d + os.sep, "expected a PREFIX that ends in a file name"),
                              (fifo, fifo + ".csv: exists and is not a regular file"),
                              (os.path.join(self.d, "link"), "link.md: exists and is not a regular file")):
            with self.subTest(prefix=prefix):
                self.assertRefused(["--nccl-tests", LOGS[0], "--gpucts", OURS, "--out", prefix], words,
                                   own_process=True)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertEqual(sorted(os.listdir(self.d)), ["fifo.csv", "link.md", "victim"], "nothing else written")
        # Written whole: the table and its CSV, and no temporary file beside them.
        self.assertEqual(self.run_compare("--nccl-tests", LOGS[0], "--gpucts", OURS)[0], 0)
        self.assertEqual(sorted(os.listdir(self.d)), ["fifo.csv", "link.md", "victim", "vs.csv", "vs.md"])

    def test_bad_usage_is_one_line(self):
        import subprocess
        for args, words in (([], "the following arguments are required: cmd"),
                            (["compare", "--nccl-tests", LOGS[0]], "the following arguments are required: --out"),
                            (["compare", "--out", "x", "--frob"], "unrecognized arguments: --frob")):
            with self.subTest(args=args):
                p = subprocess.run([sys.executable, os.path.join(HERE, "vs_nccl_tests.py")] + args,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=20)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                self.assertIn(words, p.stderr)


# Stand-ins for nccl-tests' binaries and gpucts_bandwidth: each prints or writes what the real one
# would for the sizes it is asked for (nccl-tests' 16 B-per-rank rounding included), so that the
# script's arguments, rounds and table are checked without a GPU.
FAKE_ARGS = r"""
import json, os, sys
a = sys.argv[1:]
def opt(k): return a[a.index(k) + 1]
def size(t):
    t = t.upper()
    return int(t[:-1]) << {"K": 10, "M": 20, "G": 30}[t[-1]] if t[-1] in "KMG" else int(t)
b, e, f = size(opt("-b")), size(opt("-e")), int(opt("-f"))
"""
FAKE_NCCL_TESTS = FAKE_ARGS + r"""
aligned = os.environ["FAKE_BINARY"] in ("all_gather", "reduce_scatter", "alltoall", "scatter", "gather")
# Under (the stand-in) mpirun: nccl-tests' MPI build, one process per rank, rank 0 printing. Its GPU
# is its rank among the host's processes unless NCCL_TESTS_DEVICE says; the host has one GPU.
rank, ranks = int(os.environ.get("OMPI_COMM_WORLD_RANK", 0)), int(os.environ.get("OMPI_COMM_WORLD_SIZE", 1))
if ranks > 1:
    if os.environ.get("NCCL_HOSTID") != "simhost%d" % rank:
        sys.exit("rank %d: NCCL_HOSTID is %r" % (rank, os.environ.get("NCCL_HOSTID")))
    if os.environ.get("NCCL_TESTS_DEVICE") != "0":
        sys.exit("Invalid number of GPUs: 1 requested but only 1 were found.")
    if rank:
        sys.exit(0)
print("# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803")
for r in range(ranks):
    print("#  Rank %2d Group  0 Pid 1 on h device  0 [0000:01:00] NVIDIA H200" % r)
cpu = "-C" in a and opt("-C") == "1"
print("#       size         count      type   redop    root  %7s  algbw  busbw  #wrong  %7s  algbw  busbw  #wrong"
      % (("cputime",) * 2 if cpu else ("time",) * 2))
s = b
while s <= e:
    n = s // (16 * ranks) * (16 * ranks) if aligned else s
    t = 6.5 if cpu else 7.0 + n / 2.1e6  # -C 1: the calls alone
    print("%12d %12d float sum -1 %8.2f %7.2f 0 N/A 0.50 %7.2f 0 N/A" % (n, n // 4, t, n / t / 1e3, n / 0.5e3))
    s *= f
"""
FAKE_GPUCTS = FAKE_ARGS + r"""
row = next(x for x in a if x.startswith("--gtest_filter=")).split("=")[1].split(".")[0]
out = next(x for x in a if x.startswith("--output=")).split("=", 1)[1]
pts, s = [], b
while s <= e:
    t = (7.0 + s / 2.1e6) * 1.02
    for ip in (False, True):
        pts.append({"collective": row, "dtype": "f32", "op": "sum", "bytes": s, "in_place": ip,
                    "comm": "blocking", "time_us": t, "algbw_gbps": s / t / 1e3, "spread_pct": 0.5,
                    "host_time_us": t * 1.01, "enqueue_us": 6.6})
    s *= f
json.dump({"schema": "gpucts.bandwidth/1", "points": pts, "world_size": 1}, open(out + ".json", "w"))
"""

# gpucts_mp_bandwidth takes its settings from the environment; rank 0 writes the results.
FAKE_GPUCTS_MP = r"""
import json, os, sys
env = os.environ
if env.get("GPUCTS_SIMULATED_HOSTS") != "1":
    sys.exit("not in the simulated-hosts mode")
if env["OMPI_COMM_WORLD_RANK"] != "0":
    sys.exit(0)
ranks = int(env["OMPI_COMM_WORLD_SIZE"])
b, e, f = (int(x.replace("G", "")) << (30 if x.endswith("G") else 0) for x in env["GPUCTS_BW_SWEEP"].split(":"))
row = next(x for x in sys.argv[1:] if x.startswith("--gtest_filter=")).split("=")[1].split(".")[0]
pts, s = [], b
while s <= e:
    t = (7.0 + s / 2.1e6) * 1.02
    pts.append({"collective": row, "dtype": "f32", "op": "sum", "bytes": s, "in_place": False, "comm": "blocking",
                "time_us": t, "algbw_gbps": s / t / 1e3, "spread_pct": 0.5, "host_time_us": t, "enqueue_us": 6.6})
    s *= f
json.dump({"schema": "gpucts.bandwidth/1", "points": pts, "world_size": ranks}, open(env["GPUCTS_BW_OUTPUT"] + ".json", "w"))
"""
# mpirun: -np N copies of the command, each with its OMPI_COMM_WORLD_RANK; -x NAME=VALUE exported.
FAKE_MPIRUN = r"""
import os, subprocess, sys
a, env, n, i = sys.argv[1:], dict(os.environ), 1, 0
while i < len(a) and a[i].startswith("-"):
    if a[i] in ("-np", "-x"):
        if a[i] == "-np":
            n = int(a[i + 1])
        elif "=" in a[i + 1]:
            k, v = a[i + 1].split("=", 1)
            env[k] = v
        i += 2
    else:
        i += 1
procs = [subprocess.Popen(a[i:], env=dict(env, OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE=str(n)))
         for r in range(n)]
sys.exit(max(p.wait() for p in procs))
"""


class ScriptWithStandIns(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        os.mkdir(os.path.join(d, "nt"))
        os.mkdir(os.path.join(d, "g"))
        for name, text in (("nt.py", FAKE_NCCL_TESTS), ("g.py", FAKE_GPUCTS)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        for binary in v.BINARY_ROWS:
            self.executable(os.path.join(d, "nt", binary + "_perf"),
                            'FAKE_BINARY=%s exec python3 %s/nt.py "$@"' % (binary, d))
        self.gpucts = os.path.join(d, "g", "gpucts_bandwidth")
        self.executable(self.gpucts, 'exec python3 %s/g.py "$@"' % d)
        os.mkdir(os.path.join(d, "bin"))
        for name, text in (("gmp.py", FAKE_GPUCTS_MP), ("mpirun.py", FAKE_MPIRUN)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        self.mp = os.path.join(d, "g", "gpucts_mp_bandwidth")
        self.executable(os.path.join(d, "bin", "mpirun"), 'exec python3 %s/mpirun.py "$@"' % d)

    def tearDown(self):
        self.dir.cleanup()

    @staticmethod
    def executable(path, line):
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + line + "\n")
        os.chmod(path, 0o755)

    def run_script(self, *args):
        import subprocess
        out = os.path.join(self.dir.name, "out")
        env = dict(os.environ, PATH=os.path.join(self.dir.name, "bin") + os.pathsep + os.environ["PATH"])
        p = subprocess.run(["bash", os.path.join(HERE, "vs_nccl_tests.sh"), "--nccl-tests-bin",
                            os.path.join(self.dir.name, "nt"), "--gpucts-bin", self.gpucts, "--out", out,
                            "--no-nonblocking"] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120,
                           env=env)
        return p.returncode, p.stdout, out

    def test_two_point_sweep_every_collective_at_its_goal_sizes(self):
        rc, text, out = self.run_script("--rounds", "2", "--sweep", "8:1G:134217728", "--require")
        self.assertEqual(rc, 0, text)
        self.assertIn("blocking: 18 of 18 goal points within 0.9-1.1x", text)
        self.assertIn("| AllGather | 16 B | out of place |", text)
        self.assertIn("| AllReduce | 8 B | out of place |", text)
        self.assertNotIn("| AllGather | 0 B |", text)
        self.assertIn("round 2 of 2 (gpucts first)", text)
        self.assertTrue(os.path.exists(os.path.join(out, "gpucts", "blocking.r2.all_gather.json")))

    def test_host_clock_section_beside_nccl_tests_cputime(self):
        rc, text, out = self.run_script("--rounds", "1", "--sweep", "8:1G:134217728", "--colls", "all_reduce,all_gather")
        self.assertEqual(rc, 0, text)
        self.assertTrue(os.path.exists(os.path.join(out, "nccl-tests", "all_gather_perf.cpu.r1.log")))
        self.assertIn("What runs between two timed calls", text)
        self.assertIn("| AllReduce | 8 B | 7.00 us | 6.50 us | 7.14 us | 7.21 us | 6.60 us | 0.97x |  | within the goal |",
                      text)
        self.assertIn("| AllGather | 16 B |", text.split("What runs between")[1])
        self.assertNotIn("| AllReduce | 1 GiB |", text.split("What runs between")[1], "small goal points only")
        import shutil
        shutil.rmtree(out)
        rc, text, out = self.run_script("--rounds", "1", "--sweep", "8:1G:134217728", "--colls", "all_reduce",
                                        "--no-cputime")
        self.assertEqual(rc, 0, text)
        self.assertFalse(os.path.exists(os.path.join(out, "nccl-tests", "all_reduce_perf.cpu.r1.log")))
        self.assertIn("| AllReduce | 8 B | 7.00 us |  | 7.14 us | 7.21 us | 6.60 us |", text)

    def test_simulated_ranks_every_process_on_the_one_gpu(self):
        self.executable(self.mp, 'exec python3 %s/gmp.py "$@"' % self.dir.name)
        rc, text, out = self.run_script("--ranks", "2", "--rounds", "1", "--sweep", "8:1G:134217728", "--require")
        self.assertEqual(rc, 0, text)
        self.assertIn("blocking: 18 of 18 goal points within 0.9-1.1x", text)
        self.assertIn("| AllGather | 32 B | out of place |", text, "16 B per rank at 2 ranks")
        self.assertIn("| AllReduce | 8 B | 7.00 us | 6.50 us | 7.14 us |", text)
        with open(os.path.join(out, "nccl-tests", "all_reduce_perf.r1.log")) as f:
            self.assertIn("Rank  1", f.read())

    def run_kept(self, name, *args):
        """vs_nccl_tests.sh with args, its output folder kept as `name` for a later compare."""
        rc, text, out = self.run_script(*args)
        self.assertEqual(rc, 0, text)
        kept = os.path.join(self.dir.name, name)
        os.rename(out, kept)
        return kept

    def compare_runs(self, folders, expected_rc, *extra):
        """compare --from each folder; its exit code checked, the table's Markdown returned."""
        merged = os.path.join(self.dir.name, "merged")
        args = ["compare"] + [x for f in folders for x in ("--from", f)] + ["--out", merged] + list(extra)
        self.assertEqual(v.main(args), expected_rc, args)
        with open(merged + ".md") as f:
            return f.read()

    def test_one_table_over_runs_split_by_collective(self):
        first = self.run_kept("first", "--rounds", "2", "--sweep", "8:1G:134217728", "--colls", "all_reduce")
        out = self.run_kept("second", "--rounds", "2", "--sweep", "8:1G:134217728", "--colls", "sendrecv")
        md = self.compare_runs((first, out), 0, "--require")
        self.assertIn("blocking: 4 of 4 goal points within 0.9-1.1x", md)
        self.assertIn("| SendRecvRing | 8 B | 7.00 us | 6.50 us |", md, "its -C 1 logs taken apart")
        self.assertIn("| 0.97x | 1.00x, 1.00x | within the goal |", md, "each tool's own change over two runs")
        self.assertIn("| AllReduce | 8 B | out of place | 7.00 us | 7.14 us | 0.98x ok | 0.98-0.98 (0%, 2) |", md,
                      "two rounds paired")
        merged = os.path.join(self.dir.name, "merged")
        self.assertEqual(v.main(["compare", "--from", self.dir.name, "--out", merged]), 2, "no nccl-tests/ there")
        self.assertEqual(v.main(["compare", "--from", out, "--from", out, "--out", merged]), 2,
                         "a run given twice would replace its own rounds")
        self.assertEqual(v.main(["compare", "--out", merged]), 2, "nothing to compare")

    def test_a_run_that_failed_gives_way_at_the_world_size_of_the_others(self):
        self.executable(self.mp, 'exec python3 %s/gmp.py "$@"' % self.dir.name)
        large = self.run_kept("large", "--ranks", "2", "--rounds", "1", "--sweep", "1G:1G:2", "--colls", "gather")
        small = self.run_kept("small", "--ranks", "2", "--rounds", "1", "--sweep", "8:32:2", "--colls", "gather")
        with open(os.path.join(small, "nccl-tests", "gather_perf.r1.log"), "w") as f:
            f.write("# nccl-tests version 2.19.6\nexit 1\n")  # the small run failed
        for order in ((small, large), (large, small)):
            md = self.compare_runs(order, 1, "--require")  # the small point is a miss
            self.assertIn("Gather 32 B: nccl-tests gave no result rows (gather_perf.r1.log)", md,
                          "at 2 ranks the small point is 32 B, whichever run comes first")
            self.assertNotIn("Gather 16 B", md)
            self.assertIn("| Gather | 1 GiB | out of place |", md, "the measured point kept")
        merged = os.path.join(self.dir.name, "merged")
        self.assertEqual(v.main(["compare", "--from", small, "--gpucts", os.path.join(SAMPLES, "gpucts_bandwidth.bandwidth.json"),
                                 "--out", merged]), 2, "--gpucts pairs with --nccl-tests, not with a folder")

    def test_one_table_over_runs_split_by_size(self):
        # The small goal points with many timed calls, 1 GiB with few: two runs, the same rounds.
        large = self.run_kept("large", "--rounds", "2", "--sweep", "1G:1G:2", "--colls", "all_reduce,all_gather")
        small = self.run_kept("small", "--rounds", "2", "--sweep", "8:16:2", "--colls", "all_reduce,all_gather",
                              "--iters", "500")
        md = self.compare_runs((small, large), 0, "--require")
        self.assertIn("blocking: 4 of 4 goal points within 0.9-1.1x", md)
        self.assertIn("| AllGather | 16 B | out of place |", md)
        self.assertIn("| AllReduce | 1 GiB | out of place |", md)
        merged = os.path.join(self.dir.name, "merged")
        self.assertEqual(v.main(["compare", "--from", small, "--from", large, "--from", small, "--out", merged]), 2,
                         "the small points twice")

    def test_gpu_call_steps_from_a_prebuilt_tarball(self):
        """bench/gpu_call.sh vs1 and vs2a, the GPU machine's commands, on stand-ins packed as the
        prebuilt tarball is (inst/libexec/gpucts/, nt-bin/, nt-bin-mpi/)."""
        import shutil
        import subprocess
        d = self.dir.name
        pack = os.path.join(d, "pack")
        os.makedirs(os.path.join(pack, "inst", "libexec", "gpucts"))
        shutil.copytree(os.path.join(d, "nt"), os.path.join(pack, "nt-bin"))
        shutil.copytree(os.path.join(d, "nt"), os.path.join(pack, "nt-bin-mpi"))
        shutil.copy(self.gpucts, os.path.join(pack, "inst", "libexec", "gpucts"))
        self.executable(os.path.join(pack, "inst", "libexec", "gpucts", "gpucts_mp_bandwidth"),
                        'exec python3 %s/gmp.py "$@"' % d)
        tarball = os.path.join(d, "vs.tar.xz")
        subprocess.run(["tar", "-C", pack, "-cJf", tarball, "."], check=True)
        out = os.path.join(d, "call")
        env = dict(os.environ, PATH=os.path.join(d, "bin") + os.pathsep + os.environ["PATH"], VS_PREBUILT=tarball,
                   OUT=out)
        p = subprocess.run(["bash", os.path.join(HERE, "gpu_call.sh"), "--limit", "150", "vs1", "vs2a", "vs2r", "vs2l"],
                           cwd=os.path.dirname(HERE), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=170)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertIn("blocking: 18 of 18 goal points within 0.9-1.1x", p.stdout)
        self.assertIn("blocking: 6 of 6 goal points within 0.9-1.1x", p.stdout, "vs2a: three collectives")
        listing = subprocess.run(["tar", "tzf", os.path.join(out, "logs.tgz")], stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout
        self.assertIn("./vs1/vs_nccl_tests.md", listing)
        self.assertIn("./vs2a/nccl-tests/all_reduce_perf.r5.log", listing)
        self.assertNotIn("./vs2a/nccl-tests/all_reduce_perf.cpu.r1.log", listing, "vs2 runs without -C 1")
        self.assertIn("./vs2r/nccl-tests/reduce_perf.cpu.r7.log", listing, "vs2r: seven rounds with -C 1")
        self.assertIn("./vs2l/nccl-tests/sendrecv_perf.r5.log", listing)
        self.assertIn("sizes 1G:1G:2, -n 2 -w 1", p.stdout, "vs2l: 1 GiB alone, few calls")

    def test_pin_runs_both_tools_on_the_cpus_given(self):
        d = self.dir.name
        seen = os.path.join(d, "cpus")
        record = "grep Cpus_allowed_list: /proc/self/status | sed 's/^/%s /' >>" + seen + "; "
        self.executable(self.gpucts, record % "gpucts" + 'exec python3 %s/g.py "$@"' % d)
        self.executable(os.path.join(d, "nt", "all_reduce_perf"),
                        record % "nccl-tests" + 'FAKE_BINARY=all_reduce exec python3 %s/nt.py "$@"' % d)
        cpu = str(min(os.sched_getaffinity(0)))  # one this process may use, whatever the container allows
        rc, text, out = self.run_script("--rounds", "1", "--sweep", "8:16:2", "--colls", "all_reduce", "--pin", cpu,
                                        "--no-cputime")
        self.assertEqual(rc, 0, text)
        self.assertIn("both tools on CPU(s) " + cpu, text)
        with open(seen) as f:
            lines = sorted(set(" ".join(line.split()) for line in f))
        self.assertEqual(lines, ["gpucts Cpus_allowed_list: " + cpu, "nccl-tests Cpus_allowed_list: " + cpu])
        rc, text, _ = self.run_script("--rounds", "1", "--pin", "4096")
        self.assertEqual(rc, 2, text)
        self.assertIn("--pin '4096': not CPUs this machine has", text)

    def test_bad_sweep_and_missing_mpi_binary_exit_2_with_the_cause(self):
        rc, text, _ = self.run_script("--rounds", "1", "--sweep", "8:1G:x")
        self.assertEqual(rc, 2, text)
        self.assertIn("factor 'x' is not a whole number", text)
        rc, text, _ = self.run_script("--rounds", "1", "--ranks", "2")
        self.assertEqual(rc, 2, text)
        self.assertIn("gpucts_mp_bandwidth", text)


if __name__ == "__main__":
    unittest.main()
