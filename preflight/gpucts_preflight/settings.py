"""The preflight's own variables, each checked: a bad one is SettingsError with one line naming it,
which the caller turns into exit status 2 (never a traceback, never a silent default).

GPUCTS_PREFLIGHT_TIMEOUT_S   seconds a rank waits for the others (default 20; finite, above 0, at most a day)
GPUCTS_PREFLIGHT_PORT        the store's port (1 to 65535); else MASTER_PORT + GPUCTS_PREFLIGHT_PORT_OFFSET
GPUCTS_PREFLIGHT_PORT_OFFSET default 1000; where MASTER_PORT + offset is beyond 65535, MASTER_PORT - offset
GPUCTS_PREFLIGHT             0 skips the preflight, 1 (or unset) runs it
GPUCTS_PREFLIGHT_WARN_ONLY   1 reports problems without stopping the job, 0 (or unset) stops it
"""
import math
import os

from gpucts_common import launcher

DEFAULT_TIMEOUT_S = 20.0
MAX_TIMEOUT_S = 86400.0
DEFAULT_PORT_OFFSET = 1000


class SettingsError(ValueError):
    """A preflight variable that is not what it must be; str() is the one line to print."""


def _env(env):
    return os.environ if env is None else env


def timeout_s(env=None):
    v = _env(env).get("GPUCTS_PREFLIGHT_TIMEOUT_S")
    if v is None or v.strip() == "":
        return DEFAULT_TIMEOUT_S
    try:
        x = float(v)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and 0 < x <= MAX_TIMEOUT_S):
        raise SettingsError("GPUCTS_PREFLIGHT_TIMEOUT_S=%r is not a number of seconds above 0 and at most %g"
                            % (v, MAX_TIMEOUT_S))
    return x


def _integer(env, name, low, high):
    """The variable as an int in [low, high] (the launcher variables' rule and wording), None where unset."""
    try:
        return launcher.integer(env, name, low, high)
    except launcher.LauncherError as e:
        raise SettingsError(str(e)) from None


def store_port(master_port, env=None):
    """The port of the preflight's own store: GPUCTS_PREFLIGHT_PORT, else MASTER_PORT moved by the offset."""
    e = _env(env)
    port = _integer(e, "GPUCTS_PREFLIGHT_PORT", 1, 65535)
    if port is not None:
        return port
    off = _integer(e, "GPUCTS_PREFLIGHT_PORT_OFFSET", 1, 65534)
    off = DEFAULT_PORT_OFFSET if off is None else off
    if master_port + off <= 65535:
        return master_port + off
    if master_port - off >= 1:
        return master_port - off
    raise SettingsError("GPUCTS_PREFLIGHT_PORT_OFFSET=%d moves MASTER_PORT=%d out of the port range either way: "
                        "set GPUCTS_PREFLIGHT_PORT" % (off, master_port))


def _zero_or_one(name, env):
    v = (_env(env).get(name) or "").strip()
    if v not in ("", "0", "1"):
        raise SettingsError("%s=%r is neither 0 nor 1" % (name, v))
    return v


def switch(name, env=None):
    """A 0/1 variable: True for 1, False for 0 or unset."""
    return _zero_or_one(name, env) == "1"


def enabled(env=None):
    """GPUCTS_PREFLIGHT: the preflight runs unless it is 0."""
    return _zero_or_one("GPUCTS_PREFLIGHT", env) != "0"
