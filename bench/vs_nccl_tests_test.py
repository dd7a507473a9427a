#!/usr/bin/env python3
"""CPU test of vs_nccl_tests.py on the samples in bench/samples/ (CTest entry gpucts_vs_nccl_tests)."""
import json
import os
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


if __name__ == "__main__":
    unittest.main()
