"""Every rank's fingerprint to one checker over a torch.distributed TCPStore, never NCCL.

Who hosts the store is fixed by the rank, never by timing: the process whose rank is 0 hosts it on
MASTER_ADDR's machine at MASTER_PORT + GPUCTS_PREFLIGHT_PORT_OFFSET (or GPUCTS_PREFLIGHT_PORT) and is the
checker; every other process is a client that retries connecting until its timeout. Under torchrun
with the agent's store (TORCHELASTIC_USE_AGENT_STORE=True) that store, at MASTER_ADDR:MASTER_PORT, is
used by every rank as a client, and the first process to claim rank 0 is the checker.

Keys, under gpucts_preflight/<job id>/ (plus attempt<n>/ after a torchrun restart): `token` (the run's
random token, written by the checker), `claims/<rank>` (a counter: a second claimer of a rank gets slot
1), `hello/<rank>/<slot>`, `fp/<rank>/<slot>`, `report`, `acks`. Every entry but the token and the
counters is signed with the token and checked on reading (entries.py). Every wait ends at a deadline.
"""
import os
import queue
import socket
import threading
import time
from datetime import timedelta

from . import entries

# After its fingerprint is out, how long a rank waits for the report beyond its own timeout: the
# checker's evaluation (gpucts check, bounded at 60 s) comes after the checker's own timeout.
REPORT_GRACE_S = 70.0
POLL_S = 0.05


class GatherError(RuntimeError):
    """This process cannot finish the preflight: str() is the cause, `id` and `fix` complete the report line."""

    def __init__(self, id, cause, fix):
        super().__init__(cause)
        self.id, self.fix = id, fix


NO_RANK_0 = ("rank-0-not-reached", "see why no process of rank 0 reached the preflight: its launcher's log, a "
             "RANK/NODE_RANK that gives no process rank 0, a MASTER_ADDR that is not rank 0's host, a firewall")
PORT_TAKEN_FIX = ("stop what holds the port, or set GPUCTS_PREFLIGHT_PORT (or GPUCTS_PREFLIGHT_PORT_OFFSET) to a "
                  "port free on rank 0's host")
STORE_LOST = ("preflight-store-lost", "see rank 0's output: its process ended, or the network between the hosts broke")


def port_taken(addr, port):
    """A sentence when (addr, port) cannot be bound because something listens there, else None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", port))
        return None
    except OSError as e:
        return "MASTER_PORT=%d on %s (MASTER_ADDR=%s) is already taken by another process (%s)" % (
            port, socket.gethostname(), addr, e.strerror)
    finally:
        s.close()


def _resolve(addr, port):
    """The socket addresses of (addr, port), [] where the name does not resolve (c10d then says why)."""
    try:
        return [(fam, sa) for fam, _, _, _, sa in socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM)]
    except (socket.gaierror, UnicodeError):
        return []


def _one_of(where, use):
    """Whether use(socket, address) succeeds for one of the addresses; every socket is closed after."""
    for fam, sa in where:
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            use(s, sa)
            return True
        except OSError:
            continue
        finally:
            s.close()
    return False


def is_local_address(addr):
    """Whether this machine has the address (MASTER_ADDR's machine is where rank 0 checks MASTER_PORT)."""
    return _one_of(_resolve(addr, 0), lambda s, sa: s.bind((sa[0], 0)))


def _accepts(where, timeout_s):
    """Whether something accepts connections at one of the addresses (the connection is closed at once)."""
    def connect(s, sa):
        s.settimeout(timeout_s)
        s.connect(sa)
    return _one_of(where, connect)


def _listening(port):
    return _accepts([(socket.AF_INET, ("127.0.0.1", port)), (socket.AF_INET6, ("::1", port))], 0.5)


def _first_line(e):
    return str(e).splitlines()[0] if str(e) else type(e).__name__


class _Caller:
    """Runs the store's calls on a thread of its own and waits for each at most a bound: c10d's client
    waits on its socket without one in some calls, so a port held by something that is not a store, or a
    store host gone silent, would otherwise hang this process. A call past its bound is abandoned (the
    daemon thread stays blocked in it; every later call fails at once)."""

    def __init__(self):
        self.calls = queue.Queue()
        self.stuck = None
        threading.Thread(target=self._serve, name="gpucts-preflight-store", daemon=True).start()

    def _serve(self):
        while True:
            job = self.calls.get()
            if job is None:
                return
            fn, args, box, done = job
            try:
                box.append((True, fn(*args)))
            except Exception as e:
                box.append((False, e))
            done.set()

    def call(self, fn, args, limit_s):
        if self.stuck:
            raise TimeoutError(self.stuck)
        box, done = [], threading.Event()
        self.calls.put((fn, args, box, done))
        if not done.wait(limit_s):
            self.stuck = "an earlier call got no answer within %g s" % limit_s
            raise TimeoutError("no answer within %g s" % limit_s)
        ok, value = box[0]
        if ok:
            return value
        raise value

    def close(self):
        if not self.stuck:
            self.calls.put(None)


class Rendezvous:
    """A connection to the preflight's store. host=True: this process (rank 0) hosts it."""

    def __init__(self, addr, port, prefix, timeout_s, host):
        import torch.distributed as dist  # only here: the probe and the comparisons need no torch
        self.prefix = prefix
        self.timeout_s = timeout_s
        # Counted from here, after torch's import (seconds on a loaded machine), as every rank counts it.
        self.deadline = time.monotonic() + timeout_s
        self.addr, self.port = addr, port
        self.server = False
        self.bind_problem = None
        self.port_held = False
        self.token = None
        self.caller = _Caller()
        # One call of a working store takes milliseconds, even on a loaded machine; one that takes this long
        # is a store that does not answer.
        self.call_limit_s = max(timeout_s, 10.0)
        td = timedelta(seconds=timeout_s)
        if host:
            # Something already listening on the port: another process claiming rank 0, or not the
            # preflight at all. Join it as a client (a failed bind makes c10d log into the job's output).
            self.port_held = _listening(port)
            if self.port_held:
                self.bind_problem = "port %d was already taken when rank 0 (pid %d) came to host the store" % (
                    port, os.getpid())
            else:
                try:
                    self.store = dist.TCPStore(addr, port, None, True, td, wait_for_workers=False)
                    self.server = True
                    return
                except Exception as e:
                    self.bind_problem = "rank 0 (pid %d) could not host the store on port %d (%s)" % (
                        os.getpid(), port, _first_line(e))
        # answered_not: something accepted the connection yet the store's handshake failed (torch 2.x
        # handshakes in the client's constructor; torch 1.x only on the first call, see _call).
        last, where, answered_not = None, _resolve(addr, port), False
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                break
            # c10d's client retries with pauses of up to a second; a plain connect every 0.1 s joins as soon
            # as rank 0 listens.
            if where and not _accepts(where, min(left, 1.0)):
                time.sleep(min(0.1, max(self.deadline - time.monotonic(), 0)))
                continue
            try:
                self.store = self.caller.call(dist.TCPStore, (addr, port, None, False,
                                                              timedelta(seconds=max(left, 1.0))), left + 10)
                self.store.set_timeout(td)
                return
            except Exception as e:  # refused or timed out: rank 0 may still be starting
                last, answered_not = e, bool(where)
                if self.caller.stuck:
                    break
                time.sleep(min(0.2, max(self.deadline - time.monotonic(), 0)))
        self.caller.close()
        why = _first_line(last) if last else "no time left"
        if self.port_held:  # this is rank 0: what holds the port is no store of this job
            raise GatherError("preflight-port-taken", "%s, and it did not answer as a store within %g s (%s)" % (
                self.bind_problem, timeout_s, why), PORT_TAKEN_FIX)
        if answered_not:
            raise GatherError(STORE_LOST[0], "something at %s:%d accepts connections but did not answer as the "
                              "preflight's store within %g s (%s)" % (addr, port, timeout_s, why), STORE_LOST[1])
        raise GatherError(NO_RANK_0[0], "the preflight's store at %s:%d did not answer within %g s (%s): the process "
                          "of rank 0, which hosts it, did not start or did not reach the preflight%s" % (
                              addr, port, timeout_s, why, "; " + self.bind_problem if self.bind_problem else ""), NO_RANK_0[1])

    def close(self):
        self.caller.close()

    def key(self, k):
        return self.prefix + k

    def _call(self, what, fn, *args):
        try:
            return self.caller.call(fn, args, self.call_limit_s)
        except Exception as e:
            if self.bind_problem:  # rank 0 joined what held the port, and it is no store of this job
                raise GatherError("preflight-port-taken", "%s, and it failed on %s (%s)" % (
                    self.bind_problem, what, _first_line(e)), PORT_TAKEN_FIX) from None
            raise GatherError(STORE_LOST[0], "the preflight's store at %s:%d failed on %s (%s)" % (
                self.addr, self.port, what, _first_line(e)), STORE_LOST[1]) from None

    def set_raw(self, k, raw):
        self._call("set " + self.key(k), self.store.set, self.key(k), raw)

    def get_raw(self, k):
        return self._call("get " + self.key(k), self.store.get, self.key(k))

    def has(self, k):
        check = getattr(self.store, "check", None)
        if check is not None:
            return self._call("check " + self.key(k), check, [self.key(k)])
        # torch 1.x has no Store.check, and a timed-out wait leaves its client out of step. A
        # compare_set whose expected value is not empty never creates a missing key: it answers
        # the expected value back when the key is absent, the stored one when it is present.
        absent = b"\0gpucts-absent"
        return self._call("compare_set " + self.key(k), self.store.compare_set, self.key(k), absent,
                          absent) != absent

    def count(self, k, n=0):
        """A counter's value after adding n; a value no process of a job makes is an EntryError."""
        v = self._call("add " + self.key(k), self.store.add, self.key(k), n)
        if not isinstance(v, int) or not 0 <= v <= entries.MAX_CLAIMS * entries.MAX_WORLD_SIZE:
            raise entries.EntryError(self.key(k), "the counter reads %r" % (v,), foreign=True)
        return v

    def put(self, k, value):
        self.set_raw(k, entries.seal(self.token, self.key(k), value))

    def read(self, k, check, deadline):
        """The value under k once it is there, signed and valid; None where absent at the deadline. An entry
        that fails the checks is waited past (its rightful writer may still replace it); EntryError when that
        is what the key still holds at the deadline."""
        bad = None
        while True:
            if self.has(k):
                try:
                    return entries.unseal(self.token, self.key(k), self.get_raw(k), check)
                except entries.EntryError as e:
                    bad = e
            if time.monotonic() >= deadline:
                if bad is not None:
                    raise bad
                return None
            time.sleep(POLL_S)


def open_run(rdv, rank):
    """Claims `rank` and settles the run's token; returns (slot, is the checker). The checker draws the
    token and claims first; every other process reads the token before claiming."""
    slot = None
    if rank == 0:
        slot = rdv.count("claims/0", 1) - 1
    checker = rdv.server or (rank == 0 and slot == 0 and rdv.bind_problem is None)
    if checker:
        token = entries.new_token()
        # Written only where absent: a token already there came from outside this run.
        got = rdv._call("compare_set " + rdv.key("token"), rdv.store.compare_set, rdv.key("token"), b"",
                        token.encode("ascii"))
        if got != token.encode("ascii"):
            raise entries.EntryError(rdv.key("token"), "it held %d bytes before rank 0 wrote it" % len(got),
                                     foreign=True)
        rdv.token = token
    else:
        rdv.token = _read_token(rdv)
    if slot is None:
        slot = rdv.count("claims/%d" % rank, 1) - 1
    return slot, checker


def _read_token(rdv):
    bad = None
    while True:
        if rdv.has("token"):
            try:
                return entries.token_from(rdv.key("token"), rdv.get_raw("token"))
            except entries.EntryError as e:
                bad = e
        if time.monotonic() >= rdv.deadline:
            if bad is not None:
                raise bad
            raise GatherError(NO_RANK_0[0], "rank 0 wrote no job token (key %s) within %g s: rank 0 did not start or "
                              "did not reach the preflight%s" % (rdv.key("token"), rdv.timeout_s, "; " +
                                                                 rdv.bind_problem if rdv.bind_problem else ""),
                              NO_RANK_0[1])
        time.sleep(POLL_S)


def join(rdv, rank, slot, hello):
    rdv.put("hello/%d/%d" % (rank, slot), hello)


def publish(rdv, rank, slot, fp):
    rdv.put("fp/%d/%d" % (rank, slot), fp)


def collect(rdv, world_size):
    """The checker's view once every rank has sent its fingerprint or the deadline passed: (fingerprints in
    rank order, [(missing rank, host hint)], {rank: [fingerprints]} claimed twice, [EntryError], [[rank,
    slot]] of every process whose fingerprint it holds)."""
    fps, twice, missing, bad, unbelieved = {}, {}, [], [], {}
    for r in range(world_size):
        try:
            fp = rdv.read("fp/%d/0" % r, entries.fingerprint_check(r), rdv.deadline)
        except entries.EntryError as e:
            bad.append(e)
            unbelieved[r] = e.key
            continue
        if fp is None:
            missing.append(r)
        else:
            fps[r] = fp
    members = [[r, 0] for r in sorted(fps)]
    # Second claimers have had the whole wait to publish; a moment more, shared by all of them.
    extra_deadline = time.monotonic() + 2.0
    for r in sorted(fps):
        try:
            n = rdv.count("claims/%d" % r)
            if n > entries.MAX_CLAIMS:
                raise entries.EntryError(rdv.key("claims/%d" % r), "%d claims of one rank" % n, foreign=True)
            for slot in range(1, n):
                fp = rdv.read("fp/%d/%d" % (r, slot), entries.fingerprint_check(r), extra_deadline)
                if fp is not None:
                    twice.setdefault(r, [fps[r]]).append(fp)
                    members.append([r, slot])
        except entries.EntryError as e:
            bad.append(e)
    hints = []
    for m in missing:
        hello = None
        try:
            if rdv.count("claims/%d" % m):
                hello = rdv.read("hello/%d/0" % m, entries.hello_check, 0)
        except entries.EntryError as e:
            bad.append(e)
        if hello:
            hints.append((m, "host %s joined but sent no fingerprint within %g s" % (hello.get("host"), rdv.timeout_s)))
        else:
            hints.append((m, "%s; it never connected within %g s" % (_guess_host(m, fps), rdv.timeout_s)))
    # The token is the one entry nobody can sign: a different one now means a writer from outside.
    try:
        now = rdv.get_raw("token")
        if now != rdv.token.encode("ascii"):
            bad.append(entries.EntryError(rdv.key("token"), "it was replaced while the ranks were joining",
                                          foreign=True))
    except GatherError as e:
        bad.append(entries.EntryError(rdv.key("token"), "it cannot be read back (%s)" % e))
    hints += [(r, "no fingerprint of it could be believed: see %s" % key) for r, key in sorted(unbelieved.items())]
    return [fps[r] for r in sorted(fps)], sorted(hints), twice, bad, sorted(members)


def _guess_host(rank, fps):
    """The host a missing rank was meant for, from ranks of its node that did join (contiguous node blocks)."""
    for fp in fps.values():
        lj = (fp.get("gpucts_rank") or {}).get("launcher") or {}
        lws, r, lr = lj.get("local_world_size"), lj.get("rank"), lj.get("local_rank")
        if lws and r is not None and lr is not None and (r - lr) <= rank < (r - lr) + lws:
            from .compare import host_name
            return "expected on host %s beside rank %d" % (host_name(fp), r)
    return "host unknown"


def finish(rdv, rank, slot, report):
    """The checker publishes the report; everyone reads it, acknowledges, and the checker waits (at most its
    timeout) for the acknowledgements before its store goes away. A process the report does not list
    (a rank beyond the checker's world size, a late claimer) gets its own failing status."""
    if report is not None:
        rdv.put("report", report)
    out = rdv.read("report", entries.report_check, time.monotonic() + rdv.timeout_s + REPORT_GRACE_S)
    if out is None:
        raise GatherError("report-not-received", "rank 0 (the checker) published no report within %g s" % (
            rdv.timeout_s + REPORT_GRACE_S), "see rank 0's output: it did not finish its check")
    rdv.count("acks", 1)
    if report is not None:
        stop = time.monotonic() + rdv.timeout_s
        while time.monotonic() < stop and rdv.count("acks") < out["processes"]:
            time.sleep(POLL_S / 2)
    if [rank, slot] not in out["members"]:
        raise GatherError("rank-not-checked", "this process (rank %d, claim %d, pid %d) is not among the %d processes "
                          "rank 0 checked" % (rank, slot, os.getpid(), out["processes"]),
                          "see rank 0's report: a WORLD_SIZE that differs between ranks, or a rank claimed twice")
    return out
