"""The case runner inside one rank: cases registered by decorator, one ordered list on every rank,
each case's result gathered to rank 0 over the job's own TCPStore (so rank 0 reports every rank's
result, failures naming the rank), the journal written as it goes."""
import datetime
import json
import os
import re
import sys
import time
import traceback

from . import report
from .inject import InjectedFault, plan_from_env


class Skip(Exception):
    """Raised by a case (ctx.skip) that cannot run here; the message is the reason."""


_FAMILIES = []  # (suite, fn(world) -> [(name, body)]) in registration order


def case(suite, name):
    """Registers one case; `name` may hold {w} (the world size), e.g. "bf16_autocast_w{w}"."""
    def deco(body):
        _FAMILIES.append((suite, lambda world: [(name.format(w=world.size), body)]))
        return body
    return deco


def family(suite):
    """Registers a generator of cases: fn(world) yields (name, body) with body(ctx)."""
    def deco(fn):
        _FAMILIES.append((suite, fn))
        return fn
    return deco


class Case:
    __slots__ = ("suite", "name", "body")

    def __init__(self, suite, name, body):
        self.suite, self.name, self.body = suite, name, body

    @property
    def display(self):
        return self.suite + "/" + self.name


def load_cases():
    # Importing the modules registers their cases, always in this order.
    from . import cases_collectives, cases_ddp, cases_fsdp, cases_lightning  # noqa: F401


def plan(world, pattern=None):
    """The ordered case list of a world (the same on every rank); `pattern` is searched in
    "Suite/name"."""
    load_cases()
    rx = re.compile(pattern) if pattern else None
    out = []
    for suite, fn in _FAMILIES:
        for name, body in fn(world):
            c = Case(suite, name, body)
            if rx is None or rx.search(c.display):
                out.append(c)
    return out


class WorldInfo:
    """What every rank knows about the world before any case: the same on every rank."""

    def __init__(self, kind, size, backend, launcher, skip_reason=""):
        self.kind = kind            # "1", "<n>", "sim<n>", "gpus"
        self.size = size
        self.backend = backend      # "nccl" | "gloo" | "" when the world is skipped
        self.launcher = launcher    # "torchrun" | "subprocess" | "srun"
        self.skip_reason = skip_reason

    @property
    def simulated_hosts(self):
        return self.kind.startswith("sim")


class Context:
    """What a case body sees: its rank, the world, the device, and helpers."""

    seed = 20261204

    def __init__(self, world, rank, local_rank, device, store):
        self.world = world
        self.rank = rank
        self.size = world.size
        self.local_rank = local_rank
        self.device = device
        self.store = store
        self.inject = plan_from_env()
        self.props = {}
        self.case = None

    @property
    def backend(self):
        return self.world.backend

    @property
    def on_gpu(self):
        return self.world.backend == "nccl"

    def skip(self, reason):
        raise Skip(reason)

    def prop(self, key, value):
        self.props[key] = str(value)

    def injects_here(self):
        return self.case is not None and self.inject.selects(self.case.suite, self.case.name, self.rank)

    def gather(self, tensor):
        """Every rank's copy of `tensor` (same shape everywhere), over the default process group."""
        import torch
        import torch.distributed as dist
        t = tensor.detach().contiguous()
        if self.size == 1:
            return [t]
        out = [torch.empty_like(t) for _ in range(self.size)]
        dist.all_gather(out, t)
        return out

    def same_on_every_rank(self, tensor, what):
        """Asserts that `tensor` is bit-identical on every rank; the message names each rank that differs."""
        import torch
        copies = self.gather(tensor)
        bad = []
        for r, t in enumerate(copies):
            if r and not torch.equal(t, copies[0]):
                diff = (t.double() - copies[0].double()).abs()
                diff = torch.nan_to_num(diff, nan=float("inf"))
                k = int(diff.view(-1).argmax())
                bad.append("rank %d differs from rank 0 (%d element(s), largest at index %d: %r vs %r)"
                           % (r, int((t != copies[0]).sum()), k, t.view(-1)[k].item(), copies[0].view(-1)[k].item()))
        if bad:
            raise AssertionError("%s not identical on every rank: %s" % (what, "; ".join(bad)))


def _run_body(c, ctx):
    start = report.now_ms()
    status, message, detail = "passed", "", ""
    try:
        if ctx.inject.raises_in(c.suite, c.name, ctx.rank):
            raise InjectedFault("GPUCTS_INJECT: rank %d raised as the case started" % ctx.rank)
        while ctx.inject.hangs_in(c.suite, c.name, ctx.rank):
            time.sleep(1)
        c.body(ctx)
        if ctx.injects_here() and "gpucts.injected" not in ctx.props:
            raise AssertionError("GPUCTS_INJECT selects this case on rank %d but changed nothing there (the element "
                                 "it names lies beyond the result, or the case has no value to change)" % ctx.rank)
    except Skip as s:
        status, message = "skipped", report.one_line(s)
    except AssertionError as e:
        status, message = "failed", report.one_line(e) or "assertion failed"
        detail = traceback.format_exc()
    except Exception as e:  # a case that raises fails with what it raised; the next case still runs
        status = "failed"
        message = report.one_line("%s: %s" % (type(e).__name__, e))
        detail = traceback.format_exc()
    return status, message, detail, start, (report.now_ms() - start) / 1000.0


def merge(c, per_rank):
    """Rank 0's verdict of a case from every rank's {status, message, detail, time_s, props}."""
    statuses = [p["status"] for p in per_rank]
    many = len(per_rank) > 1
    props = dict(per_rank[0].get("props", {}))
    for r, p in enumerate(per_rank[1:], 1):
        for k, v in p.get("props", {}).items():
            if props.get(k) != v:
                props["rank%d.%s" % (r, k)] = v
    time_s = max(p["time_s"] for p in per_rank)
    start = per_rank[0]["start_ms"]
    if "failed" in statuses:
        failed = [r for r, s in enumerate(statuses) if s == "failed"]
        by_message = {}
        for r in failed:
            by_message.setdefault(per_rank[r]["message"], []).append(r)
        if many:
            msg = "; ".join("rank%s %s of %d: %s" % ("s" if len(rs) > 1 else "", ", ".join(map(str, rs)),
                                                     len(per_rank), m) for m, rs in by_message.items())
        else:
            msg = per_rank[0]["message"]
        detail = "\n".join("--- rank %d ---\n%s" % (r, per_rank[r]["detail"] or per_rank[r]["message"])
                           for r in failed)
        return report.Result(c.suite, c.name, "failed", msg, detail, time_s, start, props)
    if all(s == "skipped" for s in statuses):
        return report.Result(c.suite, c.name, "skipped", per_rank[0]["message"], "", time_s, start, props)
    if "skipped" in statuses:
        msg = "ranks disagree: " + "; ".join(
            "rank %d %s%s" % (r, p["status"], (" (" + p["message"] + ")") if p["message"] else "")
            for r, p in enumerate(per_rank))
        return report.Result(c.suite, c.name, "failed", msg, msg, time_s, start, props)
    return report.Result(c.suite, c.name, "passed", "", "", time_s, start, props)


def print_result(r, out=sys.stdout):
    tag = {"passed": "[       OK ]", "failed": "[  FAILED  ]", "skipped": "[  SKIPPED ]"}[r.status]
    line = "%s %s (%s s)" % (tag, r.suite + "/" + r.name, report.seconds(r.time_s))
    if r.message:
        line += ": " + r.message
    print(line, file=out, flush=True)


def summary_line(results):
    p = sum(r.status == "passed" for r in results)
    f = sum(r.status == "failed" for r in results)
    s = sum(r.status == "skipped" for r in results)
    return "gpucts_python_suites: %d case(s): %d passed, %d failed, %d skipped" % (len(results), p, f, s)


def run_cases(cases, ctx, journal, store=None, resumed=False):
    """Runs `cases` in order on this rank. With a store (multi-rank or not), every rank posts its
    result and rank 0 merges them; ranks move to the next case together. Returns rank 0's merged
    results (other ranks: their own). A resumed world (the launcher's second one, after a case
    that stalled) goes on in the journal its first world started."""
    if not resumed:
        journal.program_start(len(cases))
    merged = []
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for i, c in enumerate(cases):
        ctx.case, ctx.props = c, {}
        journal.start(c.suite, c.name)
        if store is not None:
            # The launcher times a case from when every rank is in it, not from the world's start.
            store.add("started/%d" % i, 1)
        if ctx.world.skip_reason:
            status, message, detail, start, t = "skipped", ctx.world.skip_reason, "", report.now_ms(), 0.0
        else:
            status, message, detail, start, t = _run_body(c, ctx)
        journal.end(c.suite, c.name, status, message, start)
        counts[status] += 1
        mine = {"status": status, "message": message, "detail": detail, "time_s": t, "start_ms": start,
                "props": ctx.props}
        if ctx.rank != 0 and status == "failed":
            print("[rank %d] [  FAILED  ] %s: %s" % (ctx.rank, c.display, message), file=sys.stderr, flush=True)
        if store is None:
            r = merge(c, [mine])
        else:  # one rank too: the launcher reads the counters to see a case that never ends
            store.set("res/%d/%d" % (i, ctx.rank), json.dumps(mine))
            store.add("posted/%d/%d" % (i, ctx.rank), 1)  # counters the launcher reads without waiting
            if ctx.rank == 0:
                per_rank = [json.loads(store.get("res/%d/%d" % (i, k)).decode("utf-8")) for k in range(ctx.size)]
                r = merge(c, per_rank)
                store.set("go/%d" % i, "1")
                store.add("cases_done", 1)
            else:
                store.get("go/%d" % i)
                r = merge(c, [mine])
        merged.append(r)
        if ctx.rank == 0:
            print_result(r)
    journal.program_end(counts["passed"], counts["failed"], counts["skipped"])
    return merged


def store_timeout(deadline_at):
    left = deadline_at - time.time() if deadline_at else 600
    return datetime.timedelta(seconds=max(30, int(left)))
