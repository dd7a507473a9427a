"""What the preflight writes into its store and reads back: signed with the job's token, every field checked.

The store is unauthenticated: any process that reaches its port can read and write every key. So the
checker (rank 0) draws a random token for this run and writes it under the key `token`; every process
signs what it writes (HMAC-SHA256 keyed by the token, over the full key name and the value), and every
reader checks the signature, the size and each field it uses before believing an entry. An entry
without the right signature is named as written by a process outside this job; one with a field of
the wrong type or range is named with that field. This catches a stray writer (another job on the same
port, a process left from an earlier run, a tool) and keeps it from causing a hang or a traceback; it
does not stop a deliberate one, which can read the token like any rank.
"""
import hashlib
import hmac
import json
import math
import secrets

from gpucts_common.launcher import MAX_WORLD_SIZE

MAX_ENTRY_BYTES = 1 << 20  # a fingerprint is tens of KiB; a report of many ranks stays far below this
TOKEN_HEX_CHARS = 32
MAX_CLAIMS = 16  # processes claiming one rank: more is no job's launch but a counter written from outside
MAX_PID = 1 << 22  # Linux's pid_max limit


class EntryError(ValueError):
    """An entry that cannot be believed. `foreign`: not signed by this job (a writer outside it)."""

    def __init__(self, key, why, foreign=False):
        super().__init__("%s: %s" % (key, why))
        self.key, self.why, self.foreign = key, why, foreign

    def sentence(self):
        if self.foreign:
            return "the key %s was written by a process outside this job (%s)" % (self.key, self.why)
        return "the key %s holds data the preflight cannot use: %s" % (self.key, self.why)


def new_token():
    return secrets.token_hex(TOKEN_HEX_CHARS // 2)


def token_from(key, raw):
    """The job's token as rank 0 wrote it: exactly 32 lowercase hex digits, else EntryError."""
    if len(raw) == TOKEN_HEX_CHARS:
        t = raw.decode("ascii", "replace")
        if all(c in "0123456789abcdef" for c in t):
            return t
    raise EntryError(key, "%d bytes that are not a job token" % len(raw), foreign=True)


def _mac(token, key, body):
    return hmac.new(token.encode("ascii"), key.encode("utf-8") + b"\n" + body, hashlib.sha256).hexdigest()


def seal(token, key, value):
    """The bytes to store under `key`: the signature, a newline, the value as JSON."""
    body = json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_ENTRY_BYTES:
        raise EntryError(key, "%d bytes of JSON, above the limit of %d" % (len(body), MAX_ENTRY_BYTES))
    return _mac(token, key, body).encode("ascii") + b"\n" + body


def unseal(token, key, raw, check):
    """The value under `key` once its size, signature and fields (check(key, value)) hold, else EntryError."""
    mac, sep, body = raw.partition(b"\n")
    if not sep or not hmac.compare_digest(mac, _mac(token, key, body).encode("ascii")):
        raise EntryError(key, "no signature with this job's token", foreign=True)
    if len(body) > MAX_ENTRY_BYTES:
        raise EntryError(key, "%d bytes, above the limit of %d" % (len(body), MAX_ENTRY_BYTES))
    try:
        value = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise EntryError(key, "not JSON (%s)" % str(e).splitlines()[0][:120]) from None
    check(key, value)
    return value


# Field rules: (path, kind, low, high). A path walks dicts by name; "[]" is every element of a list and
# "*" every value of a dict. An absent field or a JSON null passes (the comparisons treat it as unknown);
# a present one must be of its kind, and a number within [low, high].
_ANY = (None, None)
FINGERPRINT_FIELDS = (
    ("", "dict") + _ANY,
    ("schema", "str") + _ANY, ("host", "str") + _ANY, ("boot_id", "str") + _ANY, ("probe", "str") + _ANY,
    ("rank", "int", 0, MAX_WORLD_SIZE - 1), ("cuda_runtime", "str") + _ANY, ("cudnn", "str") + _ANY,
    ("torch_error", "str") + _ANY, ("gpucts_error", "str") + _ANY,
    ("nccl", "dict") + _ANY, ("nccl.runtime", "str") + _ANY, ("nccl.library", "str") + _ANY,
    ("nccl.header", "str") + _ANY,
    ("torch", "dict") + _ANY, ("torch.version", "str") + _ANY, ("torch.cuda", "str") + _ANY,
    ("torch.nccl", "str") + _ANY, ("torch.nccl_loaded", "str") + _ANY, ("torch.cudnn", "str") + _ANY,
    ("torch.cudnn_build", "str") + _ANY, ("torch.cudnn_error", "str") + _ANY,
    ("driver", "dict") + _ANY, ("driver.version", "str") + _ANY, ("driver.cuda", "str") + _ANY,
    ("gpus", "list") + _ANY, ("gpus[]", "dict") + _ANY, ("gpus[].uuid", "str") + _ANY, ("gpus[].pci", "str") + _ANY,
    ("interfaces", "list") + _ANY, ("interfaces[]", "dict") + _ANY, ("interfaces[].name", "str") + _ANY,
    ("nccl_loaded", "list") + _ANY, ("nccl_loaded[]", "dict") + _ANY, ("nccl_loaded[].path", "str") + _ANY,
    ("nccl_loaded[].version", "str") + _ANY,
    ("env", "dict") + _ANY, ("env.*", "str") + _ANY,
    ("gpucts_rank", "dict") + _ANY,
    ("gpucts_rank.rank", "int", 0, MAX_WORLD_SIZE - 1), ("gpucts_rank.world_size", "int", 1, MAX_WORLD_SIZE),
    ("gpucts_rank.local_rank", "int", 0, MAX_WORLD_SIZE - 1), ("gpucts_rank.gpu_index", "int", -1, MAX_WORLD_SIZE),
    ("gpucts_rank.pid", "int", 1, MAX_PID), ("gpucts_rank.env_hash", "str") + _ANY,
    ("gpucts_rank.env", "dict") + _ANY, ("gpucts_rank.env.*", "str") + _ANY,
    ("gpucts_rank.gpu_uuid", "str") + _ANY, ("gpucts_rank.gpu_pci", "str") + _ANY,
    ("gpucts_rank.nccl_hostid", "str") + _ANY, ("gpucts_rank.nccl_hostid_hex", "str") + _ANY,
    ("gpucts_rank.master_port_taken", "str") + _ANY,
    ("gpucts_rank.launcher", "dict") + _ANY,
    ("gpucts_rank.launcher.rank", "int", 0, MAX_WORLD_SIZE - 1),
    ("gpucts_rank.launcher.local_rank", "int", 0, MAX_WORLD_SIZE - 1),
    ("gpucts_rank.launcher.node_rank", "int", 0, MAX_WORLD_SIZE - 1),
    ("gpucts_rank.launcher.local_world_size", "int", 1, MAX_WORLD_SIZE),
    ("gpucts_rank.launcher.contradictions", "list") + _ANY, ("gpucts_rank.launcher.contradictions[]", "str") + _ANY,
)
HELLO_FIELDS = (("", "dict") + _ANY, ("host", "str") + _ANY, ("pid", "int", 1, MAX_PID))
REPORT_FIELDS = (
    ("", "dict") + _ANY, ("status", "int", 0, 2), ("text", "str") + _ANY, ("seconds", "number", 0, math.inf),
    ("processes", "int", 1, MAX_WORLD_SIZE * MAX_CLAIMS), ("printer_pid", "int", 1, MAX_PID),
    ("problems", "list") + _ANY, ("problems[]", "dict") + _ANY, ("problems[].id", "str") + _ANY,
    ("problems[].severity", "str") + _ANY, ("problems[].cause", "str") + _ANY, ("problems[].fix", "str") + _ANY,
    ("members", "list") + _ANY, ("members[]", "list") + _ANY, ("members[][]", "int", 0, MAX_WORLD_SIZE - 1),
)
_KINDS = {"dict": (dict,), "list": (list,), "str": (str,), "int": (int,), "number": (int, float)}


def _walk(value, parts, where):
    if not parts:
        yield where, value
        return
    head, rest = parts[0], parts[1:]
    if head == "[]":
        if isinstance(value, list):
            for i, v in enumerate(value):
                yield from _walk(v, rest, "%s[%d]" % (where, i))
    elif head == "*":
        if isinstance(value, dict):
            for k, v in value.items():
                yield from _walk(v, rest, "%s.%s" % (where, k) if where else k)
    elif isinstance(value, dict) and head in value:
        yield from _walk(value[head], rest, "%s.%s" % (where, head) if where else head)


def _split(path):
    """"gpus[].uuid" -> ["gpus", "[]", "uuid"]."""
    out = []
    for p in path.split(".") if path else []:
        if p.replace("[]", ""):
            out.append(p.replace("[]", ""))
        out += ["[]"] * p.count("[]")
    return out


def check_fields(key, value, rules, required=()):
    """EntryError naming the first field of `value` that breaks `rules`, or a `required` path absent."""
    for path, kind, low, high in rules:
        for where, v in _walk(value, _split(path), ""):
            if v is None and path:
                continue
            ok = isinstance(v, _KINDS[kind]) and not isinstance(v, bool)
            if ok and kind == "number":
                ok = math.isfinite(v)
            if not ok:
                raise EntryError(key, "%s is %s, not %s" % (where or "the value", _show(v), _NAMES[kind]))
            if low is not None and not low <= v <= high:
                raise EntryError(key, "%s=%s is out of range (%s to %s)" % (where, _show(v), low, high))
    for path in required:
        if not any(v is not None for _, v in _walk(value, _split(path), "")):
            raise EntryError(key, "%s is missing" % path)


_NAMES = {"dict": "an object", "list": "a list", "str": "a string", "int": "an integer", "number": "a number"}


def _show(v):
    s = json.dumps(v) if not isinstance(v, float) or math.isfinite(v) else str(v)
    return s if len(s) <= 40 else s[:37] + "..."


def fingerprint_check(rank):
    """The check of rank `rank`'s fingerprint: its fields, and that it names the rank it was written for."""
    def check(key, fp):
        check_fields(key, fp, FINGERPRINT_FIELDS, required=("gpucts_rank.rank", "gpucts_rank.world_size"))
        if fp["gpucts_rank"]["rank"] != rank:
            raise EntryError(key, "gpucts_rank.rank=%d under the key of rank %d" % (fp["gpucts_rank"]["rank"], rank))
    return check


def hello_check(key, value):
    check_fields(key, value, HELLO_FIELDS, required=("pid",))


def report_check(key, value):
    check_fields(key, value, REPORT_FIELDS, required=("status", "text", "processes", "members"))
