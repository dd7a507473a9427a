"""gpucts's JUnit as its consumers read it: a CPU `gpucts qualify`'s junit.xml and a
`gpucts journal-to-junit` output, validated against suites/data/junit/junit-10.xsd (the Jenkins xunit
plugin's rules, its time pattern included) with xmllint, read with xml.etree, and read by
xunitparser and junitparser where they are installed or pip installs them within a minute.

    python3 junit_consumers_test.py GPUCTS SUITES_DIR XSD WORK_DIR
"""
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

GPUCTS, SUITES, XSD, WORK = (sys.argv.pop(1) for _ in range(4))
# The xunit plugin's time: digits, optional thousands commas, at most one decimal point.
TIME = re.compile(r"^([0-9]{1,3}(,[0-9]{3})*|[0-9]*)(\.[0-9]*)?$")


def entry(name, command, env):
    return {"name": name, "command": command,
            "properties": [{"name": "LABELS", "value": ["cpu"]}, {"name": "ENVIRONMENT", "value": env},
                           {"name": "TIMEOUT", "value": 60}, {"name": "SKIP_RETURN_CODE", "value": 77}]}


def journal_line(**kv):
    return json.dumps(kv) + "\n"


def make_outputs():
    """Runs both producers once; returns {what: path of its JUnit}."""
    os.makedirs(WORK, exist_ok=True)
    root = tempfile.mkdtemp(prefix="junit-consumers-", dir=WORK)
    tests = [entry("gpucts_version", [os.path.join(SUITES, "gpucts_version")], []),
             # One skipped case (run outside gpucts_env_inherited) and, with a wrong expectation, a failure.
             entry("gpucts_stack_settings", [os.path.join(SUITES, "gpucts_stack_settings")],
                   ["GPUCTS_EXPECT_NVLS_ENABLE=7", "NCCL_NVLS_ENABLE=1"])]
    tests_json = os.path.join(root, "tests.json")
    with open(tests_json, "w") as f:
        json.dump({"kind": "ctestInfo", "version": {"major": 1, "minor": 0}, "tests": tests}, f)
    bundle = os.path.join(root, "bundle")
    q = subprocess.run([GPUCTS, "qualify", "--no-python", "--tests-json", tests_json, "--output", bundle],
                       capture_output=True, text=True, timeout=300)
    assert q.returncode == 1, "the failing case makes qualify exit 1, got %d:\n%s%s" % (
        q.returncode, q.stdout, q.stderr)
    # Journals of a two-rank run: a pass in 40 microseconds, a failure, a crash on rank 1 mid-case.
    jdir = os.path.join(root, "journal")
    os.makedirs(jdir)
    for rank in (0, 1):
        text = journal_line(event="program_start", cases=4, time_ms=1000.0)
        text += journal_line(event="rank_info", host="node-%d" % rank, world_size=2, time_ms=1000.0)
        text += journal_line(event="start", case="AllReduce.f8e4m3_sum_8", time_ms=1000.0)
        text += journal_line(event="end", case="AllReduce.f8e4m3_sum_8", result="passed", time_ms=1000.04)
        text += journal_line(event="start", case="AllReduce.f32_sum_8", time_ms=1001.0)
        text += journal_line(event="end", case="AllReduce.f32_sum_8", result="failed",
                             message="rank %d: 1 element(s) wrong, first at index 3" % rank, time_ms=1002.0)
        text += journal_line(event="start", case="AllGather.f32_8", time_ms=1003.0)
        if rank == 1:
            text += journal_line(event="fault", kind="signal", signal="SIGSEGV", case="AllGather.f32_8",
                                 time_ms=1004.0)
        with open(os.path.join(jdir, "gpucts_mp_collectives.rank%d.jsonl" % rank), "w") as f:
            f.write(text)
    journal_junit = os.path.join(root, "journal-junit.xml")
    j = subprocess.run([GPUCTS, "journal-to-junit", "--journal-dir", jdir, "--output", journal_junit],
                       capture_output=True, text=True, timeout=60)
    assert j.returncode == 0, j.stdout + j.stderr
    return {"qualify": os.path.join(bundle, "junit.xml"), "journal-to-junit": journal_junit}


OUTPUTS = make_outputs()


def reader(module, package):
    """The module, imported from the environment or from a pip install into WORK (<= 60 s)."""
    target = os.path.join(WORK, "junit-readers")
    if os.path.isdir(target) and target not in sys.path:
        sys.path.insert(0, target)
    try:
        return importlib.import_module(module), ""
    except ImportError:
        pass
    try:
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            "--target", target, package], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "pip could not install %s here: %s" % (package, e)
    if p.returncode != 0:
        return None, "pip could not install %s here: %s" % (package, (p.stderr.strip().splitlines() or ["?"])[-1])
    if target not in sys.path:
        sys.path.insert(0, target)
    importlib.invalidate_caches()
    return importlib.import_module(module), ""


class Schema(unittest.TestCase):
    def test_xmllint_takes_both(self):
        lint = shutil.which("xmllint")
        if not lint:
            self.skipTest("xmllint (libxml2-utils) not on PATH: the schema is not checked here")
        for what, path in OUTPUTS.items():
            r = subprocess.run([lint, "--noout", "--schema", XSD, path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, "%s: %s" % (what, r.stderr))

    def test_the_schema_refuses_an_exponent(self):
        lint = shutil.which("xmllint")
        if not lint:
            self.skipTest("xmllint (libxml2-utils) not on PATH")
        bad = os.path.join(WORK, "exponent-time.xml")
        with open(bad, "w") as f:
            f.write('<testsuites><testsuite name="s" tests="1" failures="0" errors="0" time="8.98437e-05">'
                    '<testcase name="c"/></testsuite></testsuites>\n')
        r = subprocess.run([lint, "--noout", "--schema", XSD, bad], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0, "an exponent time must fail the schema")


class ElementTree(unittest.TestCase):
    def test_times_counts_properties_and_failure_types(self):
        for what, path in OUTPUTS.items():
            root = ET.parse(path).getroot()
            self.assertEqual(root.tag, "testsuites", what)
            self.assertNotIn("skipped", root.attrib, what)
            suites = root.findall("testsuite")
            self.assertTrue(suites, what)
            names = []
            total = 0
            for ts in suites:
                self.assertRegex(ts.get("time", "0"), TIME, what)
                for p in ts.iter("property"):
                    names.append(p.get("name"))
                cases = ts.findall("testcase")
                total += len(cases)
                self.assertEqual(int(ts.get("tests")), len(cases), what)
                for tc in cases:
                    self.assertRegex(tc.get("time", "0"), TIME, "%s: %s" % (what, tc.get("name")))
                    self.assertIsNone(tc.find("properties"), what)
                    for f in tc.findall("failure") + tc.findall("error"):
                        self.assertTrue(f.get("type"), "%s: %s has no failure type" % (what, tc.get("name")))
            self.assertEqual(int(root.get("tests")), total, what)
            self.assertEqual(len(names), len(set(names)), "%s: a property name twice: %s" % (what, names))

    def test_journal_classes(self):
        root = ET.parse(OUTPUTS["journal-to-junit"]).getroot()
        types = {tc.get("name"): (tc.find("failure") if tc.find("failure") is not None else tc.find("error"))
                 for tc in root.iter("testcase")}
        self.assertEqual(types["f32_sum_8"].get("type"), "corruption")
        self.assertEqual(types["f32_8"].get("type"), "crash")
        self.assertIsNone(types["f8e4m3_sum_8"])
        passed = [tc for tc in root.iter("testcase") if tc.get("name") == "f8e4m3_sum_8"][0]
        self.assertEqual(passed.get("time"), "0.000040", "a 40 us case in plain decimal")


class Readers(unittest.TestCase):
    def test_xunitparser(self):
        xunitparser, why = reader("xunitparser", "xunitparser==1.3.4")
        if not xunitparser:
            self.skipTest(why)
        for what, path in OUTPUTS.items():
            with open(path) as f:
                suite, result = xunitparser.parse(f)  # asserts on a property name twice, on wrong counts
            self.assertGreater(result.testsRun, 0, what)
            self.assertTrue(result.failures or result.errors, what)

    def test_junitparser(self):
        junitparser, why = reader("junitparser", "junitparser")
        if not junitparser:
            self.skipTest(why)
        for what, path in OUTPUTS.items():
            xml = junitparser.JUnitXml.fromfile(path)
            cases = [c for s in xml for c in s]
            self.assertGreater(len(cases), 0, what)
            self.assertTrue(any(not c.is_passed and not c.is_skipped for c in cases), what)


if __name__ == "__main__":
    unittest.main(verbosity=2)
