"""What a run writes: the journal (one JSON line per event, flushed at once) and JUnit XML in
GoogleTest's layout. Standard library only."""
import json
import os
import time
from xml.sax.saxutils import quoteattr


def now_ms():
    return time.time() * 1000.0


def seconds(t):
    """Plain decimal seconds ("0.123"), never an exponent."""
    return "%.3f" % max(0.0, float(t))


def iso_time(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ms / 1000.0))


def safe_file_name(name):
    """The same rule as the C++ journal's file names: [A-Za-z0-9_.-], no leading dot, %XX else."""
    out = []
    for i, ch in enumerate(name):
        if ch.isascii() and (ch.isalnum() or ch in "_-" or (ch == "." and i > 0)):
            out.append(ch)
        else:
            out.extend("%%%02X" % b for b in ch.encode("utf-8"))
    return "".join(out) or "gpucts"


def journal_path(directory, test_name, rank, world_size):
    """<dir>/<test>.jsonl for one process, <dir>/<test>.rank<r>.jsonl in a multi-rank world."""
    base = safe_file_name(test_name or "gpucts_py")
    suffix = ".rank%d.jsonl" % rank if world_size > 1 else ".jsonl"
    return os.path.join(directory, base + suffix)


class Journal:
    """Append-only, one flushed line per event, so a crash leaves every finished case."""

    def __init__(self, path, rank):
        self.path = path
        self.rank = rank
        self._f = None
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            self._f = open(path, "a", encoding="utf-8")

    def write(self, event, **fields):
        if not self._f:
            return
        line = {"event": event}
        line.update(fields)
        self._f.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def program_start(self, cases):
        self.write("program_start", rank=self.rank, pid=os.getpid(), time_ms=now_ms(), cases=cases)

    def start(self, suite, name):
        self.write("start", case=suite + "." + name, suite=suite, name=name, rank=self.rank, time_ms=now_ms())

    def end(self, suite, name, result, message, start_ms):
        end = now_ms()
        self.write("end", case=suite + "." + name, suite=suite, name=name, rank=self.rank, result=result,
                   message=message, time_ms=end, duration_ms=end - start_ms)

    def program_end(self, passed, failed, skipped):
        self.write("program_end", rank=self.rank, time_ms=now_ms(), passed=passed, failed=failed,
                   skipped=skipped)

    def close(self):
        if self._f:
            self._f.close()
            self._f = None


def read_journal(path):
    """The last run in a journal file: (finished cases {case: end event}, running case or None,
    ended normally?). Torn lines are ignored."""
    finished, running, ended = {}, None, False
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return finished, running, ended
    for line in lines:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        kind = ev.get("event")
        if kind == "program_start":
            finished, running, ended = {}, None, False
        elif kind == "start":
            running = ev
        elif kind == "end":
            finished[ev.get("case")] = ev
            running = None
        elif kind == "program_end":
            ended = True
    return finished, running, ended


class Result:
    """One case's verdict as rank 0 reports it (every rank's result merged)."""

    __slots__ = ("suite", "name", "status", "message", "detail", "time_s", "start_ms", "properties")

    def __init__(self, suite, name, status, message="", detail="", time_s=0.0, start_ms=0.0, properties=None):
        self.suite, self.name, self.status = suite, name, status
        self.message, self.detail, self.time_s, self.start_ms = message, detail, time_s, start_ms
        self.properties = properties or {}


def result_to_dict(r):
    return {k: getattr(r, k) for k in Result.__slots__}


def result_from_dict(d):
    return Result(**{k: d[k] for k in Result.__slots__ if k in d})


def one_line(text, limit=2000):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cdata(text):
    return "<![CDATA[" + str(text).replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _valid_xml_text(text):
    # XML 1.0 forbids most control characters even when escaped.
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else "?" for ch in str(text))


def junit_xml(results, name="AllTests", start_ms=None):
    """GoogleTest's layout: testsuites > testsuite (one per case suite, in first-seen order) >
    testcase, with <properties>, <failure message=...> and <skipped message=...>."""
    order, groups = [], {}
    for r in results:
        if r.suite not in groups:
            order.append(r.suite)
            groups[r.suite] = []
        groups[r.suite].append(r)
    start_ms = start_ms if start_ms is not None else (results[0].start_ms if results else now_ms())

    def counts(rs):
        return (len(rs), sum(r.status == "failed" for r in rs), sum(r.status == "skipped" for r in rs),
                sum(r.time_s for r in rs))

    q = lambda v: quoteattr(_valid_xml_text(v))
    n, f, s, t = counts(results)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuites tests="%d" failures="%d" disabled="0" errors="0" time=%s timestamp=%s name=%s>'
           % (n, f, q(seconds(t)), q(iso_time(start_ms)), q(name))]
    for suite in order:
        rs = groups[suite]
        n, f, s, t = counts(rs)
        out.append('  <testsuite name=%s tests="%d" failures="%d" disabled="0" skipped="%d" errors="0" '
                   'time=%s timestamp=%s>' % (q(suite), n, f, s, q(seconds(t)), q(iso_time(rs[0].start_ms or start_ms))))
        for r in rs:
            result = "skipped" if r.status == "skipped" else "completed"
            out.append('    <testcase name=%s status="run" result="%s" time=%s timestamp=%s classname=%s>'
                       % (q(r.name), result, q(seconds(r.time_s)), q(iso_time(r.start_ms or start_ms)), q(suite)))
            if r.properties:
                out.append("      <properties>")
                for k in sorted(r.properties):
                    out.append("        <property name=%s value=%s/>" % (q(k), q(r.properties[k])))
                out.append("      </properties>")
            if r.status == "failed":
                out.append('      <failure message=%s type="">%s</failure>'
                           % (q(one_line(r.message)), _cdata(_valid_xml_text(r.detail or r.message))))
            elif r.status == "skipped":
                out.append("      <skipped message=%s>%s</skipped>"
                           % (q(one_line(r.message)), _cdata(_valid_xml_text(r.message))))
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def write_atomic(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def exit_code(results):
    """0 when every case that ran passed, 1 on any failure, 77 when every case skipped."""
    if any(r.status == "failed" for r in results):
        return 1
    if results and all(r.status == "skipped" for r in results):
        return 77
    return 0
