"""Which NCCL this process runs: the libnccl files mapped into it (/proc/self/maps) and the version
each reports through its own ncclGetVersion. NCCL itself is told from its plugins by file name, the
rule gpucts' C++ probe and the preflight package apply (suites/data/nccl_library_names.csv is the
table all of them are tested against)."""
import ctypes
import os
import re

# libnccl.so, libnccl.so.2, libnccl.so.2.28.9 in any folder; never libnccl-net*, -profiler*,
# -tuner*, -env* (NCCL's plugins).
NCCL_LIBRARY_NAME = re.compile(r"libnccl\.so(\.[0-9]+)*")


def is_nccl_library(path):
    return NCCL_LIBRARY_NAME.fullmatch(os.path.basename(path)) is not None


def mapped_libnccl():
    """Real paths of every NCCL library mapped into this process, in map order."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and is_nccl_library(parts[5].strip()):
                    p = os.path.realpath(parts[5].strip())
                    if p not in found:
                        found.append(p)
    except OSError:
        pass
    return found


def nccl_version_of(path):
    """(major, minor, patch) from ncclGetVersion of the library at `path`, already mapped
    (RTLD_NOLOAD: never loads a second copy)."""
    try:
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4) | os.RTLD_LOCAL)
    except OSError as e:
        raise AssertionError("%s is not loaded in this process: %s" % (path, e))
    code = ctypes.c_int(0)
    rc = lib.ncclGetVersion(ctypes.byref(code))
    if rc != 0:
        raise AssertionError("ncclGetVersion of %s returned %d" % (path, rc))
    return decode_nccl_version(code.value)


def decode_nccl_version(v):
    """NCCL's version code (2.9 and later: major*10000 + minor*100 + patch; before: *1000) or
    torch's packed (major << 32 | minor << 16 | patch) or a tuple -> (major, minor, patch)."""
    if isinstance(v, (tuple, list)):
        return tuple(int(x) for x in v[:3])
    v = int(v)
    if v >= 1 << 32:
        return (v >> 32, (v >> 16) & 0xFFFF, v & 0xFFFF)
    if v >= 10000:
        return (v // 10000, (v % 10000) // 100, v % 100)
    return (v // 1000, (v % 1000) // 100, v % 100)
