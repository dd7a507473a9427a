"""The journal of one test process: one JSON line per event (program_start, start, end,
program_end, and the launcher's own), written and flushed at once, so a crash, a SIGKILL or a
timeout still leaves every finished case and the one that was running. The C++ suites write the
same events (fixtures/gtest/journal.cpp); `gpucts journal-to-junit` and `gpucts qualify` read both."""
import json
import os
import time
from typing import Dict, Optional, Tuple

from .files import open_append, safe_file_name
from .text import cut_message

# Fields of free text that are cut to the message limit (a case name is never cut).
_MESSAGE_FIELDS = ("message", "reason")


def now_ms() -> float:
    return time.time() * 1000.0


def journal_path(directory: str, test_name: str, rank: int, world_size: int) -> str:
    """<dir>/<test>.jsonl for one process, <dir>/<test>.rank<r>.jsonl in a multi-rank world."""
    base = safe_file_name(test_name or "gpucts_py")
    suffix = ".rank%d.jsonl" % rank if world_size > 1 else ".jsonl"
    return os.path.join(directory, base + suffix)


class Journal:
    """Append-only, one flushed line per event. An empty path writes nothing."""

    def __init__(self, path: str, rank: int):
        self.path = path
        self.rank = rank
        self._f = None
        if path:
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            self._f = open_append(path)

    def write(self, event: str, **fields) -> None:
        if not self._f:
            return
        line = {"event": event}
        line.update(fields)
        for k in _MESSAGE_FIELDS:
            if isinstance(line.get(k), str):
                line[k] = cut_message(line[k])
        self._f.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def program_start(self, cases: int) -> None:
        self.write("program_start", rank=self.rank, pid=os.getpid(), time_ms=now_ms(), cases=cases)

    def start(self, suite: str, name: str) -> None:
        self.write("start", case=suite + "." + name, suite=suite, name=name, rank=self.rank, time_ms=now_ms())

    def end(self, suite: str, name: str, result: str, message: str, start_ms: float) -> None:
        end = now_ms()
        self.write("end", case=suite + "." + name, suite=suite, name=name, rank=self.rank, result=result,
                   message=message, time_ms=end, duration_ms=end - start_ms)

    def program_end(self, passed: int, failed: int, skipped: int) -> None:
        self.write("program_end", rank=self.rank, time_ms=now_ms(), passed=passed, failed=failed,
                   skipped=skipped)

    def close(self) -> None:
        if self._f:
            self._f.close()
            self._f = None


def read_journal(path: str) -> Tuple[Dict[str, dict], Optional[dict], bool]:
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
        if not isinstance(ev, dict):
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
