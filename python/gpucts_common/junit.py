"""JUnit XML in GoogleTest's layout (testsuites > testsuite per case suite > testcase, with
<properties>, <failure message=...> and <skipped message=...>), as gtest writes it for the C++
suites, so `gpucts qualify` reads both alike. Every message is cut to text.MESSAGE_LIMIT_BYTES."""
import time
from typing import Dict, List, Optional
from xml.sax.saxutils import quoteattr

from .journal import now_ms
from .text import cut_message, one_line


class Result:
    """One case's verdict as it is reported (in a multi-rank world: every rank's result merged)."""

    __slots__ = ("suite", "name", "status", "message", "detail", "time_s", "start_ms", "properties")

    def __init__(self, suite: str, name: str, status: str, message: str = "", detail: str = "",
                 time_s: float = 0.0, start_ms: float = 0.0, properties: Optional[Dict[str, str]] = None):
        self.suite, self.name, self.status = suite, name, status
        self.message, self.detail, self.time_s, self.start_ms = message, detail, time_s, start_ms
        self.properties = properties or {}


def result_to_dict(r: Result) -> dict:
    return {k: getattr(r, k) for k in Result.__slots__}


def result_from_dict(d: dict) -> Result:
    return Result(**{k: d[k] for k in Result.__slots__ if k in d})


def seconds(t) -> str:
    """Plain decimal seconds ("0.123"), never an exponent."""
    return "%.3f" % max(0.0, float(t))


def iso_time(ms: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ms / 1000.0))


def _cdata(text) -> str:
    return "<![CDATA[" + str(text).replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _valid_xml_text(text) -> str:
    # XML 1.0 forbids most control characters even when escaped.
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else "?" for ch in str(text))


def junit_xml(results: List[Result], name: str = "AllTests", start_ms: Optional[float] = None) -> str:
    """The document: one testsuite per case suite, in first-seen order."""
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

    def q(v):
        return quoteattr(_valid_xml_text(v))

    def body(text):
        return _cdata(_valid_xml_text(cut_message(text)))

    n, f, s, t = counts(results)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuites tests="%d" failures="%d" disabled="0" errors="0" time=%s timestamp=%s name=%s>'
           % (n, f, q(seconds(t)), q(iso_time(start_ms)), q(name))]
    for suite in order:
        rs = groups[suite]
        n, f, s, t = counts(rs)
        out.append('  <testsuite name=%s tests="%d" failures="%d" disabled="0" skipped="%d" errors="0" '
                   'time=%s timestamp=%s>'
                   % (q(suite), n, f, s, q(seconds(t)), q(iso_time(rs[0].start_ms or start_ms))))
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
                           % (q(one_line(r.message)), body(r.detail or r.message)))
            elif r.status == "skipped":
                out.append("      <skipped message=%s>%s</skipped>" % (q(one_line(r.message)), body(r.message)))
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
