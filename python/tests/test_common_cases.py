"""gpucts_common over suites/data/common_cases.csv, the table tests/common_cases_test.cpp runs the
C++ side over: each row must give its expected answer here as it must there, so the two rules
cannot drift apart unnoticed. Run: python3 -m unittest -v tests.test_common_cases (in python/)."""
import csv
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gpucts_common import files, nccl, text  # noqa: E402

TABLE = os.path.join(HERE, "..", "..", "suites", "data", "common_cases.csv")
REFUSED = b"!invalid"


def decode_cell(cell):
    """A cell of the table as bytes: \\\\, \\n, \\xHH, and \\{N} (the preceding character N times in all)."""
    out, last, i = bytearray(), None, 0
    while i < len(cell):
        ch = cell[i]
        if ch != "\\":
            last = ch.encode("utf-8")
            out += last
            i += 1
            continue
        rest = cell[i + 1:]
        if rest.startswith("\\") or rest.startswith("n"):
            last = b"\\" if rest[0] == "\\" else b"\n"
            out += last
            i += 2
        elif re.match(r"x[0-9A-Fa-f]{2}", rest):
            last = bytes([int(rest[1:3], 16)])
            out += last
            i += 4
        elif re.match(r"\{[0-9]+\}", rest):
            count = int(rest[1:rest.index("}")])
            if last is None or count < 1:
                raise ValueError("%r: \\{N} needs a character before it and N >= 1" % cell)
            out += last * (count - 1)
            i += 2 + rest.index("}")
        else:
            raise ValueError("%r: unknown escape \\%s" % (cell, rest[:1]))
    return bytes(out)


def as_text(data):
    return data.decode("utf-8", "surrogateescape")


def answer(kind, given):
    """What gpucts_common answers for one row, as bytes; REFUSED where it raises ValueError."""
    try:
        if kind == "file_name":
            return files.safe_file_name(as_text(given)).encode("ascii")
        if kind == "nccl_version":
            return nccl.version_string(int(given.decode("ascii"))).encode("ascii")
        if kind == "nccl_library":
            return b"yes" if nccl.is_nccl_library(as_text(given)) else b"no"
        if kind == "message_cut":
            return text.cut_message(as_text(given)).encode("utf-8", "surrogateescape")
    except ValueError:
        return REFUSED
    raise AssertionError("unknown kind %r" % kind)


def rows():
    with open(TABLE, encoding="utf-8", newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(lines))


class CommonCases(unittest.TestCase):
    def test_every_row_answers_as_expected(self):
        table = rows()
        kinds = {r["kind"] for r in table}
        self.assertEqual(kinds, {"file_name", "nccl_version", "nccl_library", "message_cut"})
        for r in table:
            given, want = decode_cell(r["input"]), decode_cell(r["expected"])
            with self.subTest(kind=r["kind"], input=r["input"][:80]):
                got = answer(r["kind"], given)
                if got != want:  # answers run to 64 KiB: name where they part, not both in full
                    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                    self.fail("%s %r: got %d bytes, expected %d; from byte %d got %r, expected %r" % (
                        r["kind"], r["input"][:80], len(got), len(want), at, got[at:at + 80], want[at:at + 80]))

    def test_cell_escapes(self):
        self.assertEqual(decode_cell(r"a\{3}\n\\\xff\{2}é\{2}"), b"aaa\n\\\xff\xff" + "éé".encode())
        for bad in (r"\{2}", r"a\q", r"a\{0}"):
            with self.assertRaises(ValueError, msg=bad):
                decode_cell(bad)


if __name__ == "__main__":
    unittest.main()
