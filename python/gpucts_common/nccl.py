"""Which NCCL this process runs: the libnccl files mapped into it (/proc/self/maps), each one's own
ncclGetVersion, and NCCL's version codes as text. The rules are those of gpucts' C++ probe
(fixtures/probe/probe.hpp: kNcclLibraryName, loaded_nccl_libraries) and version type
(matrix/version.hpp, VersionKind::Nccl); suites/data/common_cases.csv holds cases of each that the
two sides must answer alike."""
import ctypes
import os
import re
from typing import List, NamedTuple, Optional, Tuple, Union

# NCCL itself by its file name in any folder (libnccl.so, libnccl.so.2, libnccl.so.2.28.9), never one
# of its plugins (libnccl-net*, -profiler*, -tuner*, -env*). The same whole-name pattern as C++.
NCCL_LIBRARY_NAME = re.compile(r"libnccl\.so(\.[0-9]+)*")

# RTLD_NOLOAD: a library is looked up among those already mapped, never loaded a second time.
_RTLD_NOLOAD = getattr(os, "RTLD_NOLOAD", 4)


class NcclVersionError(RuntimeError):
    """ncclGetVersion could not be asked or answered: one line naming the library and why."""


class LoadedNccl(NamedTuple):
    path: str                # the real path of the mapped file
    version: Optional[str]   # "2.28.9" from its own ncclGetVersion; None where it gave none


def is_nccl_library(path: str) -> bool:
    return NCCL_LIBRARY_NAME.fullmatch(os.path.basename(path)) is not None


def mapped_libnccl(maps: str = "/proc/self/maps") -> List[str]:
    """Real paths of every NCCL library mapped into this process, once each, in map order (two are
    possible: the system's and a wheel's). None readable: []."""
    found = []
    try:
        with open(maps, encoding="utf-8", errors="surrogateescape") as f:
            for line in f:
                parts = line.split(None, 5)
                mapped = parts[5].rstrip("\n") if len(parts) == 6 else ""
                if mapped and is_nccl_library(mapped):
                    real = os.path.realpath(mapped)
                    if real not in found:
                        found.append(real)
    except OSError:
        pass
    return found


def version_code_of(path: str) -> int:
    """ncclGetVersion's code from the library at `path`, which must be mapped already.
    Raises NcclVersionError."""
    try:
        lib = ctypes.CDLL(path, mode=_RTLD_NOLOAD | os.RTLD_LOCAL)
    except OSError as e:
        raise NcclVersionError("%s is not loaded in this process: %s" % (path, e)) from e
    try:
        get_version = lib.ncclGetVersion
    except AttributeError as e:
        raise NcclVersionError("%s exports no ncclGetVersion" % path) from e
    code = ctypes.c_int(0)
    rc = get_version(ctypes.byref(code))
    if rc != 0:
        raise NcclVersionError("ncclGetVersion of %s returned %d" % (path, rc))
    return code.value


def loaded_nccl(maps: str = "/proc/self/maps") -> List[LoadedNccl]:
    """Every NCCL library mapped into this process with the version it reports."""
    out = []
    for path in mapped_libnccl(maps):
        try:
            version = version_string(version_code_of(path))
        except (NcclVersionError, ValueError):
            version = None
        out.append(LoadedNccl(path, version))
    return out


def version_tuple(code: int) -> Tuple[int, int, int]:
    """NCCL's version code as (major, minor, patch): 10000*major + 100*minor + patch from 2.9 on,
    1000*major + 100*minor + patch before (codes under 10000). ValueError for a code under 1000 or
    of more than a two-digit major (1000000 and up), as the C++ Version::from_code refuses them."""
    if isinstance(code, bool) or not isinstance(code, int):
        raise ValueError("invalid NCCL version code %r: not an integer" % (code,))
    if code < 1000:
        raise ValueError("invalid NCCL version code %d" % code)
    if code >= 1000000:
        raise ValueError("invalid version code %d: above 999999 (a major of more than two digits)" % code)
    unit = 1000 if code < 10000 else 10000
    return code // unit, code % unit // 100, code % 100


def version_string(code: int) -> str:
    """NCCL's version code as people write it: 22809 -> "2.28.9", 2708 -> "2.7.8"."""
    return "%d.%d.%d" % version_tuple(code)


def torch_nccl_version(value: Union[int, Tuple[int, ...], List[int]]) -> Tuple[int, int, int]:
    """What torch reports (torch.cuda.nccl.version(), ProcessGroupNCCL's runtime version) as
    (major, minor, patch): a tuple, torch's packed major << 32 | minor << 16 | patch, or NCCL's code."""
    if isinstance(value, (tuple, list)):
        return tuple(int(x) for x in value[:3])
    value = int(value)
    if value >= 1 << 32:
        return value >> 32, (value >> 16) & 0xFFFF, value & 0xFFFF
    return version_tuple(value)
