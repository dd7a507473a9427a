"""python -m gpucts_preflight [--timeout S] [--warn-only] [--] [SCRIPT.py ARGS... | -m MODULE ARGS...]

Runs the preflight on this rank, then (when it passed, or with --warn-only) continues in this same
process into the training script or module with its arguments, as `python SCRIPT.py ARGS` or
`python -m MODULE ARGS` would. Without a target it only checks and exits with the report's status.
The `--` is optional: torchrun drops it from a module's arguments, so the first argument that is not
one of the options above (a script path, or -m) starts the target. The target's own exit status (its
sys.exit, or 1 for an exception it raised) is this process's: nothing here catches it. A script that
is not there or a module that is not found is bad input: one line, status 2.
"""
import importlib.util
import os
import runpy
import sys

from . import EXIT_BAD_INPUT, check

USAGE = __doc__.strip().splitlines()[0]


def missing_target(target, whole_name):
    """Why the target cannot start, or "". Before the preflight only a module's top-level package is
    looked up (finding it runs none of the job's code); after it the whole dotted name, whose parent
    packages that imports, as runpy would next."""
    if target[0] != "-m":
        try:
            os.stat(target[0])
        except OSError as e:
            return "can't open file %r: %s" % (target[0], e.strerror)
        return ""
    if not target[1] or target[1].startswith("."):
        return "-m %r: not an absolute module name" % target[1]
    name = target[1] if whole_name else target[1].partition(".")[0]
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError) as e:  # a parent that is a module, not a package
        return "-m %s: %s" % (target[1], e)
    return "" if found else "-m %s: no module named %r" % (target[1], name)


def main(argv):
    target = []
    it = iter(enumerate(argv))
    for i, a in it:
        if a == "--":
            target = argv[i + 1:]
            break
        if a == "-m" or not a.startswith("-"):
            target = argv[i:]
            break
        if a == "--timeout":
            v = next(it, (None, None))[1]
            if v is None:
                sys.stderr.write("gpucts preflight: --timeout needs a value\n" + USAGE + "\n")
                return EXIT_BAD_INPUT
            os.environ["GPUCTS_PREFLIGHT_TIMEOUT_S"] = v
        elif a == "--warn-only":
            os.environ["GPUCTS_PREFLIGHT_WARN_ONLY"] = "1"
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            sys.stderr.write("gpucts preflight: unknown option %s\n%s\n" % (a, USAGE))
            return EXIT_BAD_INPUT
    if target and target[0] == "-m" and len(target) < 2:
        sys.stderr.write("gpucts preflight: -m needs a module name\n" + USAGE + "\n")
        return EXIT_BAD_INPUT
    # Looked for before the preflight too: a typo in the script's name is one line at once, not a
    # traceback after a whole preflight.
    problem = target and missing_target(target, False)
    if problem:
        sys.stderr.write("gpucts preflight: %s\n" % problem)
        return EXIT_BAD_INPUT
    rep = check(exit=False)
    if rep is not None and rep.stop:
        return rep.status
    if not target:
        return rep.status if rep is not None else 0
    problem = missing_target(target, True)
    if problem:
        sys.stderr.write("gpucts preflight: %s\n" % problem)
        return EXIT_BAD_INPUT
    if target[0] == "-m":
        sys.argv = [target[1]] + target[2:]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = target
        sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
        runpy.run_path(target[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
