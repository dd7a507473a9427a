"""Every rank's fingerprint to one checker over a torch.distributed TCPStore of the preflight's own.

The store listens on MASTER_ADDR at MASTER_PORT + GPUCTS_PREFLIGHT_PORT_OFFSET (default 1000; or at
GPUCTS_PREFLIGHT_PORT), never on the job's own port, and every key carries the job's id: the job's own
rendezvous is never touched, and NCCL is never used. The first process on MASTER_ADDR's machine that
binds the port hosts the store and is the checker (rank 0 when it is there); every other process is a
client. A rank that never joins is named when the preflight's own timeout expires.
"""
import json
import socket
import time
from datetime import timedelta


class GatherError(RuntimeError):
    pass


def _is_local_address(addr):
    try:
        infos = socket.getaddrinfo(addr, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        return False
    for fam, _, _, _, sa in infos:
        s = socket.socket(fam, socket.SOCK_STREAM)
        try:
            s.bind((sa[0], 0))
            return True
        except OSError:
            continue
        finally:
            s.close()
    return False


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


def _listening(addr, port):
    try:
        socket.create_connection((addr, port), timeout=0.5).close()
        return True
    except OSError:
        return False


class Rendezvous:
    def __init__(self, addr, port, job_id, timeout_s):
        import torch.distributed as dist  # only here: the probe and the comparisons need no torch
        self.prefix = "gpucts_preflight/%s/" % job_id
        self.timeout_s = timeout_s
        self.server = False
        self.addr, self.port = addr, port
        td = timedelta(seconds=timeout_s)
        # A store already listening is joined at once: a failed attempt to host it makes c10d log
        # bind errors into the user's job output.
        if _is_local_address(addr) and not _listening(addr, port):
            try:
                self.store = dist.TCPStore(addr, port, None, True, td, wait_for_workers=False)
                self.server = True
                return
            except Exception:
                pass  # another process of this machine hosts it: join as a client
        try:
            self.store = dist.TCPStore(addr, port, None, False, td)
        except Exception as e:
            raise GatherError("the preflight's store at %s:%d did not answer within %g s (%s): the process that "
                              "hosts it (rank 0's machine) did not start or did not reach the preflight" % (
                                  addr, port, timeout_s, str(e).splitlines()[0] if str(e) else type(e).__name__))

    def key(self, k):
        return self.prefix + k

    def set(self, k, v):
        self.store.set(self.key(k), v)

    def get(self, k):
        return self.store.get(self.key(k)).decode("utf-8")

    def has(self, k):
        check = getattr(self.store, "check", None)
        if check is not None:
            return check([self.key(k)])
        # torch 1.x has no Store.check, and a timed-out wait leaves its client out of step. A
        # compare_set whose expected value is not empty never creates a missing key: it answers
        # the expected value back when the key is absent, the stored one when it is present.
        absent = b"\0gpucts-absent"
        return self.store.compare_set(self.key(k), absent, absent) != absent

    def add(self, k, n=1):
        return self.store.add(self.key(k), n)

    def wait_for(self, k, deadline):
        while time.monotonic() < deadline:
            if self.has(k):
                return True
            time.sleep(0.05)
        return self.has(k)


def join(rdv, rank, hello):
    """Claims `rank` (a second claimer of one rank gets its own slot) and says who it is. Returns the slot."""
    slot = rdv.add("claims/%d" % rank) - 1
    rdv.set("hello/%d/%d" % (rank, slot), json.dumps(hello))
    return slot


def publish(rdv, rank, slot, fp):
    rdv.set("fp/%d/%d" % (rank, slot), json.dumps(fp))


def collect(rdv, world_size, started):
    """Rank 0's (the checker's) view once every expected rank has sent its fingerprint or the timeout ran
    out: (fingerprints in rank order, [(missing rank, host hint)], {rank: [fingerprints]} claimed twice)."""
    deadline = started + rdv.timeout_s
    expected = world_size
    fps, twice, missing = {}, {}, []
    r = 0
    while r < expected:
        if not rdv.wait_for("fp/%d/0" % r, deadline):
            missing.append(r)
            r += 1
            continue
        fp = json.loads(rdv.get("fp/%d/0" % r))
        fps[r] = fp
        ws = (fp.get("gpucts_rank") or {}).get("world_size")
        if isinstance(ws, int) and ws > expected:
            expected = ws  # a rank that counts more ranks: wait for those too, and report the difference
        r += 1
    # Give second claimers a moment to publish, then take every claim.
    for r in list(fps):
        n = int(rdv.add("claims/%d" % r, 0))
        if n > 1:
            twice[r] = [fps[r]]
            for slot in range(1, n):
                if rdv.wait_for("fp/%d/%d" % (r, slot), time.monotonic() + 2.0):
                    twice[r].append(json.loads(rdv.get("fp/%d/%d" % (r, slot))))
    hints = []
    for m in missing:
        hello = None
        n = int(rdv.add("claims/%d" % m, 0))
        if n and rdv.has("hello/%d/0" % m):
            hello = json.loads(rdv.get("hello/%d/0" % m))
        if hello:
            hints.append((m, "host %s joined but sent no fingerprint within %g s" % (hello.get("host"), rdv.timeout_s)))
        else:
            hints.append((m, "%s; it never connected within %g s" % (_guess_host(m, fps), rdv.timeout_s)))
    return [fps[r] for r in sorted(fps)], hints, twice


def _guess_host(rank, fps):
    """The host a missing rank was meant for, from ranks of its node that did join (contiguous node blocks)."""
    for fp in fps.values():
        lj = (fp.get("gpucts_rank") or {}).get("launcher") or {}
        lws, r, lr = lj.get("local_world_size"), lj.get("rank"), lj.get("local_rank")
        if lws and r is not None and lr is not None and (r - lr) <= rank < (r - lr) + lws:
            from .compare import host_name
            return "expected on host %s beside rank %d" % (host_name(fp), r)
    return "host unknown"


def finish(rdv, rank, slot, report, world_size):
    """The checker publishes the report; everyone reads it, acknowledges, and the checker waits (briefly)
    for the acknowledgements before its store goes away."""
    if report is not None:
        rdv.set("report", json.dumps(report))
    deadline = time.monotonic() + rdv.timeout_s + 10
    if not rdv.wait_for("report", deadline):
        raise GatherError("the checker (the process hosting the preflight's store) published no report within "
                          "%g s" % (rdv.timeout_s + 10))
    out = json.loads(rdv.get("report"))
    rdv.add("acks")
    if rdv.server:
        stop = time.monotonic() + 5
        while time.monotonic() < stop and int(rdv.add("acks", 0)) < out.get("processes", world_size):
            time.sleep(0.02)
    return out
