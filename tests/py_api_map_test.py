#!/usr/bin/env python3
"""The Python suites' map onto the C++ collective table (suites/python/gpucts_suites/api_map.py)
held to what it maps, on the CPU without torch (CTest entry gpucts_py_api_map). Every row of the
C++ table, read from fixtures/nccl/collectives.cpp, has a torch.distributed call that reaches it
or a stated reason; a bandwidth threshold or a stated 'unjudged' line in
matrix/data/bandwidth_thresholds.csv; and a place in the defect data's selection. Every case
family of the map is registered, every registered collective case is mapped, and a lookup of an
unmapped name raises."""
import csv
import os
import re
import sys
import unittest

# The source tree: the first argument (CTest passes it), else the folder above this file.
ROOT = os.path.normpath(sys.argv.pop(1) if len(sys.argv) > 1 and os.path.isdir(sys.argv[1])
                        else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
for pkg_dir in ("suites/python", "python"):  # the suites' package, and the shared one where it exists
    sys.path.insert(0, os.path.join(ROOT, pkg_dir))
from gpucts_suites import api_map, nccl_data, runner  # noqa: E402

COLLECTIVE_TABLE = os.path.join(ROOT, "fixtures", "nccl", "collectives.cpp")
THRESHOLDS = os.path.join(ROOT, "matrix", "data", "bandwidth_thresholds.csv")
# The worlds the suites run in: 1 rank, 2 (Gloo on the CPU), 4 simulated hosts (NCCL).
WORLDS = [runner.WorldInfo("1", 1, "gloo", "subprocess"), runner.WorldInfo("2", 2, "gloo", "subprocess"),
          runner.WorldInfo("sim4", 4, "nccl", "subprocess")]


def cpp_rows():
    """The row names of collectives()'s table, in order: each row starts {"Name", reduces, rooted,"""
    with open(COLLECTIVE_TABLE, encoding="utf-8") as f:
        text = f.read()
    start = text.index("static const std::vector<Collective> table = {")
    table = text[start:text.index("\n  };", start)]
    return re.findall(r'\{"(\w+)",\s*(?:true|false),\s*(?:true|false),', table)


def thresholds():
    """The collectives with a row in bandwidth_thresholds.csv, and {row: reason} of its
    '# unjudged: <row>: <reason>' lines."""
    with open(THRESHOLDS, encoding="utf-8") as f:
        lines = f.read().splitlines()
    unjudged = {}
    for ln in lines:
        m = re.match(r"#\s*unjudged:\s*(\w+):\s*(.*)$", ln)
        if m:
            unjudged[m.group(1)] = m.group(2).strip()
    data = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    return {r["collective"] for r in csv.DictReader(data)}, unjudged


def registered():
    """{case family: [case names]} of the registered Collectives cases in every world, and the
    names of the collective cases no family claims."""
    families, loose = {}, set()
    for world in WORLDS:
        for c in runner.plan(world, "^Collectives/"):
            fam = getattr(c.body, "family", None)
            if fam is None:
                loose.add(c.name)
            else:
                families.setdefault(fam, []).append(c.name)
    return families, loose


class PythonCounterparts(unittest.TestCase):
    def test_the_cpp_table_is_read(self):
        rows = cpp_rows()
        self.assertGreaterEqual(len(rows), 8, "collectives.cpp's table not found or misread: %s" % rows)
        self.assertEqual(rows[0], "AllReduce")
        self.assertEqual(len(rows), len(set(rows)), rows)

    def test_every_cpp_row_has_a_call_or_a_reason(self):
        missing = [r for r in cpp_rows() if not api_map.families_reaching(r) and not api_map.UNREACHED.get(r)]
        self.assertEqual(missing, [], "C++ collective rows no torch.distributed case reaches, with no reason in "
                                      "api_map.UNREACHED")

    def test_a_reason_only_where_no_call_reaches(self):
        both = {r: api_map.families_reaching(r) for r in api_map.UNREACHED if api_map.families_reaching(r)}
        self.assertEqual(both, {}, "api_map.UNREACHED gives a reason for rows a case family reaches")

    def test_every_mapped_row_is_a_cpp_row(self):
        named = {r for rows, _ in api_map.CALLS.values() for r in rows} | set(api_map.UNREACHED)
        self.assertEqual(sorted(named - set(cpp_rows())), [], "api_map names rows the C++ table does not have")

    def test_every_mapped_family_is_registered(self):
        families, _ = registered()
        self.assertEqual(sorted(set(api_map.CALLS) - set(families)), [],
                         "api_map.CALLS maps case families no Collectives case is registered for")

    def test_every_registered_family_is_mapped(self):
        families, loose = registered()
        self.assertEqual(sorted(set(families) - set(api_map.CALLS)), [],
                         "registered Collectives case families with no api_map.CALLS row")
        # The cases outside the collective table call no collective the data selects.
        self.assertEqual(loose, {"barrier", "nccl_version_loaded"})

    def test_case_names_start_with_their_family(self):
        families, _ = registered()
        bad = [(f, n) for f, names in families.items() for n in names if not n.startswith(f + "_")]
        self.assertEqual(bad, [])


class BandwidthThresholds(unittest.TestCase):
    def test_every_cpp_row_is_judged_or_says_why_not(self):
        judged, unjudged = thresholds()
        self.assertIn("AllReduce", judged, "bandwidth_thresholds.csv misread")
        missing = [r for r in cpp_rows() if r not in judged and not unjudged.get(r)]
        self.assertEqual(missing, [], "collective rows with neither a threshold nor an '# unjudged: <row>: <reason>' "
                                      "line in bandwidth_thresholds.csv")

    def test_unjudged_lines_name_rows_without_thresholds(self):
        judged, unjudged = thresholds()
        self.assertEqual(sorted(set(unjudged) & judged), [], "rows both judged and unjudged")
        self.assertEqual(sorted(set(unjudged) - set(cpp_rows())), [], "unjudged lines name no collective row")


class _FakeContext:
    """What cases_collectives._collective reads of a case's context on no GPU."""
    backend, size, on_gpu = "nccl", 2, False

    def __init__(self):
        self.props = {}

    def prop(self, key, value):
        self.props[key] = str(value)

    def skip(self, reason):
        raise runner.Skip(reason)


class DefectSelection(unittest.TestCase):
    def setUp(self):
        self.saved = dict(nccl_data._CACHE)

    def tearDown(self):
        nccl_data._CACHE.clear()
        nccl_data._CACHE.update(self.saved)

    def _only_rows(self, name, rows):
        """Replaces what nccl_data reads of one data file by `rows` (every other column any)."""
        nccl_data._CACHE[name] = [dict({"other": "", "first": "", "fixed": "", "nranks": "*", "dtypes": "*", "ops": "*",
                                        "placement": "*", "layout": "*", "backend": "nccl"}, **r) for r in rows]

    def test_data_names_only_known_collectives(self):
        table = set(cpp_rows())
        c10d = {name for _, name in api_map.CALLS.values()}
        for file, known in (("nccl_defects.csv", table), ("torch_defects.csv", c10d)):
            rows = nccl_data.rows(file)
            self.assertTrue(rows, "%s not found" % file)
            unknown = sorted({c for r in rows for c in r["collectives"].split(";") if c and c != "*"} - known)
            self.assertEqual(unknown, [], "%s names collectives that select no case" % file)

    def test_a_defect_of_each_row_selects_the_cases_reaching_it(self):
        rows = [r for r in cpp_rows() if api_map.families_reaching(r)]
        self._only_rows("nccl_defects.csv", [{"id": "d-" + r, "collectives": r} for r in rows])
        for r in rows:
            for fam in api_map.families_reaching(r):
                self.assertIn("d-" + r, nccl_data.known_defects(fam, "f32", "sum", False, 2, (2, 28, 9)), fam)

    def test_a_torch_defect_of_each_call_selects_its_cases(self):
        self._only_rows("torch_defects.csv", [{"id": "t-" + f, "collectives": api_map.c10d_name(f)}
                                              for f in api_map.CALLS])
        for fam in api_map.CALLS:
            self.assertIn("t-" + fam, nccl_data.torch_known_defects(fam, "f32", "sum", False, 2, (2, 11, 0), "nccl"))

    def test_a_defect_that_ends_the_world_is_not_run(self):
        from gpucts_suites import cases_collectives as cc
        self._only_rows("nccl_defects.csv", [])
        ctx, calls = _FakeContext(), []

        def run(severity):
            self._only_rows("torch_defects.csv", [{"id": "t-" + severity, "collectives": "reduce",
                                                   "severity": severity, "title": "its title", "link": "its link"}])
            cc._collective(ctx, "reduce", "f32", "sum", True, "reduce", lambda: calls.append(severity), lambda: None)
        saved, cc._torch_version = cc._torch_version, lambda: "2.11.0"
        try:
            for severity in ("crash", "hang"):
                with self.assertRaises(runner.Skip) as e:
                    run(severity)
                self.assertIn("not run: a known defect would end the world here: t-%s (its title" % severity,
                              str(e.exception))
            self.assertEqual(calls, [], "a case that meets a crash or hang row must not make its call")
            run("corruption")
        finally:
            cc._torch_version = saved
        self.assertEqual(calls, ["corruption"], "a corruption row lets the case run and names it on the result")
        self.assertEqual(ctx.props, {"gpucts.known_defect_not_seen": "t-corruption"})

    def test_an_unmapped_family_raises(self):
        for lookup in (lambda f: nccl_data.known_defects(f, "f32", "sum", False, 2, (2, 28, 9)),
                       lambda f: nccl_data.torch_known_defects(f, "f32", "sum", False, 2, (2, 11, 0), "nccl")):
            with self.assertRaises(api_map.UnmappedCall) as e:
                lookup("no_such_call")
            self.assertIn("'no_such_call' has no row in api_map.CALLS", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
