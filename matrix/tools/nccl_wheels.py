#!/usr/bin/env python3
"""Snapshot of the NCCL_* variable names in NVIDIA's released libnccl.so.2, for the NCCL releases
that are on PyPI but have no git tag yet (so nccl_source.py cannot read their source).

  nccl_wheels.py snapshot --wheels DIR [--validate VERSION...]   writes snapshot/nccl_wheels.json
  nccl_wheels.py names LIB                                       prints the names of one library

DIR holds the nvidia-nccl-cu13 wheels, fetched with
  pip download --no-deps --only-binary=:all: --platform manylinux_2_27_x86_64 \\
      --python-version 3.12 nvidia-nccl-cu13==X -d DIR
(2.32 and later are manylinux_2_27 wheels, older ones manylinux_2_18). Which releases: every
nvidia-nccl-cu13 release of snapshot/torch_wheels.json newer than the newest tag of
snapshot/nccl_source.json, plus the tagged ones named by --validate.

NCCL declares a parameter as NCCL_PARAM(Name, "ENV", default), which passes "NCCL_" "ENV" to
ncclLoadParam; the compiler joins the two literals, so "NCCL_ENV" is a string of its own in the
library's .rodata, as are the literals given to getenv / ncclGetEnv. A message that names a
word ("not initialized via NCCL_CONFIG_INITIALIZER") holds it after a space. So a name is read as a
variable where it ends a string (a NUL follows) and the byte before it is no whitespace: a NUL, or
the last byte of the object the linker put before it (a double's exponent byte '?' or '@', the end
of a fixed-size char array stored without its NUL, "...virtual_switch_links" before
NCCL_IPC_USE_ABSTRACT_SOCKET). Every other NCCL_* word is kept apart as `in_text` (macro names,
flags and variables named inside messages).
--validate measures this rule on tagged releases against their source's variables (stored under
`validation`). The identifiers of the wheel's include/nccl.h are kept too (`api`).
Standard library only: zipfile, hashlib and the ELF section headers.
"""
import hashlib
import os
import re
import struct
import sys
import zipfile

import common

PACKAGE = "nvidia-nccl-cu13"
LIB = "nvidia/nccl/lib/libnccl.so.2"
HEADER = "nvidia/nccl/include/nccl.h"
MAX_LIBRARY_BYTES = 4 << 30  # a libnccl.so.2 of every GPU architecture is some hundred MB
NAME_RE = re.compile(rb"NCCL_[A-Z0-9_]*[A-Z0-9](?=\0)")
WORD_RE = re.compile(rb"NCCL_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])")
API_RE = re.compile(r"\b(nccl[A-Z][A-Za-z0-9_]*|NCCL_[A-Z0-9_]+)\b")


class BadElf(Exception):
    pass


def section(elf, wanted):
    """The bytes of the section named `wanted` of a 64-bit little-endian ELF file."""
    if len(elf) < 64 or elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise BadElf("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    if shentsize < 64 or shstrndx >= shnum or shoff + shnum * shentsize > len(elf):
        raise BadElf("section headers outside the file's %d bytes" % len(elf))
    heads = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at, names_size = heads[shstrndx][4], heads[shstrndx][5]
    for name, typ, _, _, offset, size in heads:
        end = elf.find(b"\0", names_at + name, names_at + names_size)
        if end < 0:
            raise BadElf("section name %d outside the name table" % name)
        if elf[names_at + name:end] == wanted.encode():
            if typ == 8 or offset + size > len(elf):  # 8: NOBITS
                raise BadElf("section %s has no bytes in the file" % wanted)
            return elf[offset:offset + size]
    raise BadElf("no %s section" % wanted)


def rodata_names(elf):
    """(variables, in_text): sorted NCCL_* names of .rodata read as variables, and the other words."""
    ro = section(elf, ".rodata")
    variables, words = set(), set()
    for m in NAME_RE.finditer(ro):
        if not m.start() or ro[m.start() - 1] not in b" \t\n":
            variables.add(m.group().decode())
    for m in WORD_RE.finditer(ro):
        words.add(m.group().decode())
    return sorted(variables), sorted(words - variables)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_wheel(path):
    """What one wheel says: its name, sha256, the names of its libnccl.so.2 and its nccl.h identifiers."""
    try:
        with zipfile.ZipFile(path) as z:
            elf, header = z.read(LIB), z.read(HEADER).decode("utf-8", errors="replace")
    except (OSError, zipfile.BadZipFile, KeyError) as e:
        common.fail(path, "cannot read %s / %s from the wheel: %s" % (LIB, HEADER, e))
    try:
        variables, in_text = rodata_names(elf)
    except BadElf as e:
        common.fail(path + ":" + LIB, str(e))
    return {"wheel": os.path.basename(path), "sha256": sha256(path), "member": LIB, "variables": variables,
            "in_text": in_text, "api": sorted(set(API_RE.findall(header)))}


def find_wheel(folder, version):
    prefix = "%s-%s-" % (PACKAGE.replace("-", "_"), version)
    found = sorted(f for f in os.listdir(folder) if f.startswith(prefix) and "x86_64" in f and f.endswith(".whl"))
    if not found:
        common.fail(folder, "no %s %s x86_64 wheel: pip download --no-deps --only-binary=:all: --platform "
                    "manylinux_2_27_x86_64 --python-version 3.12 %s==%s -d %s" % (PACKAGE, version, PACKAGE, version, folder))
    return os.path.join(folder, found[-1])


def at(fact, version):
    return any(common.vkey(a) <= common.vkey(version) <= common.vkey(b) for a, b in fact["ranges"])


def validate(src, version, wheel):
    """The rule against a tagged release: the variables its source reads in libnccl (src/) vs the binary."""
    tag = {r["version"]: r["tag"] for r in src["releases"]}.get(version)
    if not tag:
        common.fail("--validate " + version, "no release tag %s in snapshot/nccl_source.json" % version)
    env = src["env"]
    in_lib = {n for n, f in env.items() if at(f, version) and f["file"].startswith("src/")}
    elsewhere = {n for n, f in env.items() if at(f, version) and not f["file"].startswith("src/")}
    found = set(wheel["variables"])
    ever = set(env) | set(src["documented"])
    return {"version": version, "tag": tag, "wheel": wheel["wheel"], "sha256": wheel["sha256"],
            "source_variables_in_libnccl": len(in_lib), "agree": len(in_lib & found),
            "missed": sorted(in_lib - found), "missed_in_text": sorted((in_lib - found) & set(wheel["in_text"])),
            "false_positives": sorted(found - in_lib), "plugin_variables": len(elsewhere),
            "plugin_variables_found": sorted(elsewhere & found),
            "in_text_never_a_variable": sorted(set(wheel["in_text"]) - ever),
            "in_text_variables": sorted(set(wheel["in_text"]) & in_lib),
            "api_agree": len(set(wheel["api"]) & set(n for n, f in src["api"].items() if at(f, version))),
            "api_source": len([n for n, f in src["api"].items() if at(f, version)]),
            "api_wheel": len(wheel["api"])}


def snapshot(args):
    read = {"releases": list, **({"env": dict, "documented": dict, "api": dict} if args.validate else {})}
    src = common.load_snapshot("nccl_source.json", read, ("releases",))
    pypi = common.load_snapshot("torch_wheels.json", {"nccl_wheels": list})
    newest_tag = src["releases"][-1]["version"]
    untagged = sorted({w["version"] for w in pypi["nccl_wheels"] if w["package"] == PACKAGE and
                       common.vkey(w["version"]) > common.vkey(newest_tag)}, key=common.vkey)
    if not os.path.isdir(args.wheels):
        common.fail(args.wheels, "not a directory")
    out = {"package": PACKAGE, "member": LIB, "newest_tag": newest_tag, "releases": [], "validation": []}
    for version in untagged:
        sys.stderr.write("reading %s %s\n" % (PACKAGE, version))
        w = read_wheel(find_wheel(args.wheels, version))
        w["version"] = version
        out["releases"].append(w)
    for version in sorted(set(args.validate or []), key=common.vkey):
        sys.stderr.write("validating on %s %s\n" % (PACKAGE, version))
        out["validation"].append(validate(src, version, read_wheel(find_wheel(args.wheels, version))))
    return out


def main(argv):
    if argv[:1] == ["names"]:
        ap = common.OneLineParser(prog="nccl_wheels.py names")
        ap.add_argument("lib", help="a libnccl.so.2")
        lib = ap.parse_args(argv[1:]).lib
        try:
            variables, in_text = rodata_names(common.read_input(lib, MAX_LIBRARY_BYTES))
        except BadElf as e:
            common.fail(lib, str(e))
        for n in variables:
            print(n)
        for n in in_text:
            print(n + " (in text)")
        return
    common.snapshot_main(argv, __doc__, "nccl_wheels.json",
                         [("--wheels", {"required": True, "help": "folder of the downloaded nvidia-nccl-cu13 wheels"}),
                          ("--validate", {"nargs": "*", "metavar": "VERSION",
                                          "help": "tagged releases to measure the rule on"})],
                         snapshot)


if __name__ == "__main__":
    main(sys.argv[1:])
