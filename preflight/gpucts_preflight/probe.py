"""This process's fingerprint without the gpucts install tree: a subset of gpucts.fingerprint/1.

What matters is what THIS process will run the job with: the libnccl mapped into it (read from
/proc/self/maps, its version from its own ncclGetVersion), not the NCCL torch was compiled against
(torch.cuda.nccl.version() is the header's).
"""
import ctypes
import fcntl
import os
import socket
import struct
import sys

from gpucts_common.files import stable_hash
# is_nccl_library stays importable from here: the preflight's tests read probe.is_nccl_library.
from gpucts_common.nccl import is_nccl_library, loaded_nccl, torch_nccl_version  # noqa: F401

# Per-rank or per-host by nature: never compared across ranks (the same set as gpucts' C++ preflight).
PER_RANK_ENV = {"RANK", "LOCAL_RANK", "CUDA_VISIBLE_DEVICES", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA",
                "NCCL_DEBUG_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "NCCL_HOSTID"}
# NCCL hashes at most this many bytes of NCCL_HOSTID (its host hash buffer is 1024 with the NUL).
HOSTID_BYTES = 1023


def _text(v):
    """A value as valid UTF-8 for JSON: undecodable bytes of the environment become \\xNN."""
    return v.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def compared_env(env, text=False):
    return {k: (_text(v) if text else v) for k, v in env.items()
            if (k.startswith("NCCL_") or k.startswith("TORCH_")) and k not in PER_RANK_ENV}


def env_hash(env):
    """FNV-1a over "name=value\\n" in name order, as gpucts' C++ preflight computes it."""
    return "%016x" % stable_hash("".join("%s=%s\n" % (k, env[k]) for k in sorted(compared_env(env))))


def hostid_bytes():
    raw = os.environb.get(b"NCCL_HOSTID")
    return None if raw is None else raw[:HOSTID_BYTES]


def printable(raw):
    """Bytes as a person reads them: UTF-8 where valid, \\xNN where not (sim\\xff and sim\\xfe differ)."""
    return raw.decode("utf-8", "backslashreplace")


def interfaces():
    """[{name, up, addresses}] from the kernel, as NCCL enumerates them (getifaddrs order aside)."""
    out = []
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _, name in socket.if_nameindex():
            req = struct.pack("256s", name.encode()[:15])
            try:
                flags = struct.unpack("H", fcntl.ioctl(s.fileno(), 0x8913, req)[16:18])[0]  # SIOCGIFFLAGS
            except OSError:
                flags = 0
            addrs = []
            try:
                addrs.append(socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24]))  # SIOCGIFADDR
            except OSError:
                pass
            out.append({"name": name, "up": bool(flags & 1), "addresses": addrs})
    finally:
        s.close()
    return out


def _driver():
    d = {}
    try:
        with open("/proc/driver/nvidia/version") as f:
            first = f.readline()
        for w in first.split():
            if w.count(".") >= 1 and w.replace(".", "").isdigit():
                d["version"] = w
                break
    except OSError:
        pass
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int(0)
        if cuda.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value:
            d["cuda"] = "%d.%d" % (v.value // 1000, v.value % 1000 // 10)
    except (OSError, AttributeError):
        pass
    return d


def _torch_part(fp, local_rank):
    try:
        import torch
    except Exception as e:  # an import error IS a finding: a preloaded libnccl can break it
        fp["torch_error"] = "%s: %s" % (type(e).__name__, e)
        return
    t = {"version": torch.__version__, "cuda": torch.version.cuda}
    try:
        t["nccl"] = "%d.%d.%d" % torch_nccl_version(torch.cuda.nccl.version())
    except Exception:
        pass
    # torch raises from torch.backends.cudnn.version() when it refuses the runtime cuDNN (another
    # major, an older minor than its build, one too new for a visible GPU): both versions are read
    # beside it and torch's words are kept, as gpucts' own probe does, so the check names the refusal.
    cudnn_binding = getattr(torch._C, "_cudnn", None)
    for key, getter in (("cudnn_build", "getCompileVersion"), ("cudnn", "getRuntimeVersion")):
        try:
            t[key] = ".".join(str(n) for n in getattr(cudnn_binding, getter)())
        except Exception:
            pass
    try:
        c = torch.backends.cudnn.version()
        if c and "cudnn" not in t:
            t["cudnn"] = "%d.%d.%d" % (c // 10000, c // 100 % 100, c % 100) if c >= 90000 else str(c)
    except Exception as e:
        t["cudnn_error"] = ("%s: %s" % (type(e).__name__, " ".join(str(e).split())))[:2000]
    fp["torch"] = t
    if t.get("cudnn"):
        fp["cudnn"] = t["cudnn"]
    if torch.version.cuda:
        fp["cuda_runtime"] = torch.version.cuda
    fp.setdefault("nccl", {})["header"] = t.get("nccl")
    gpus = []
    try:
        n = torch.cuda.device_count()
        for i in range(n):
            p = torch.cuda.get_device_properties(i)
            g = {"index": i, "name": p.name, "cc": "%d.%d" % (p.major, p.minor),
                 "memory_mib": p.total_memory // (1 << 20)}
            u = getattr(p, "uuid", None)
            if u is not None:
                g["uuid"] = "GPU-" + str(u)
            if hasattr(p, "pci_bus_id"):
                g["pci"] = "%04x:%02x:%02x.0" % (getattr(p, "pci_domain_id", 0), p.pci_bus_id,
                                                 getattr(p, "pci_device_id", 0))
            gpus.append(g)
    except Exception as e:
        fp["gpu_error"] = "%s: %s" % (type(e).__name__, e)
    fp["gpus"] = gpus


def _test_overrides(driver, fp):
    """GPUCTS_FAKE_DRIVER_CUDA replaces the driver's CUDA version, with GPUCTS_TEST_MODE=1 only (as in
    gpucts' own probe): a driver older than torch's CUDA cannot be staged on a real machine otherwise."""
    v = os.environ.get("GPUCTS_FAKE_DRIVER_CUDA")
    if v is None:
        return
    if os.environ.get("GPUCTS_TEST_MODE") != "1":
        sys.stderr.write("gpucts preflight: GPUCTS_FAKE_DRIVER_CUDA ignored: fakes are honoured only with "
                         "GPUCTS_TEST_MODE=1\n")
        return
    driver["cuda"] = v
    fp["gpucts_test_overrides"] = "GPUCTS_FAKE_DRIVER_CUDA=" + v


def fingerprint(identity):
    """The fingerprint of this process, annotated for the cross-rank comparison (gpucts_rank)."""
    env = dict(os.environ)
    fp = {"schema": "gpucts.fingerprint/1", "host": socket.gethostname(), "probe": "gpucts_preflight"}
    if identity.rank is not None:
        fp["rank"] = identity.rank
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            fp["boot_id"] = f.read().strip()
    except OSError:
        pass
    d = _driver()
    _test_overrides(d, fp)
    if d:
        fp["driver"] = d
    _torch_part(fp, identity.local_rank)
    loaded = loaded_nccl()
    if loaded:
        fp.setdefault("nccl", {})
        fp["nccl"]["library"], fp["nccl"]["runtime"] = loaded[0]
        fp["nccl_loaded"] = [{"path": p, "version": v} for p, v in loaded]
    fp["interfaces"] = interfaces()
    fp["env"] = {k: _text(v) for k, v in env.items()
                 if k.startswith("NCCL_") or k.startswith("TORCH_NCCL_") or
                 k in ("CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK",
                       "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    annotate(fp, identity, env)
    return fp


def annotate(fp, identity, env):
    """gpucts_rank: what gpucts' C++ preflight records per rank (same keys), plus the launcher audit."""
    gpus = fp.get("gpus") or []
    local = identity.local_rank if identity.local_rank is not None else 0
    index = local if local < len(gpus) else -1
    info = {"rank": identity.rank, "local_rank": local, "world_size": identity.world_size,
            "gpu_index": index, "env_hash": env_hash(env),
            "env": compared_env(env, text=True), "launcher": identity.to_json(), "pid": os.getpid()}
    raw = hostid_bytes()
    if raw is not None:
        info["nccl_hostid"] = printable(raw)
        info["nccl_hostid_hex"] = raw.hex()
    if 0 <= index < len(gpus):
        g = gpus[index]
        if g.get("pci"):
            info["gpu_pci"] = g["pci"]
        # The GPU's identity on its host: its UUID, else its bus id (torch builds without uuid).
        ident = g.get("uuid") or ("pci:" + g["pci"] if g.get("pci") else None)
        if ident:
            info["gpu_uuid"] = ident
    fp["gpucts_rank"] = info
    return fp
