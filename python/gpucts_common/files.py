"""File names and output files, by the rules of gpucts' C++ results/ layer (file_names.hpp,
output_file.hpp): a string from outside (a test, host or case name) becomes one safe path component,
and a file is written whole or not at all, never through a symbolic link gpucts did not create."""
import errno
import os
import stat
import tempfile
from typing import Union

# The longest name safe_file_name() returns: room for ".rank123.jsonl" under NAME_MAX (255).
MAX_FILE_NAME_STEM = 200
_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_HASH_LENGTH = 17  # "~" and 16 hex digits


class OutputError(OSError):
    """A file that cannot be written where asked: "path: what went wrong"."""


def _utf8(text: Union[str, bytes]) -> bytes:
    # surrogateescape: a name read from the environment or a file may hold bytes that are not UTF-8.
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")


def stable_hash(text: Union[str, bytes]) -> int:
    """FNV-1a (64-bit prime) from 1469598103934665603: the same value on every machine, and the
    same as the C++ stable_hash(), which starts there too (not FNV's published offset basis)."""
    h = 1469598103934665603
    for b in _utf8(text):
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def safe_file_name(name: Union[str, bytes]) -> str:
    """`name` as one path component: bytes of [A-Za-z0-9_-] and '.' (not first) kept, every other
    byte as %XX, so two names never share a file and "gpucts_collectives_w2" stays as it is. Longer
    than MAX_FILE_NAME_STEM: the first bytes (never half an escape), "~" and stable_hash of the
    whole name in 16 hex digits. ValueError for an empty name (it names no file)."""
    data = _utf8(name)
    if not data:
        raise ValueError("an empty name cannot name a file")
    out = "".join(chr(b) if b in _KEPT or (b == 0x2E and i > 0) else "%%%02X" % b for i, b in enumerate(data))
    if len(out) > MAX_FILE_NAME_STEM:
        keep = MAX_FILE_NAME_STEM - _HASH_LENGTH
        if out[keep - 1] == "%":
            keep -= 1
        elif out[keep - 2] == "%":
            keep -= 2
        out = out[:keep] + "~%016x" % stable_hash(data)
    return out


def _checked_target(path: str):
    """(folder, file name) of `path`, where nothing but a regular file (or nothing) is."""
    if not path or "\0" in path:
        raise OutputError("an empty or NUL-containing output path")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OutputError("%s: is a symbolic link; not writing through it" % path)
        if stat.S_ISDIR(st.st_mode):
            raise OutputError("%s: is a directory" % path)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError("%s: exists and is not a regular file" % path)
    folder, base = os.path.split(path)
    if base in ("", ".", ".."):
        raise OutputError("%s: not a file name" % path)
    return folder, base


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str, text: Union[str, bytes]) -> None:
    """Writes `text` (str as UTF-8) to `path` whole or not at all: a fresh hidden file beside it,
    created exclusively (a file or link already there is never opened), flushed, renamed over
    `path`. Creates the folder. Refuses a `path` that is a symbolic link, a directory or another
    non-regular file. Raises OutputError naming the path and the cause."""
    folder, base = _checked_target(path)
    if folder:
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise OutputError("%s: cannot create its folder: %s" % (path, e.strerror or e)) from e
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        # mkstemp opens with O_CREAT|O_EXCL; 200 bytes of `base` keep the name within NAME_MAX.
        fd, tmp = tempfile.mkstemp(prefix="." + os.fsdecode(os.fsencode(base)[:200]) + ".", dir=folder or ".")
    except OSError as e:
        raise OutputError("%s: cannot create a file beside it: %s" % (path, e.strerror or e)) from e
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _file_mode())
            f.write(data)
            f.flush()
            try:
                os.fsync(f.fileno())
            except OSError as e:
                if e.errno != errno.EINVAL:  # a file system that cannot sync: as the C++ writer, go on
                    raise
        # rename(2) replaces the directory entry: a link placed at `path` since the check is
        # replaced, never followed.
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError("%s: write error: %s" % (path, e.strerror or e)) from e


def open_append(path: str):
    """`path` opened for appending UTF-8 text, created where absent; never through a symbolic
    link, and only onto a regular file (a FIFO there would block). Raises OutputError."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OutputError("%s: is a symbolic link; not writing through it" % path) from e
        raise OutputError("%s: cannot open for appending: %s" % (path, e.strerror or e)) from e
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OutputError("%s: exists and is not a regular file" % path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")
