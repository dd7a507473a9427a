#!/usr/bin/env python3
"""nccl_wheels.py on small ELF files and wheels built here: which NCCL_* strings of .rodata are read
as variables, what is refused as bad input; and the bad input of the other matrix tools (generate.py,
torch_wheels.py, common.py). Standard library only; no network, no NCCL."""
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nccl_wheels  # noqa: E402

TOOL = os.path.join(HERE, "nccl_wheels.py")


def elf(sections):
    """A 64-bit little-endian ELF with the given (name, bytes) sections, a name table and headers."""
    names = b"\0"
    offsets = []
    body = b""
    for name, data in sections + [(".shstrtab", None)]:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    heads = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]
    at = 64
    for (name, data), name_at in zip(sections + [(".shstrtab", names)], offsets):
        heads.append(struct.pack("<IIQQQQIIQQ", name_at, 1 if name != ".shstrtab" else 3, 2, 0, at, len(data), 0, 0, 1, 0))
        body += data
        at += len(data)
    shoff = at
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(heads), len(heads) - 1)
    return header + body + b"".join(heads)


# What the compiler and linker leave in .rodata: literals of their own, a double before one, a char
# array without its NUL before one, messages that name macros, a prefix, a format string.
RODATA = (b"\0NCCL_PLAIN\0"                       # a literal: a variable
          b"\x9a\x99\x99\x99\x99\x99\xd9?NCCL_AFTER_DOUBLE\0"   # after a double (exponent byte '?')
          b"virtual_switch_linksNCCL_AFTER_ARRAY\0"           # after a char array stored without NUL
          b"not initialized via NCCL_CONFIG_INITIALIZER\0"    # in a message: not a variable
          b"NCCL_IB_\0"                                       # a prefix compared with strncmp
          b"NCCL_FORMAT %d is too low\0"                      # a format string naming a word
          b"\0NCCL_LAST")                                     # cut: no NUL after it


class RodataNames(unittest.TestCase):
    def test_variables_and_words(self):
        variables, in_text = nccl_wheels.rodata_names(elf([(".text", b"NCCL_IN_TEXT_SECTION\0"), (".rodata", RODATA)]))
        self.assertEqual(variables, ["NCCL_AFTER_ARRAY", "NCCL_AFTER_DOUBLE", "NCCL_PLAIN"])
        self.assertEqual(in_text, ["NCCL_CONFIG_INITIALIZER", "NCCL_FORMAT", "NCCL_LAST"])

    def test_a_word_after_a_tab_or_newline_is_text(self):
        variables, in_text = nccl_wheels.rodata_names(elf([(".rodata", b"x\tNCCL_TAB\0y\nNCCL_NL\0")]))
        self.assertEqual(variables, [])
        self.assertEqual(in_text, ["NCCL_NL", "NCCL_TAB"])

    def test_bad_elf(self):
        good = elf([(".rodata", RODATA)])
        for data, what in ((b"MZ" + good[2:], "not a 64-bit"), (good[:-10], "section headers outside"),
                           (elf([(".data", RODATA)]), "no .rodata section")):
            with self.assertRaises(nccl_wheels.BadElf) as e:
                nccl_wheels.rodata_names(data)
            self.assertIn(what, str(e.exception))


class Wheels(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def wheel(self, version, lib):
        path = os.path.join(self.dir, "nvidia_nccl_cu13-%s-py3-none-manylinux_2_27_x86_64.whl" % version)
        with zipfile.ZipFile(path, "w") as z:
            z.writestr(nccl_wheels.LIB, lib)
            z.writestr(nccl_wheels.HEADER, "#define NCCL_WIN_GIN_ONLY 0x04\nint ncclCommInitRank(void);\n")
        return path

    def test_read_wheel(self):
        path = self.wheel("9.1.2", elf([(".rodata", RODATA)]))
        w = nccl_wheels.read_wheel(nccl_wheels.find_wheel(self.dir, "9.1.2"))
        with open(path, "rb") as f:
            self.assertEqual(w["sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assertEqual(w["wheel"], os.path.basename(path))
        self.assertIn("NCCL_PLAIN", w["variables"])
        self.assertEqual(w["api"], ["NCCL_WIN_GIN_ONLY", "ncclCommInitRank"])

    def test_validate_counts_agreement_and_false_positives(self):
        w = nccl_wheels.read_wheel(self.wheel("9.1.2", elf([(".rodata", RODATA)])))
        src = {"releases": [{"version": "9.1.2", "tag": "v9.1.2-1"}],
               "env": {"NCCL_PLAIN": {"file": "src/init.cc", "ranges": [["9.1.2", "9.1.2"]]},
                       "NCCL_AFTER_ARRAY": {"file": "src/misc/socket.cc", "ranges": [["9.1.2", "9.1.2"]]},
                       "NCCL_MISSING": {"file": "src/enqueue.cc", "ranges": [["9.1.2", "9.1.2"]]},
                       "NCCL_PLUGIN_ONLY": {"file": "plugins/profiler/x.cc", "ranges": [["9.1.2", "9.1.2"]]}},
               "documented": {}, "api": {"ncclCommInitRank": {"file": "src/nccl.h.in", "ranges": [["9.1.2", "9.1.2"]]}}}
        v = nccl_wheels.validate(src, "9.1.2", w)
        self.assertEqual((v["source_variables_in_libnccl"], v["agree"]), (3, 2))
        self.assertEqual(v["missed"], ["NCCL_MISSING"])
        self.assertEqual(v["false_positives"], ["NCCL_AFTER_DOUBLE"])
        self.assertEqual(v["plugin_variables"], 1)
        self.assertEqual((v["api_agree"], v["api_source"], v["api_wheel"]), (1, 1, 2))

    def run_tool(self, *args):
        return subprocess.run([sys.executable, TOOL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))

    def test_names_command(self):
        lib = os.path.join(self.dir, "libnccl.so.2")
        with open(lib, "wb") as f:
            f.write(elf([(".rodata", RODATA)]))
        r = self.run_tool("names", lib)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("NCCL_PLAIN\n", r.stdout)
        self.assertIn("NCCL_CONFIG_INITIALIZER (in text)\n", r.stdout)

    def test_bad_input_is_one_line_and_exit_2(self):
        junk = os.path.join(self.dir, "junk.so")
        with open(junk, "wb") as f:
            f.write(b"not an elf file at all, long enough to hold a header........................")
        not_a_wheel = self.wheel("9.9.9", b"")
        with open(not_a_wheel, "wb") as f:
            f.write(b"PK not really")
        for args, where in ((["names", junk], junk), (["names", os.path.join(self.dir, "absent")], "absent"),
                            (["snapshot", "--wheels", os.path.join(self.dir, "nowhere")], "nowhere")):
            r = self.run_tool(*args)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(where, r.stderr)
        with self.assertRaises(SystemExit) as e:
            stderr, sys.stderr = sys.stderr, io.StringIO()
            try:
                nccl_wheels.read_wheel(not_a_wheel)
            finally:
                sys.stderr = stderr
        self.assertEqual(e.exception.code, 2)

    def test_snapshot_never_writes_through_a_placed_link(self):
        # A link where a predictable temporary name would be, and one at the target itself: the
        # snapshot lands in its folder and neither file outside is touched.
        snaps = os.path.join(self.dir, "snapshot")
        os.mkdir(snaps)
        for name, obj in (("nccl_source.json", {"releases": [{"version": "9.1.2", "tag": "v9.1.2-1"}]}),
                          ("torch_wheels.json", {"nccl_wheels": []})):
            with open(os.path.join(snaps, name), "w", encoding="utf-8") as f:
                json.dump(obj, f)
        outside = os.path.join(self.dir, "outside")
        os.mkdir(outside)
        victims = []
        for k, link in enumerate(("nccl_wheels.json.tmp", ".nccl_wheels.json.tmp")):
            victims.append(os.path.join(outside, "victim%d" % k))
            with open(victims[-1], "w", encoding="utf-8") as f:
                f.write("keep me\n")
            os.symlink(victims[-1], os.path.join(snaps, link))
        r = subprocess.run([sys.executable, TOOL, "snapshot", "--wheels", self.dir], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1", GPUCTS_MATRIX_SNAPSHOTS=snaps))
        self.assertEqual(r.returncode, 0, r.stderr)
        for victim in victims:
            with open(victim, encoding="utf-8") as f:
                self.assertEqual(f.read(), "keep me\n")
        with open(os.path.join(snaps, "nccl_wheels.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["newest_tag"], "9.1.2")
        self.assertFalse(os.path.islink(os.path.join(snaps, "nccl_wheels.json")))
        # Only the links placed before, the inputs and the snapshot: no temporary file left.
        self.assertEqual(sorted(os.listdir(snaps)), [".nccl_wheels.json.tmp", "nccl_source.json",
                                                     "nccl_wheels.json", "nccl_wheels.json.tmp",
                                                     "torch_wheels.json"])



class ToolsBadInput(unittest.TestCase):
    """Every matrix tool: bad input is one line on stderr naming the file, exit 2; never a traceback,
    never a hang on a FIFO, nothing written. Each run is bounded, so that a hang fails here."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.snaps = os.path.join(self.dir, "snapshot")
        os.mkdir(self.snaps)
        for name in ("nccl_source.json", "torch_wheels.json", "nccl_wheels.json"):
            with open(os.path.join(HERE, "snapshot", name), "rb") as f, open(os.path.join(self.snaps, name), "wb") as g:
                g.write(f.read())

    def tearDown(self):
        self.tmp.cleanup()

    def refused(self, tool, args, *words):
        r = subprocess.run([sys.executable, os.path.join(HERE, tool)] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                           env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1", GPUCTS_MATRIX_SNAPSHOTS=self.snaps))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        for w in words:
            self.assertIn(w, r.stderr)

    def test_a_snapshot_that_is_not_one(self):
        path = os.path.join(self.snaps, "nccl_source.json")
        with open(path, "rb") as f:
            good = f.read()
        with open(os.path.join(self.snaps, "torch_wheels.json"), "rb") as f:
            other = f.read()
        tries = ((b"\xff\xfe garbage", "not JSON text"), (b"[]", "the top level is a list, expected an object"),
                 (b"{}", "'releases' is missing, expected a list"),
                 (other, "'releases' is missing"),  # another snapshot in its place
                 (b'{"releases": {}}', "'releases' is a dict, expected a list"),
                 (json.dumps(dict(json.loads(good), releases=[])).encode(), "'releases' is empty"),
                 (b"[" * 100000, "not JSON text"))
        for data, words in tries:
            with self.subTest(words=words):
                with open(path, "wb") as f:
                    f.write(data)
                self.refused("generate.py", ["--check"], path + ": " + words)
        os.unlink(path)
        os.mkfifo(path)  # no writer: a blocking open would never return
        self.refused("generate.py", ["--check"], path + ": not a regular file")
        self.refused("nccl_wheels.py", ["snapshot", "--wheels", self.dir], path + ": not a regular file")

    def test_a_curated_file_that_is_no_text(self):
        # curated/ lies beside the tools: a copy of them, with a hand edit in Latin-1 or a FIFO there.
        tools = os.path.join(self.dir, "tools")
        os.makedirs(os.path.join(tools, "curated"))
        for name in os.listdir(HERE):
            if name.endswith(".py"):
                with open(os.path.join(HERE, name), "rb") as f, open(os.path.join(tools, name), "wb") as g:
                    g.write(f.read())
        for name in os.listdir(os.path.join(HERE, "curated")):
            with open(os.path.join(HERE, "curated", name), "rb") as f:
                data = f.read()
            with open(os.path.join(tools, "curated", name), "wb") as g:
                g.write(data + (b"# caf\xe9\n" if name == "torch.csv" else b""))
        curated = os.path.join(tools, "curated", "torch.csv")
        self.refused(os.path.join(tools, "generate.py"), ["--check"], curated + ": not UTF-8 text")
        os.unlink(curated)
        os.mkfifo(curated)
        self.refused(os.path.join(tools, "generate.py"), ["--check"], curated + ": not a regular file")

    def test_bad_usage_and_outputs(self):
        plain = os.path.join(self.dir, "plain")
        with open(plain, "w") as f:
            f.write("x")
        self.refused("generate.py", ["--out", plain], plain + ": exists and is not a folder")
        self.refused("generate.py", ["--frob"], "unrecognized arguments: --frob")
        self.refused("torch_wheels.py", [], "the following arguments are required")
        self.refused("nccl_wheels.py", ["names"], "the following arguments are required: lib")
        with open(plain) as f:
            self.assertEqual(f.read(), "x")

    def test_a_library_that_is_no_file(self):
        fifo = os.path.join(self.dir, "libnccl.so.2")
        os.mkfifo(fifo)
        for lib in (fifo, self.dir):
            with self.subTest(lib=lib):
                self.refused("nccl_wheels.py", ["names", lib], lib + ": not a regular file")

    def test_an_index_that_is_no_pypi(self):
        page = os.path.join(self.dir, "index", "pypi", "torch")
        os.makedirs(page)
        with open(os.path.join(page, "json"), "w") as f:
            f.write("<html>not json</html>")
        for index, words in (("file://" + os.path.join(self.dir, "nowhere"), "cannot read"),
                             ("pypi.org", "unknown url type"),
                             ("file://" + os.path.join(self.dir, "index"), "not PyPI's JSON API")):
            with self.subTest(index=index):
                self.refused("torch_wheels.py", ["snapshot", "--index", index], "/pypi/torch/json", words)
        self.assertEqual(sorted(os.listdir(self.snaps)), ["nccl_source.json", "nccl_wheels.json", "torch_wheels.json"])


if __name__ == "__main__":
    unittest.main()
