"""gpucts_python_suites: torch.distributed, DDP, FSDP2 and Lightning cases in one world.

  gpucts_python_suites [--world=1|<n>|sim<n>|gpus] [--backend=auto|nccl|gloo]
                       [--launcher=auto|torchrun|subprocess] [--filter=REGEX] [--deadline=S]
                       [--stall=S] [--case-timeout=S] [--junit-output=PATH] [--list] [--selfcheck]

Exit 0 when every case that ran passed, 1 on any failure, 77 when every case skipped, 2 on bad
input."""
import argparse
import os
import sys
import tempfile

from .inject import InjectError, plan_from_env

# A day, as the C++ torchrun launcher's --gpucts-deadline. Far beyond it torch's store takes no
# timeout (1e10 s: it times out at once; 1e15 s: a C int overflow), a traceback after start-up.
MAX_DEADLINE_S = 86400


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        print("gpucts_python_suites: " + message, file=sys.stderr)
        sys.exit(2)


def parse(argv):
    p = _Parser(prog="gpucts_python_suites", description=__doc__.splitlines()[0])
    p.add_argument("--world", default="1", help="1, <n> ranks on this host, sim<n> simulated hosts on one GPU, "
                   "or gpus (one process per visible GPU); default 1")
    p.add_argument("--backend", default="auto", choices=["auto", "nccl", "gloo"])
    p.add_argument("--launcher", default="auto", choices=["auto", "torchrun", "subprocess"])
    p.add_argument("--filter", default=None, help="regex searched in Suite/name")
    p.add_argument("--deadline", type=float, default=None,
                   help="seconds the whole world may take, at most a day (default 540, or GPUCTS_PY_DEADLINE)")
    p.add_argument("--junit-output", default="", help="write JUnit XML (GoogleTest's layout) here")
    p.add_argument("--list", action="store_true", help="print the case names of the world and exit")
    p.add_argument("--selfcheck", action="store_true", help="check this package's own results on the CPU")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--workdir", default="", help=argparse.SUPPRESS)
    p.add_argument("--deadline-at", type=float, default=0.0, help=argparse.SUPPRESS)
    p.add_argument("--first-case", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--case-timeout", type=float, default=180.0,
                   help="seconds a case may run with no rank coming out of it (a collective that hangs "
                   "everywhere); then the world is ended and a new one runs the cases after it. 0: wait "
                   "for the deadline (default 180)")
    p.add_argument("--stall", type=float, default=60.0,
                   help="seconds a rank may stay in a case that another rank left (it raised before a "
                   "collective its peers wait in); then the world is ended and a new one runs the cases "
                   "after it. 0: wait for the deadline (default 60)")
    args = p.parse_args(argv)
    if args.deadline is None:
        text = os.environ.get("GPUCTS_PY_DEADLINE", "540")
        try:
            args.deadline = float(text)
        except ValueError:
            p.error("GPUCTS_PY_DEADLINE=%s: expected seconds > 0" % text)
        if not 0 < args.deadline <= MAX_DEADLINE_S:
            p.error("GPUCTS_PY_DEADLINE=%s: expected seconds > 0 and at most %d" % (text, MAX_DEADLINE_S))
    if not 0 < args.deadline <= MAX_DEADLINE_S:
        p.error("--deadline=%s: expected seconds > 0 and at most %d" % (args.deadline, MAX_DEADLINE_S))
    if not (args.case_timeout == 0 or 1 <= args.case_timeout < float("inf")):
        p.error("--case-timeout=%s: expected 0 (off) or seconds >= 1" % args.case_timeout)
    if not (args.stall == 0 or 1 <= args.stall < float("inf")):
        # Below a second, ranks that merely post a case's result at different times would read as stalled.
        p.error("--stall=%s: expected 0 (off) or seconds >= 1" % args.stall)
    if args.filter:
        import re
        try:
            re.compile(args.filter)
        except re.error as e:
            p.error("--filter=%s: %s" % (args.filter, e))
    if not args.worker and not args.list:
        # Found now, not after every case ran: where the results go must take them.
        if args.junit_output:
            args.junit_output = os.path.abspath(args.junit_output)
            problem = output_file_problem(args.junit_output)
            if problem:
                p.error("--junit-output=%s: %s" % (args.junit_output, problem))
        jdir = os.environ.get("GPUCTS_JOURNAL_DIR", "")
        problem = folder_problem(os.path.abspath(jdir)) if jdir else ""
        if problem:
            p.error("GPUCTS_JOURNAL_DIR=%s: %s" % (jdir, problem))
    return args


def folder_problem(folder):
    """Why files cannot be written in `folder`, or "". A missing folder is judged by the nearest
    folder above it that exists (where it will be created). A file is created there exclusively and
    removed at once, which no permission bit or mount flag can fake; nothing stays behind."""
    there = folder
    while not os.path.lexists(there) and os.path.dirname(there) != there:
        there = os.path.dirname(there)
    if not os.path.isdir(there):
        return "%s is not a folder" % there
    try:
        fd, probe = tempfile.mkstemp(dir=there, prefix=".gpucts-probe-")
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        return "cannot write in %s: %s" % (there, e.strerror or e)
    return ""


def output_file_problem(path):
    """Why `path` cannot take an output file, or "". It is written as report.write_atomic writes:
    a file created exclusively beside it, renamed over it; never through a symbolic link."""
    if os.path.islink(path):
        return "is a symbolic link; not writing through it"
    if os.path.isdir(path):
        return "is a folder; expected the path of a file"
    if os.path.lexists(path) and not os.path.isfile(path):
        return "exists and is not a regular file"
    return folder_problem(os.path.dirname(path))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if args.worker:
        from .launch import die_with_parent
        die_with_parent()
    try:
        plan_from_env()
    except InjectError as e:
        print("gpucts_python_suites: %s" % e, file=sys.stderr)
        return 2
    from .launch import parse_world
    try:
        kind, n = parse_world(args.world)
    except ValueError as e:
        print("gpucts_python_suites: %s" % e, file=sys.stderr)
        return 2
    if args.worker:
        from .worker import worker_main
        return worker_main(args)
    if args.selfcheck:
        from .selfcheck import selfcheck_main
        return selfcheck_main(args)
    if args.list:
        from .runner import WorldInfo, plan
        size = n or 2
        for c in plan(WorldInfo(args.world, size, args.backend, args.launcher), args.filter):
            print(c.display)
        return 0
    from .launch import run_world
    passed = []
    if args.filter:
        passed.append("--filter=" + args.filter)
    if args.junit_output:
        passed.append("--junit-output=" + args.junit_output)
    return run_world(args, passed)


if __name__ == "__main__":
    sys.exit(main())
