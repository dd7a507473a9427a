"""Payloads exact by construction: the input of rank r at index i is a small integer
f(seed, r, i) in the dtype, chosen so that sum, min, max (and avg and premul_sum by 2 where the
world size is a power of two) are exact in any reduction order for every dtype and for worlds of
up to 8 ranks. Expected values are computed in closed form in int64 and cast once.

One list of dtypes: name, torch attribute, payload modulus (values in [-m//2, m//2], or [0, m)
for unsigned types), floating?, the NCCL-only note."""
import math

# name, torch attribute, modulus, floating, signed
DTYPES = [
    ("f32", "float32", 129, True, True),
    ("f16", "float16", 65, True, True),       # sums of 8 ranks stay within 2048 (exact in f16)
    ("bf16", "bfloat16", 33, True, True),     # ... within 256 (exact in bf16)
    ("f64", "float64", 129, True, True),
    ("i32", "int32", 129, False, True),
    ("i64", "int64", 129, False, True),
    ("i8", "int8", 31, False, True),          # 8 * 15 < 128
    ("u8", "uint8", 31, False, False),        # 8 * 30 < 256
    ("f8e4m3", "float8_e4m3fn", 5, True, True),  # integers to 16 are exact
    ("f8e5m2", "float8_e5m2", 3, True, True),    # integers to 8 are exact
]
MAX_EXACT_WORLD = 8
PREMUL_FACTOR = 2.0
FP8 = ("f8e4m3", "f8e5m2")
FLOAT_OPS_CHECKED = ("sum", "avg", "min", "max", "premul_sum")


def dtype_entry(name):
    for row in DTYPES:
        if row[0] == name:
            return row
    raise KeyError(name)


def torch_dtype(name):
    """The torch dtype of a dtype name, or None when this torch has no such dtype."""
    import torch
    return getattr(torch, dtype_entry(name)[1], None)


def values(name, seed, rank, index):
    """f(seed, rank, index) as int64 for an int64 index tensor (any device)."""
    _, _, m, _, signed = dtype_entry(name)
    v = (index * 131 + (rank * 71 + seed * 17)) % m
    return v - m // 2 if signed else v


def payload(name, seed, rank, count, device, offset=0):
    import torch
    idx = torch.arange(offset, offset + count, dtype=torch.int64, device=device)
    return values(name, seed, rank, idx).to(torch_dtype(name))


def reduce_expected(name, op, seed, world, count, device, offset=0):
    """Expected result of an all-reduce (float64 for floating types, int64 else) over ranks 0..world-1."""
    import torch
    idx = torch.arange(offset, offset + count, dtype=torch.int64, device=device)
    per_rank = [values(name, seed, r, idx) for r in range(world)]
    if op in ("sum", "avg", "premul_sum"):
        acc = per_rank[0].clone()
        for v in per_rank[1:]:
            acc += v
        if op == "avg":
            return acc.to(torch.float64) / world
        if op == "premul_sum":
            return acc.to(torch.float64) * PREMUL_FACTOR
        return acc
    stacked = torch.stack(per_rank)
    if op == "min":
        return stacked.min(dim=0).values
    if op == "max":
        return stacked.max(dim=0).values
    raise ValueError("unknown reduction " + op)


def is_exact(op, world):
    """avg divides by the world size: exact only where that is a power of two (and <= 8)."""
    if world > MAX_EXACT_WORLD:
        return False
    if op == "avg":
        return world & (world - 1) == 0
    return True


def mismatch(got, expected, exact, rtol=0.0, atol=0.0):
    """None when got matches expected, else a one-line description: how many elements are wrong,
    the first index, expected and got there. Compares in float64 (int64 for integer results)."""
    import torch
    g = got.detach().to("cpu")
    e = expected.detach().to("cpu")
    if g.shape != e.shape:
        return "shape %s, expected %s" % (tuple(g.shape), tuple(e.shape))
    if g.is_floating_point() or e.is_floating_point():
        g64, e64 = g.to(torch.float64), e.to(torch.float64)
        if exact:
            bad = ~(g64 == e64)
        else:
            bad = ~((g64 - e64).abs() <= atol + rtol * e64.abs())
    else:
        g64, e64 = g.to(torch.int64), e.to(torch.int64)
        bad = g64 != e64
    n = int(bad.sum())
    if n == 0:
        return None
    k = int(bad.nonzero()[0][0])
    return "%d of %d element(s) wrong, first at index %d: expected %s got %s" % (
        n, bad.numel(), k, _fmt(e64[k]), _fmt(g64[k]))


def _fmt(x):
    v = x.item()
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v) or v != int(v)):
        return repr(v)
    return str(int(v))


def split_sizes(world, rank, base):
    """all_to_all_single's uneven splits: rank sends base + (rank + 2*peer) % 3 elements to peer."""
    return [base + (rank + 2 * p) % 3 for p in range(world)]
