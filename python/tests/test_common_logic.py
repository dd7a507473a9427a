"""gpucts_common's own behaviour beyond the shared table: output files never written through a
link, the journal and JUnit cutting long messages, the libnccl scan and ncclGetVersion through
ctypes on a stand-in library. Run: python3 -m unittest -v tests.test_common_logic (in python/)."""
import ctypes
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpucts_common import files, journal, junit, nccl, text  # noqa: E402

LONG = "é" * 40000  # 80000 bytes of UTF-8, over the message limit


class Scratch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="gpucts-common-")
        self.addCleanup(shutil.rmtree, self.dir)

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def write(self, name, content):
        with open(self.path(name), "w") as f:
            f.write(content)
        return self.path(name)

    def read(self, name):
        with open(self.path(name)) as f:
            return f.read()


class WriteAtomic(Scratch):
    def test_writes_whole_file_and_leaves_nothing_beside_it(self):
        files.write_atomic(self.path("sub", "out.xml"), "<a/>\n")
        self.assertEqual(self.read("sub/out.xml"), "<a/>\n")
        self.assertEqual(os.listdir(self.path("sub")), ["out.xml"])
        mask = os.umask(0)
        os.umask(mask)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("sub", "out.xml")).st_mode), 0o666 & ~mask)

    def test_replaces_an_existing_file(self):
        self.write("out.xml", "old")
        files.write_atomic(self.path("out.xml"), "new")
        self.assertEqual(self.read("out.xml"), "new")

    def test_a_link_placed_where_a_temporary_name_was_guessable_is_never_followed(self):
        victim = self.write("victim", "keep me")
        target = self.path("out.xml")
        # The temporary names an earlier writer used: <target>.tmp<pid>.
        os.symlink(victim, "%s.tmp%d" % (target, os.getpid()))
        files.write_atomic(target, "new")
        self.assertEqual(self.read("victim"), "keep me")
        self.assertEqual(self.read("out.xml"), "new")

    def test_a_target_that_is_a_link_is_refused(self):
        victim = self.write("victim", "keep me")
        os.symlink(victim, self.path("out.xml"))
        with self.assertRaises(files.OutputError) as e:
            files.write_atomic(self.path("out.xml"), "new")
        self.assertIn("symbolic link", str(e.exception))
        self.assertEqual(self.read("victim"), "keep me")
        self.assertTrue(os.path.islink(self.path("out.xml")))

    def test_a_directory_or_no_file_name_is_refused_with_the_path(self):
        os.mkdir(self.path("d"))
        for bad in (self.path("d"), self.path("d") + "/", ""):
            with self.assertRaises(files.OutputError, msg=bad) as e:
                files.write_atomic(bad, "x")
            self.assertEqual(len(str(e.exception).splitlines()), 1)
        self.assertEqual(os.listdir(self.path("d")), [])


class JournalFile(Scratch):
    def test_events_one_line_each_and_read_back(self):
        p = journal.journal_path(self.dir, "gpucts_py_logic", 1, 2)
        self.assertEqual(os.path.basename(p), "gpucts_py_logic.rank1.jsonl")
        j = journal.Journal(p, 1)
        j.program_start(2)
        j.start("S", "a")
        j.end("S", "a", "passed", "", journal.now_ms())
        j.start("S", "b")
        j.close()
        finished, running, ended = journal.read_journal(p)
        self.assertEqual(list(finished), ["S.a"])
        self.assertEqual(running["case"], "S.b")
        self.assertFalse(ended)

    def test_a_long_message_is_cut(self):
        p = self.path("t.jsonl")
        j = journal.Journal(p, 0)
        j.end("S", "a", "failed", LONG, journal.now_ms())
        j.write("watchdog", reason=LONG)
        j.close()
        with open(p, encoding="utf-8") as f:
            events = [json.loads(line) for line in f]
        self.assertEqual(events[0]["message"], text.cut_message(LONG))
        self.assertEqual(events[1]["reason"], text.cut_message(LONG))
        self.assertTrue(events[0]["message"].endswith("[gpucts: message cut, 80000 bytes in all]"))

    def test_a_journal_that_is_a_link_is_refused(self):
        victim = self.write("victim", "keep me\n")
        os.symlink(victim, self.path("t.jsonl"))
        with self.assertRaises(files.OutputError) as e:
            journal.Journal(self.path("t.jsonl"), 0)
        self.assertIn("symbolic link", str(e.exception))
        self.assertEqual(self.read("victim"), "keep me\n")


class JunitXml(unittest.TestCase):
    def test_layout_and_long_texts_cut(self):
        results = [junit.Result("S", "ok", "passed", time_s=0.5, start_ms=1.0, properties={"gpucts.x": "1"}),
                   junit.Result("S", "bad", "failed", "first\nline", LONG, 1.0, 1.0),
                   junit.Result("T", "skip", "skipped", LONG, "", 0.0, 1.0)]
        root = ET.fromstring(junit.junit_xml(results))
        self.assertEqual((root.get("tests"), root.get("failures")), ("3", "1"))
        self.assertEqual([s.get("name") for s in root], ["S", "T"])
        failure = root.find("testsuite/testcase[@name='bad']/failure")
        self.assertEqual(failure.get("message"), "first line")
        self.assertEqual(failure.text, text.cut_message(LONG))
        skipped = root.find("testsuite/testcase[@name='skip']/skipped")
        self.assertEqual(skipped.text, text.cut_message(LONG))
        self.assertLessEqual(len(skipped.get("message")), 2000)
        prop = root.find("testsuite/testcase[@name='ok']/properties/property")
        self.assertEqual((prop.get("name"), prop.get("value")), ("gpucts.x", "1"))
        self.assertEqual(root.find("testsuite/testcase[@name='ok']").get("time"), "0.500")


class LibncclScan(Scratch):
    def maps(self, *paths):
        lines = ["7f0000000000-7f0000001000 r-xp 00000000 08:01 1234                       %s\n" % p
                 for p in paths]
        lines.append("7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n")
        return self.write("maps", "".join(lines))

    def test_nccl_once_by_its_real_path_plugins_never(self):
        real = self.write("libnccl.so.2.28.9", "")
        os.symlink(real, self.path("libnccl.so.2"))
        net = self.write("libnccl-net.so", "")
        maps = self.maps(self.path("libnccl.so.2"), net, real, self.path("libnccl.so.2"))
        self.assertEqual(nccl.mapped_libnccl(maps), [os.path.realpath(real)])
        self.assertEqual(nccl.mapped_libnccl(self.path("no-such-maps")), [])

    def test_a_library_not_loaded_is_named(self):
        with self.assertRaises(nccl.NcclVersionError) as e:
            nccl.version_code_of(self.path("libnccl.so.2"))
        self.assertIn(self.path("libnccl.so.2"), str(e.exception))

    def test_torch_reports(self):
        self.assertEqual(nccl.torch_nccl_version((2, 21, 5)), (2, 21, 5))
        self.assertEqual(nccl.torch_nccl_version(2 << 32 | 28 << 16 | 9), (2, 28, 9))
        self.assertEqual(nccl.torch_nccl_version(2708), (2, 7, 8))

    def test_version_of_a_mapped_stand_in_through_its_own_ncclGetVersion(self):
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler (cc, gcc) to build a stand-in libnccl")
        src = self.write("stand_in.c", "int ncclGetVersion(int* v) { *v = 22809; return 0; }\n")
        lib = self.path("libnccl.so.2")
        subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src], check=True, timeout=60)
        # Not mapped yet: RTLD_NOLOAD refuses it, nothing is loaded by asking.
        self.assertNotIn(lib, nccl.mapped_libnccl())
        with self.assertRaises(nccl.NcclVersionError):
            nccl.version_code_of(lib)
        self.assertNotIn(lib, nccl.mapped_libnccl())
        handle = ctypes.CDLL(lib)
        self.addCleanup(lambda: handle)
        self.assertIn(nccl.LoadedNccl(os.path.realpath(lib), "2.28.9"), nccl.loaded_nccl())


if __name__ == "__main__":
    unittest.main()
