#!/usr/bin/env python3
"""Snapshot of the torch wheels' own metadata, and of the NCCL wheels' releases, from PyPI.

  torch_wheels.py snapshot [--index URL]   writes snapshot/torch_wheels.json

For the newest patch release of every torch line on PyPI it reads the METADATA of the CPython
3.12 (else 3.10) manylinux x86_64 wheel, and of the aarch64 one where its arch list can be read: Requires-Python and the Requires-Dist pins of
nvidia-nccl-cu*, nvidia-cudnn-cu*, nvidia-cuda-runtime-cu* / cuda-toolkit; the arch list that
torch.cuda.get_arch_list() prints (the CUDA_ARCH_FLAGS literal of torch/lib/libtorch_python.so,
about 10 MB of range reads); and the CPython tags of the release's manylinux x86_64 wheels. It uses the PEP 658
`.metadata` file where the index serves one (`core-metadata` / `data-dist-info-metadata`), else
HTTP range requests on the wheel itself: the zip's end record, its central directory, then the
one METADATA member (a few MB instead of the wheel's ~900 MB). It also lists the releases of
nvidia-nccl-cu12 / nvidia-nccl-cu13 (version, first upload date) so that NCCL releases newer than
the git tags are known, and the newest release of torch, the NCCL and cuDNN wheels and cuda-toolkit
(`latest`), which generate.py compares with what the data reaches. Needs the network; `generate.py` then works offline.
"""
import io
import json
import re
import sys
import urllib.parse
import urllib.request
import zipfile

import common

DEFAULT_INDEX = "https://pypi.org"
# Old metadata writes "name (==1.2)", newer "name==1.2".
PINS = {
    "nccl": re.compile(r"^nvidia-nccl-cu(\d+)\s*\(?==\s*([\d.]+)"),
    "cudnn": re.compile(r"^nvidia-cudnn-cu(\d+)\s*\(?==\s*([\d.]+)"),
    "cuda_runtime": re.compile(r"^nvidia-cuda-runtime(?:-cu(\d+))?\s*\(?==\s*([\d.]+)"),
    "cuda_toolkit": re.compile(r"^cuda-toolkit(?:\[[^\]]*\])?()\s*\(?==\s*([\d.]+)"),
}
NCCL_PACKAGES = ["nvidia-nccl-cu12", "nvidia-nccl-cu13"]
# The newest final release of each source the data follows: generate.py warns where one is newer
# than what the data knows, so staleness shows before a user meets it.
LATEST_PACKAGES = ["torch", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13",
                   "cuda-toolkit"]
FINAL_RE = re.compile(r"^\d+(\.\d+)+(\.post\d+)?$")


def get(url, byte_range=None):
    """(body, headers) of `url`; an index that cannot be reached or refuses is one line, exit 2."""
    try:
        req = urllib.request.Request(url, headers={"User-Agent": "gpucts-matrix-tools"})
        if byte_range:
            req.add_header("Range", "bytes=%s" % byte_range)
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.read(), r.headers
    except ValueError as e:  # no URL at all ("pypi.org" without its scheme)
        common.fail(url, str(e))
    except OSError as e:  # URLError and HTTPError are OSErrors, as a timeout or a reset is
        common.fail(url, "cannot read (%s)" % (getattr(e, "reason", None) or e))


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file through HTTP range requests (what zipfile needs)."""

    def __init__(self, url):
        self.url, self.pos, self.fetched = url, 0, 0
        _, headers = get(url, "0-0")
        self.size = int(headers["Content-Range"].split("/")[1])

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def readinto(self, b):
        if self.pos >= self.size or not len(b):
            return 0
        end = min(self.size, self.pos + len(b)) - 1
        data, _ = get(self.url, "%d-%d" % (self.pos, end))
        b[:len(data)] = data
        self.pos += len(data)
        self.fetched += len(data)
        return len(data)


# torch.cuda.get_arch_list() returns CUDA_ARCH_FLAGS, a string literal compiled into
# libtorch_python.so (torch/csrc/cuda/Module.cpp): "sm_75 sm_80 ... compute_120".
# The literal ends with its NUL; what precedes it may be the unterminated tail of another datum
# (2.8.0: "...ipc_hsm_70 sm_75 ..."), so only the tokens themselves are matched.
ARCH_RE = re.compile(rb"((?:sm|compute)_\d+(?: (?:sm|compute)_\d+)+)\x00")
ARCH_MEMBER = re.compile(r"^torch/lib/libtorch_python\.so$")


def wheel_arch_list(url):
    """(arch list of torch.cuda.get_arch_list(), how it was read) from the wheel's libtorch_python.so."""
    f = RangeFile(url)
    with zipfile.ZipFile(io.BufferedReader(f, buffer_size=1 << 20)) as z:
        name = next((n for n in z.namelist() if ARCH_MEMBER.match(n)), None)
        if not name:
            return [], "no torch/lib/libtorch_python.so in the wheel"
        found = sorted({m.decode() for m in ARCH_RE.findall(z.read(name))})
    if len(found) != 1:
        return [], "%s: %d arch strings (%s)" % (name, len(found), " | ".join(found))
    return found[0].split(), "HTTP range read of the wheel's %s (%d of %d bytes): the CUDA_ARCH_FLAGS string" % (
        name, f.fetched, f.size)


def python_tags(files, machine="x86_64"):
    """The CPython tags ("cp310", "cp314t") of a release's manylinux wheels for `machine`."""
    tags = set()
    for f in files:
        m = re.match(r"^torch-[^-]+-(cp\d+t?)-(cp\d+t?)-manylinux[^-]*%s\.whl$" % machine, f["filename"])
        if m:
            tags.add(m.group(2))  # the ABI tag: cp314t is the free-threaded build
    return sorted(tags, key=lambda t: (int(re.sub(r"\D", "", t)), t))


def wheel_metadata(url, info):
    """(METADATA text, how it was read)."""
    if info.get("core-metadata") or info.get("data-dist-info-metadata") or info.get("core_metadata"):
        data, _ = get(url + ".metadata")
        return data.decode("utf-8"), "PEP 658 .whl.metadata"
    f = RangeFile(url)
    with zipfile.ZipFile(io.BufferedReader(f, buffer_size=1 << 20)) as z:
        name = next(n for n in z.namelist() if re.match(r"^[^/]+\.dist-info/METADATA$", n))
        text = z.read(name).decode("utf-8")
    return text, "HTTP range read of the wheel's %s (%d of %d bytes)" % (name, f.fetched, f.size)


def pick_wheel(files, machine="x86_64"):
    for py in ("cp312", "cp310", "cp39"):
        for f in files:
            n = f["filename"]
            if n.endswith(".whl") and "-%s-" % py in n and n.endswith(machine + ".whl") and "manylinux" in n:
                return f
    return None


def read_wheel(index, version, files, f, machine):
    """One wheel's entry: its pins, the arch list compiled into it, the CPython builds of `machine`."""
    url = urllib.parse.urljoin("%s/pypi/torch/json" % index, f["url"])
    sys.stderr.write("reading %s\n" % f["filename"])
    text, how = wheel_metadata(url, f)
    meta = parse_metadata(text)
    arch, arch_how = wheel_arch_list(url) if meta["pins"] else ([], "no CUDA libraries from PyPI: not read")
    return {"torch": version, "platform": machine, "wheel": f["filename"], "sha256": f["digests"]["sha256"],
            "uploaded": f["upload_time"][:10], "read": how, "arch_list": arch, "arch_read": arch_how,
            "python_tags": python_tags(files, machine), **meta}


def parse_metadata(text):
    out = {"requires_python": "", "pins": {}}
    for line in text.splitlines():
        if line.startswith("Requires-Python:"):
            out["requires_python"] = line.split(":", 1)[1].strip()
        if line.startswith("Requires-Dist:"):
            req = line.split(":", 1)[1].strip()
            for key, rx in PINS.items():
                m = rx.match(req)
                if m:
                    out["pins"][key] = {"requirement": req.split(";")[0].strip(), "cuda_major": m.group(1) or "",
                                        "version": m.group(2)}
        if not line.strip():
            break  # the body (long description) follows the first blank line
    return out


def project(index, name):
    url = "%s/pypi/%s/json" % (index, name)
    data, _ = get(url)
    try:
        proj = json.loads(data)
    except (ValueError, RecursionError) as e:  # a page of another kind of server than PyPI's
        common.fail(url, "not PyPI's JSON API (%s)" % (str(e).splitlines() or [type(e).__name__])[0])
    if not isinstance(proj, dict) or not isinstance(proj.get("releases"), dict):
        common.fail(url, "not PyPI's JSON API (no 'releases' object)")
    return proj


def snapshot(index):
    torch = project(index, "torch")
    by_line = {}
    for version, files in torch["releases"].items():
        if not re.match(r"^\d+\.\d+\.\d+$", version) or not files:
            continue
        line = ".".join(version.split(".")[:2])
        if line not in by_line or common.vkey(version) > common.vkey(by_line[line]):
            by_line[line] = version
    wheels, skipped = [], []
    for line in sorted(by_line, key=common.vkey):
        version = by_line[line]
        f = pick_wheel(torch["releases"][version])
        if not f or common.vkey(line) < common.vkey("1.12"):
            continue
        wheels.append(read_wheel(index, version, torch["releases"][version], f, "x86_64"))
        # The aarch64 wheels (CUDA builds of their own arch list) where the list can be read out of
        # the wheel; one that cannot is recorded with the reason, and gets no row.
        a = pick_wheel(torch["releases"][version], "aarch64")
        if a:
            w = read_wheel(index, version, torch["releases"][version], a, "aarch64")
            if w["pins"] and w["arch_list"]:
                wheels.append(w)
            else:
                skipped.append({"wheel": a["filename"], "why": w["arch_read"] if w["pins"] else "no CUDA pins"})
    nccl = []
    for pkg in NCCL_PACKAGES:
        for version, files in project(index, pkg)["releases"].items():
            if files and re.match(r"^\d+\.\d+\.\d+(\.post\d+)?$", version):
                nccl.append({"package": pkg, "version": version,
                             "uploaded": min(f["upload_time"][:10] for f in files)})
    nccl.sort(key=lambda r: (r["package"], common.vkey(r["version"].split(".post")[0]), r["version"]))
    return {"index": "https://pypi.org/pypi/<project>/json and the wheel files it names", "torch_wheels": wheels,
            "aarch64_not_read": skipped,
            "nccl_wheels": nccl, "latest": {pkg: newest_release(project(index, pkg)) for pkg in LATEST_PACKAGES}}


def newest_release(proj):
    """The newest final release with files (no rc, dev or local builds): {"version", "uploaded"}."""
    best = None
    for version, files in proj["releases"].items():
        if files and FINAL_RE.match(version) and (not best or common.vkey(version) > common.vkey(best)):
            best = version
    if not best:
        return {}
    return {"version": best, "uploaded": min(f["upload_time"][:10] for f in proj["releases"][best])}


def main(argv):
    common.snapshot_main(argv, __doc__, "torch_wheels.json",
                         [("--index", {"default": DEFAULT_INDEX, "help": "PyPI-compatible JSON API root (default %(default)s)"})],
                         lambda args: snapshot(args.index.rstrip("/")))


if __name__ == "__main__":
    main(sys.argv[1:])
