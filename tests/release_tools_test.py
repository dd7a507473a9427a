#!/usr/bin/env python3
"""ci/nccl_prune and ci/fetch_nccl_wheels on hand-made bad inputs: each gives one line on stderr and
exit status 2 (a bad cached library: 1, and the cache keeps nothing of it), never a traceback, a
hang on a FIFO or a read of /dev/zero until memory runs out.

  release_tools_test.py SOURCE_DIR
fetch_nccl_wheels runs with a stand-in python3 first in PATH that answers `-m pip download` with a
wheel made here (no network); every other python3 call goes to the real one.
"""
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import unittest

SOURCE = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
PRUNE = os.path.join(SOURCE, "ci", "nccl_prune")
FETCH = os.path.join(SOURCE, "ci", "fetch_nccl_wheels")
# An ELF shared object that is surely there: this interpreter's own libpython, else libc.
SHARED = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6",
                          "/lib/aarch64-linux-gnu/libc.so.6") if os.path.isfile(p))


def put(path, data):
    with open(path, "wb" if isinstance(data, (bytes, bytearray)) else "w") as f:
        f.write(data)


def read(path, n=-1):
    with open(path, "rb") as f:
        return f.read(n)


def run(argv, env=None, timeout=20):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


class Scratch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="release_tools.")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assertOneLine(self, r, code, has):
        self.assertEqual(r.returncode, code, r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertIn(has, r.stderr)


class NcclPruneBadInput(Scratch):
    def prune(self, *args):
        return run([sys.executable, PRUNE] + list(args))

    def test_cut_elf(self):
        put(self.path("cut.so"), read(SHARED, 4096))
        self.assertOneLine(self.prune("list", self.path("cut.so")), 2, "cut.so: cut ELF")

    def test_bad_section_index(self):
        data = bytearray(read(SHARED))
        struct.pack_into("<H", data, 0x3E, 0xFFF0)  # e_shstrndx past every section
        put(self.path("bad.so"), data)
        self.assertOneLine(self.prune("list", self.path("bad.so")), 2, "bad section index")

    def test_text_is_not_elf(self):
        put(self.path("text.so"), "not a library\n")
        self.assertOneLine(self.prune("list", self.path("text.so")), 2, "not a 64-bit ELF")

    def test_version_with_a_slash(self):
        r = self.prune("pack", "--arch", "90", "--cache", self.dir, "--out", self.path("out"), "2.28/../../x")
        self.assertOneLine(r, 2, "version '2.28/../../x'")
        self.assertFalse(os.path.exists(self.path("out")), "nothing is made before the input is judged")

    def test_output_that_is_a_file(self):
        put(self.path("afile"), "x")
        self.assertOneLine(self.prune("pack", "--arch", "90", "--out", self.path("afile"), "2.28.9"), 2,
                           "is not a directory")
        self.assertOneLine(self.prune("prune", "--arch", "90", SHARED, self.dir), 2, "is a directory")

    def test_devices_and_fifos_are_refused_at_once(self):
        os.mkfifo(self.path("fifo"))
        for target in ("/dev/zero", self.path("fifo")):
            self.assertOneLine(self.prune("list", target), 2, "not a regular file")  # within the timeout

    def test_usage_errors_are_one_line(self):
        self.assertOneLine(self.prune("list"), 2, "required")
        self.assertOneLine(self.prune("list", self.path("absent")), 2, "absent: cannot open")

    def test_a_library_without_fatbins_lists_nothing(self):
        r = self.prune("list", SHARED)
        self.assertEqual(r.returncode, 0, r.stderr)


FAKE_PYTHON = """#!/bin/sh
# Stand-in for python3: `-m pip download ... -d DIR PKG==VER` makes a wheel holding $FAKE_LIB.
if [ "$1" = -m ] && [ "$2" = pip ]; then
  exec "$REAL_PYTHON" - "$@" <<'PY'
import os, sys, zipfile
args = sys.argv[1:]
d = args[args.index("-d") + 1]
pkg, ver = args[-1].split("==")
os.makedirs(d, exist_ok=True)
if os.environ.get("FAKE_NOT_ZIP"):  # a download cut short
    open(os.path.join(d, "%s-%s-py3-none-any.whl" % (pkg.replace("-", "_"), ver)), "w").write("junk")
    sys.exit(0)
with zipfile.ZipFile(os.path.join(d, "%s-%s-py3-none-manylinux_2_18_x86_64.whl" % (pkg.replace("-", "_"), ver)), "w") as z:
    z.write(os.environ["FAKE_LIB"], "nvidia/nccl/lib/libnccl.so.2")
    z.writestr("nvidia/nccl/include/nccl.h", "/* nccl.h */\\n")
PY
fi
exec "$REAL_PYTHON" "$@"
"""


class FetchNcclWheels(Scratch):
    def setUp(self):
        super().setUp()
        self.bin = self.path("bin")
        os.mkdir(self.bin)
        fake = os.path.join(self.bin, "python3")
        put(fake, FAKE_PYTHON)
        os.chmod(fake, 0o755)
        self.cache = self.path("cache")

    def fetch(self, lib, *args):
        env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], REAL_PYTHON=sys.executable,
                   FAKE_LIB=lib)
        return run(["bash", FETCH] + list(args), env=env, timeout=60)

    def leftovers(self):
        return [n for n in os.listdir(self.cache) if n.endswith(".part") or n.startswith(".download")]

    def test_cache_without_a_value(self):
        for args in (["--cache"], ["--cache", ""], ["2.28.9", "--cache"], ["--cuda"]):
            r = self.fetch(SHARED, *args)
            self.assertOneLine(r, 2, "needs a value")
            self.assertNotIn("unbound", r.stderr)

    def test_a_version_that_is_a_path_is_refused(self):
        self.assertOneLine(self.fetch(SHARED, "--cache", self.cache, "../x"), 2, "version '../x'")

    def test_a_text_library_is_not_cached_and_no_part_is_left(self):
        put(self.path("libnccl.so.2"), "this is text, not a library\n")
        r = self.fetch(self.path("libnccl.so.2"), "--cache", self.cache, "2.28.9")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("holds no libnccl.so.2 that is an ELF shared object", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.cache, "2.28.9")))
        self.assertEqual(self.leftovers(), [])

    def test_an_executable_is_no_shared_object(self):
        r = self.fetch(shutil.which("env") or "/usr/bin/env", "--cache", self.cache, "2.28.9")
        exe_type = struct.unpack_from("<H", read(shutil.which("env") or "/usr/bin/env", 18), 16)[0]
        if exe_type == 3:
            self.skipTest("this system's executables are position-independent (ET_DYN) like libraries")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(self.leftovers(), [])

    def test_a_shared_object_is_cached_and_a_bad_cached_one_fetched_again(self):
        r = self.fetch(SHARED, "--cache", self.cache, "2.28.9")
        self.assertEqual(r.returncode, 0, r.stderr)
        lib = os.path.join(self.cache, "2.28.9", "lib", "libnccl.so.2")
        self.assertEqual(read(lib, 4), b"\x7fELF")
        self.assertIn("in the cache", self.fetch(SHARED, "--cache", self.cache, "2.28.9").stdout)
        os.chmod(lib, stat.S_IRUSR | stat.S_IWUSR)
        put(lib, "cut\n")
        r = self.fetch(SHARED, "--cache", self.cache, "2.28.9")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fetching it again", r.stderr)
        self.assertEqual(read(lib, 4), b"\x7fELF")
        self.assertEqual(self.leftovers(), [])

    def test_a_failed_unpacking_leaves_no_part(self):
        # A wheel that is no zip archive: the unpacking step fails mid-way, as a killed one would.
        env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"], REAL_PYTHON=sys.executable,
                   FAKE_LIB=SHARED, FAKE_NOT_ZIP="1")
        r = run(["bash", FETCH, "--cache", self.cache, "2.28.9"], env=env, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.leftovers(), [])
        self.assertFalse(os.path.exists(os.path.join(self.cache, "2.28.9")))

if __name__ == "__main__":
    unittest.main(verbosity=2)
