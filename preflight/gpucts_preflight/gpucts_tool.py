"""The installed gpucts, where present: its probe for each rank and its check over all of them.

Found as GPUCTS_HOME/bin/gpucts, else `gpucts` on PATH. Its fingerprint is of a child process, so the
facts of THIS process (the libnccl mapped here, the GPU this rank uses, the launcher variables) are laid
over it; the check runs with --job-ranks, which adds the cross-rank placement, environment and interface
comparisons of gpucts' own preflight to the matrix's rules.
"""
import json
import os
import shutil
import subprocess
import tempfile


def find():
    home = os.environ.get("GPUCTS_HOME")
    if home:
        exe = os.path.join(home, "bin", "gpucts")
        return exe if os.access(exe, os.X_OK) else None
    return shutil.which("gpucts")


def home_problem():
    """Why GPUCTS_HOME gives no gpucts, or "": set, it is the only place looked in, so a wrong one
    would leave the report to the own probe without a word."""
    home = os.environ.get("GPUCTS_HOME")
    if home and not find():
        return "GPUCTS_HOME=%s holds no executable bin/gpucts" % home
    return ""


def fingerprint(exe, own, timeout_s):
    """gpucts fingerprint of this rank, with this process's own facts laid over it."""
    r = subprocess.run([exe, "fingerprint"], capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise RuntimeError("gpucts fingerprint exited %d: %s" % (r.returncode, r.stderr.strip()[:300]))
    fp = json.loads(r.stdout)
    for k in ("rank", "gpucts_rank", "nccl_loaded", "torch_error"):
        if k in own:
            fp[k] = own[k]
    if own.get("nccl"):
        fp.setdefault("nccl", {}).update({k: v for k, v in own["nccl"].items() if k in ("runtime", "library") and v})
    fp["probe"] = "gpucts fingerprint + gpucts_preflight"
    return fp


def check(exe, fps, timeout_s):
    """(findings as dicts, exit status) of `gpucts check --job-ranks --json` over the ranks in order."""
    d = tempfile.mkdtemp(prefix="gpucts-preflight-")
    try:
        args = [exe, "check", "--job-ranks", "--json"]
        for i, fp in enumerate(fps):
            p = os.path.join(d, "rank%d.json" % i)
            with open(p, "w") as f:
                json.dump(fp, f)
            args += ["--fingerprint", p]
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
        if r.returncode == 2:
            raise RuntimeError("gpucts check refused the fingerprints: " + r.stderr.strip()[:300])
        out = json.loads(r.stdout)
        return out.get("findings", []), r.returncode
    finally:
        shutil.rmtree(d, ignore_errors=True)
