"""Shared helpers of the matrix tools: versions, snapshots, CSV in the matrix dialect.

Everything here is deterministic: the same inputs give the same bytes.
"""
import argparse
import csv
import io
import json
import os
import re
import stat
import sys
import tempfile

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
# GPUCTS_MATRIX_SNAPSHOTS: another snapshot directory (a test's edited copy); default snapshot/.
SNAPSHOT_DIR = os.environ.get("GPUCTS_MATRIX_SNAPSHOTS") or os.path.join(TOOLS_DIR, "snapshot")
CURATED_DIR = os.path.join(TOOLS_DIR, "curated")
DATA_DIR = os.path.join(os.path.dirname(TOOLS_DIR), "data")


def vkey(text):
    """Sort key of a dotted version ("2.30.7" < "2.31.2")."""
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.]", text))


def fail(where, what):
    """Bad input: one line naming the file (and line), exit 2, nothing written."""
    sys.stderr.write("%s: %s\n" % (where, what))
    sys.exit(2)


class OneLineParser(argparse.ArgumentParser):
    """Bad usage in one line and exit 2, as every other refusal of the tools (argparse adds its usage)."""

    def error(self, message):
        self.exit(2, "%s: %s\n" % (self.prog, message))


def read_input(path, limit):
    """The bytes of a regular file of at most `limit` bytes. Only a regular file is opened, and
    without blocking: a FIFO would hang the open or the read, /dev/zero would never end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        fail(path, "cannot read (%s)" % e.strerror)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            fail(path, "not a regular file")
        if st.st_size > limit:
            fail(path, "%d bytes, more than the %d such a file may have" % (st.st_size, limit))
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:  # grown since the fstat
            fail(path, "more than the %d bytes such a file may have" % limit)
        return data
    except OSError as e:
        fail(path, "cannot read (%s)" % e.strerror)
    finally:
        os.close(fd)


MAX_SNAPSHOT_BYTES = 64 << 20  # snapshots and curated files: the committed ones are a few hundred KB


def load_snapshot(name, shape, nonempty=()):
    """A snapshot as an object holding `shape` ({key: list or dict}, what the caller reads), the keys
    of `nonempty` with an item; else one line naming the file and what is wrong, exit 2 (a truncated
    file, another snapshot in its place)."""
    path = os.path.join(SNAPSHOT_DIR, name)
    if not os.path.lexists(path):
        fail(path, "cannot read (No such file or directory); run the snapshot step first")
    try:
        snap = json.loads(read_input(path, MAX_SNAPSHOT_BYTES).decode("utf-8"))
    except json.JSONDecodeError as e:
        fail(path, "line %d column %d: %s" % (e.lineno, e.colno, e.msg))
    except (UnicodeDecodeError, RecursionError) as e:
        fail(path, "not JSON text (%s)" % (str(e).splitlines() or [type(e).__name__])[0])
    if not isinstance(snap, dict):
        fail(path, "the top level is a %s, expected an object" % type(snap).__name__)
    for key, kind in shape.items():
        if not isinstance(snap.get(key), kind):
            fail(path, "'%s' is %s, expected %s" % (key, "missing" if key not in snap else
                                                   "a " + type(snap[key]).__name__, "a " + kind.__name__))
    for key in nonempty:
        if not snap[key]:
            fail(path, "'%s' is empty" % key)
    return snap


def write_files(files):
    """[(path, text)], all or none: each text goes to a new file beside its target, created
    exclusively under a random name (a file or link already there is never opened) and flushed;
    only when every one is ready are they renamed into place. A failure: one line, exit 2."""
    mask = os.umask(0)
    os.umask(mask)
    ready = []
    try:
        for path, text in files:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix="." + os.path.basename(path) + ".")
            ready.append(tmp)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                os.fchmod(fd, 0o666 & ~mask)  # mkstemp's 0600 would hide the data from other users
                f.write(text)
                f.flush()
                os.fsync(fd)
        for tmp, (path, _) in zip(ready, files):
            os.replace(tmp, path)  # replaces a link at the target itself, never follows it
    except OSError as e:
        for tmp in ready:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        fail(e.filename or path, "cannot write (%s)" % e.strerror)


def write_snapshot(name, obj):
    """Sorted keys, one item a line where short: small diffs when a release is added."""
    os.makedirs(SNAPSHOT_DIR, exist_ok=True)
    path = os.path.join(SNAPSHOT_DIR, name)
    write_files([(path, json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n")])
    return path


def read_curated(name, required):
    """A curated CSV (comments with '#'): list of dicts, each with its line number under '_line'."""
    path = os.path.join(CURATED_DIR, name)
    try:
        text = read_input(path, MAX_SNAPSHOT_BYTES).decode("utf-8")
    except UnicodeDecodeError as e:  # a hand edit in another encoding
        fail(path, "not UTF-8 text (%s)" % e)
    rows, header = [], None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = next(csv.reader([line]))
        if header is None:
            header = fields
            missing = [c for c in required if c not in header]
            if missing:
                fail("%s:%d" % (path, lineno), "missing column '%s'" % missing[0])
            continue
        if len(fields) != len(header):
            fail("%s:%d" % (path, lineno), "expected %d fields, found %d" % (len(header), len(fields)))
        row = dict(zip(header, fields))
        row["_line"] = lineno
        if "source" in header and not row["source"]:
            fail("%s:%d" % (path, lineno), "column 'source' is empty")
        rows.append(row)
    return rows


def csv_cell(text):
    if any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def render_csv(comments, columns, rows):
    """The matrix dialect: '#' comment lines, a header, RFC 4180 rows, LF line ends."""
    out = io.StringIO()
    for c in comments:
        out.write("# " + c + "\n" if c else "#\n")
    out.write(",".join(columns) + "\n")
    for r in rows:
        out.write(",".join(csv_cell(str(r.get(c, ""))) for c in columns) + "\n")
    return out.getvalue()


def ranges_of(present, order):
    """Runs of consecutive releases (in `order`) where a fact is present: [[first, last], ...]."""
    runs, start, prev = [], None, None
    for v in order:
        if v in present:
            if start is None:
                start = v
            prev = v
        elif start is not None:
            runs.append([start, prev])
            start = None
    if start is not None:
        runs.append([start, prev])
    return runs


def snapshot_main(argv, doc, name, options, produce):
    """The `snapshot` command line of a tool: options = [(flag, kwargs)], produce(args) -> the snapshot."""
    ap = OneLineParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot", help="read the primary source and write snapshot/" + name)
    for flag, kwargs in options:
        s.add_argument(flag, **kwargs)
    args = ap.parse_args(argv)
    print("wrote " + write_snapshot(name, produce(args)))
