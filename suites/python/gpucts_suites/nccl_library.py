"""Which NCCL this process runs, for the suites' cases: gpucts_common.nccl (the libnccl files mapped
into this process, each one's ncclGetVersion) with versions as (major, minor, patch) and a case's
AssertionError where a mapped library gives none."""
from gpucts_common.nccl import (NcclVersionError, is_nccl_library, mapped_libnccl,  # noqa: F401
                                 torch_nccl_version, version_code_of)


def nccl_version_of(path):
    """(major, minor, patch) from ncclGetVersion of the library at `path`, already mapped."""
    try:
        return torch_nccl_version(version_code_of(path))
    except (NcclVersionError, ValueError) as e:
        raise AssertionError(str(e)) from e


def decode_nccl_version(v):
    """torch's report of an NCCL version (a tuple, its packed int or NCCL's code) -> (major, minor, patch)."""
    return torch_nccl_version(v)
