"""Which torch.distributed call reaches which row of the C++ collective table
(fixtures/nccl/collectives.cpp), and c10d's name for it: the one place the Python suites map their
names onto the C++ suites' and the defect data's. A name missing here is an error, never a silent
non-match (tests/py_api_map_test.py holds this table to the C++ table and to the registered cases).

CALLS: one row per case family of `Collectives/*` (the case name's prefix): the C++ rows its torch
call reaches through ProcessGroupNCCL (nccl_defects.csv selects by these) and the c10d ProcessGroup
method behind it (torch_defects.csv selects by this). Where the NCCL call depends on the build or
the arguments, every row it may reach is listed (torch/csrc/cuda/nccl.cpp: all_to_all_single with
equal splits is ncclAlltoAll in a torch built against NCCL >= 2.28, grouped ncclSend/ncclRecv
before and for uneven splits; gather, scatter and the all_to_all list form are always grouped
ncclSend/ncclRecv). Coalesced all-reduces are ncclAllReduce calls in one NCCL group (the C++
AllReduce row's grouped variant); c10d runs them as allreduce_coalesced (from 2.1 the
_coalescing_manager spelling too), whose own defects torch_defects.csv names by that name.

UNREACHED: the C++ rows no torch.distributed call reaches, each with the reason."""

CALLS = {
    # family: (C++ rows reached, c10d name)
    "all_reduce": (("AllReduce",), "allreduce"),
    "all_reduce_coalesced": (("AllReduce",), "allreduce_coalesced"),
    "coalescing_manager_all_reduce": (("AllReduce",), "allreduce_coalesced"),
    "reduce": (("Reduce",), "reduce"),
    "broadcast": (("Broadcast",), "broadcast"),
    "all_gather_into_tensor": (("AllGather",), "allgather"),
    # equal-sized outputs: one ncclAllGather into a flat buffer, copied out
    "all_gather": (("AllGather",), "allgather"),
    "reduce_scatter_tensor": (("ReduceScatter",), "reduce_scatter"),
    "reduce_scatter": (("ReduceScatter",), "reduce_scatter"),
    "all_to_all_single": (("AlltoAll", "AlltoAllSendRecv"), "alltoall"),
    "all_to_all": (("AlltoAllSendRecv",), "alltoall"),
    "gather": (("GatherSendRecv",), "gather"),
    "scatter": (("ScatterSendRecv",), "scatter"),
    "send_recv_ring": (("SendRecvRing",), "sendrecv"),
}

UNREACHED = {
    "Gather": "ProcessGroupNCCL's gather is grouped ncclSend/ncclRecv in every torch release, never "
              "ncclGather: the gather cases reach GatherSendRecv",
    "Scatter": "ProcessGroupNCCL's scatter is grouped ncclSend/ncclRecv in every torch release, never "
               "ncclScatter: the scatter cases reach ScatterSendRecv",
    "SendRecvPairs": "torch.distributed has no call of its own for a pairwise exchange: batch_isend_irecv "
                     "with the partner as peer is the grouped ncclSend/ncclRecv of send_recv_ring",
}


class UnmappedCall(KeyError):
    """A case family with no CALLS row: the data would silently select nothing for it."""

    def __str__(self):
        return ("'%s' has no row in api_map.CALLS (the C++ rows it reaches and its c10d name): add one"
                % self.args[0])


def _row(family):
    try:
        return CALLS[family]
    except KeyError:
        raise UnmappedCall(family) from None


def nccl_rows(family):
    """The C++ collective-table rows a case family's torch call reaches; raises UnmappedCall."""
    return _row(family)[0]


def c10d_name(family):
    """c10d's ProcessGroup name of a case family's call; raises UnmappedCall."""
    return _row(family)[1]


def families_reaching(row):
    """The case families whose torch call reaches C++ row `row`, in CALLS order."""
    return [f for f, (rows, _) in CALLS.items() if row in rows]
