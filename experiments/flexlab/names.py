"""Names that become paths, and text that reaches the terminal.

Every name the lab turns into a file, folder, namespace or interface name is
checked against a strict pattern when the experiment file or the command line
is read (so `check` refuses it as `run` does), and every folder the runner
writes or moves is proven to lie inside the results folder (`inside`). Text
from input files or programs is escaped before it is printed (`printable`).
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from flexlab.errors import LabError, SpecError

# A variant is a folder under the results folder: no '.', so never '.', '..'
# or the name of a file the runner writes there (runs.csv, *.png); it starts
# with a letter or digit (never '-', never hidden).
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
VARIANT_RULE = "1-64 letters, digits, '_' or '-', starting with a letter or digit"

# The prefix names namespaces (<prefix>-fab), interfaces (qemu: <prefix>t<i>,
# at most 15 characters), scratch folders ($TMPDIR/flexlab-<prefix>-*) and the
# emulator's DPDK runtime folder (/run/dpdk/<prefix>).
PREFIX_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{0,10}")
PREFIX_RULE = "1-11 letters or digits, starting with a letter"


def printable(text: object) -> str:
    """`text` with control and format characters escaped (\\x1b, \\u202e):
    a name or a program's log line cannot drive the terminal. Newlines and
    tabs stay (messages span lines)."""
    out = []
    for ch in str(text):
        if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    return "".join(out)


def check_variant_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not VARIANT_NAME.fullmatch(name):
        raise SpecError(f"{where}variants: '{name}': bad variant name (it names a folder: {VARIANT_RULE})")
    return name


def check_prefix(prefix: str, option: str = "--prefix") -> str:
    if not PREFIX_NAME.fullmatch(prefix):
        raise SpecError(f"{option} '{prefix}': bad prefix (it names namespaces, interfaces and folders: "
                        f"{PREFIX_RULE})")
    return prefix


def inside(root: Path, path: Path) -> Path:
    """`path` resolved (symbolic links followed), proven to lie strictly
    inside the resolved `root`; LabError otherwise. Every folder the runner
    writes or moves goes through here."""
    r = root.resolve()
    p = path.resolve()
    if p == r or not p.is_relative_to(r):
        raise LabError(f"{path}: resolves to {p}, outside the results folder {r}: refusing to write there")
    return p
