"""Bad input to `scripts/lab`, one row per input (issue 21): names that would
become paths outside the results folder, files that are not UTF-8 text,
bypass rules and cdf files that only the run used to refuse, binaries that
cannot run, results folders that cannot or must not be written, bad prefixes.

Every row: the exit status (2), exactly one line on stderr, `error: ...`
naming the field or option and the thing, no traceback, no raw control
byte. `run` rows also show that nothing was created or deleted: the test
folder's tree is the same before and after, and no namespace exists."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from lab_cli import LAB, namespaces

GOOD = """\
topology: {kind: single_rack, endpoints: 3}
network: {link_rate_gbps: 0.05}
workload: {kind: bulk, senders: [1, 2], receiver: 0}
duration_s: 2
"""


def with_(extra: str) -> str:
    return GOOD + extra


@dataclass
class Row:
    id: str
    args: list[str]              # {exp} = the experiment file, {tmp} = the test's folder
    message: str                 # must appear in the one error line ({tmp} expanded)
    exp: str | bytes = GOOD
    setup: Callable[[Path, Path], None] | None = None   # (test folder, binaries)
    code: int = 2
    bins: bool = True            # append --bin-dir <the built binaries>
    also: list[str] = field(default_factory=list)   # more fragments of the same line


def mkfile(rel: str, data: str = "x\n", mode: int = 0o644) -> Callable[[Path, Path], None]:
    def f(tmp: Path, bins: Path) -> None:
        p = tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(data)
        p.chmod(mode)
    return f


def mkdir(rel: str) -> Callable[[Path, Path], None]:
    return lambda tmp, bins: (tmp / rel).mkdir(parents=True)


def steps(*fs: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    def f(tmp: Path, bins: Path) -> None:
        for g in fs:
            g(tmp, bins)
    return f


def bin_dir_with(emulator: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    """{tmp}/bins: the real endpoint and workload programs, and an emulator made by `emulator`."""
    def f(tmp: Path, bins: Path) -> None:
        (tmp / "bins").mkdir()
        for prog in ("flexplane-nfq-endpoint", "flexplane-workload"):
            (tmp / "bins" / prog).symlink_to(bins / prog)
        emulator(tmp, bins)
    return f


def lab_results(rel: str) -> Callable[[Path, Path], None]:
    """A results folder of an earlier run (its marker file)."""
    return mkfile(f"{rel}/experiment.yaml", "# flexplane lab experiment\n")


def link(rel: str, target: str) -> Callable[[Path, Path], None]:
    def f(tmp: Path, bins: Path) -> None:
        (tmp / target).mkdir(parents=True, exist_ok=True)
        (tmp / rel).symlink_to(tmp / target)
    return f


CHECK = ["check", "{exp}"]
RUN = ["run", "{exp}", "--prefix", "fplbadin"]
CDF = with_("").replace("kind: bulk, senders: [1, 2], receiver: 0",
                        "kind: rpc, clients: [0], servers: [1], load: 0.1, sizes: 'cdf:{tmp}/%s'")

ROWS = [
    # --- names that become paths (item 1) ---
    Row("variant-dotdot", CHECK, "variants: '..': bad variant name", with_("variants: {'..': {}}\n")),
    Row("variant-dot", CHECK, "variants: '.': bad variant name", with_("variants: {'.': {}}\n")),
    Row("variant-slash", CHECK, "variants: 'a/../../b': bad variant name", with_("variants: {'a/../../b': {}}\n")),
    Row("variant-file-name", CHECK, "variants: 'runs.csv': bad variant name", with_("variants: {runs.csv: {}}\n")),
    Row("variant-hidden", CHECK, "variants: '-x': bad variant name", with_("variants: {'-x': {}}\n")),
    Row("variant-number", CHECK, "variants: '7': bad variant name", with_("variants: {7: {}}\n")),
    Row("variant-escape", CHECK, "variants: '\\x1b[31mred': bad variant name", with_('variants: {"\\e[31mred": {}}\n')),
    Row("unknown-key-escape", CHECK, "\\x1b]0;pwned\\x07: unknown key", with_('"\\e]0;pwned\\a": 1\n')),
    Row("prefix-traversal", RUN[:3] + ["../x"], "--prefix '../x': bad prefix"),
    Row("prefix-too-long", RUN[:3] + ["abcdefghijkl"], "--prefix 'abcdefghijkl': bad prefix"),
    Row("cleanup-empty-prefix", ["cleanup", "--prefix", ""], "--prefix '': bad prefix", bins=False),
    Row("cleanup-glob-prefix", ["cleanup", "--prefix", "*"], "--prefix '*': bad prefix", bins=False),
    # the case: a variant `..` with --out X/out must not touch X/r0
    Row("run-variant-dotdot", RUN + ["--out", "{tmp}/X/out"], "variants: '..': bad variant name",
        with_("variants: {'..': {}}\n"), setup=mkfile("X/r0/data", "precious\n")),
    Row("run-variant-folder-leads-out", RUN + ["--out", "{tmp}/res"], "outside the results folder",
        with_("variants: {first: {}}\n"), setup=steps(lab_results("res"), link("res/first", "elsewhere"))),
    Row("run-variant-folder-is-a-file", RUN + ["--out", "{tmp}/res"], "{tmp}/res/first exists and is not a folder",
        with_("variants: {first: {}}\n"), setup=steps(lab_results("res"), mkfile("res/first"))),
    # --- the results folder (item 5) ---
    Row("out-empty", RUN + ["--out", ""], "--out '': empty folder name"),
    Row("out-is-a-file", RUN + ["--out", "{tmp}/afile"], "--out '{tmp}/afile': exists and is not a folder",
        setup=mkfile("afile")),
    Row("out-under-a-file", RUN + ["--out", "{tmp}/afile/sub"], "--out '{tmp}/afile/sub': cannot create it: ",
        setup=mkfile("afile"), also=["afile is not a folder"]),
    Row("out-unwritable", RUN + ["--out", "/sys/flexlab-test/out"], "--out '/sys/flexlab-test/out': cannot create it"),
    Row("out-not-a-results-folder", RUN + ["--out", "{tmp}/home"], "not a lab results folder (no experiment.yaml)",
        setup=mkfile("home/notes.txt")),
    Row("output-dir-nul", CHECK, "output.dir: contains a NUL byte", with_('output: {dir: "a\\0b"}\n')),
    Row("unknown-variant-option", RUN + ["--variant", "first", "--variant", "frist"],
        "--variant 'frist': ", with_("variants: {first: {}}\n"), also=["has no such variant (it has first)"]),
    Row("plot-a-file", ["plot", "{exp}"], "{exp}: not a folder (plot takes a lab results folder)", bins=False),
    Row("plot-missing", ["plot", "{tmp}/none"], "{tmp}/none: not a folder", bins=False),
    # --- what only the run used to refuse (item 3) ---
    Row("bypass-port-0", CHECK, "lab.bypass: [0] 'tcp:0': expected tcp:PORT or udp:PORT", with_("lab: {bypass: ['tcp:0']}\n")),
    Row("bypass-port-on-icmp", CHECK, "lab.bypass: [1] 'icmp:5': expected tcp:PORT", with_("lab: {bypass: [udp, 'icmp:5']}\n")),
    Row("bypass-protocol", CHECK, "lab.bypass: [0] 'ftp': unknown protocol", with_("lab: {bypass: [ftp]}\n")),
    Row("bypass-prefix-length", CHECK, "lab.bypass: [0] '10.0.0.0/33': prefix length 33 too long",
        with_("lab: {bypass: ['10.0.0.0/33']}\n")),
    Row("bypass-address", CHECK, "lab.bypass: [0] '10.0.0.256/8': expected ADDRESS/LENGTH",
        with_("lab: {bypass: ['10.0.0.256/8']}\n")),
    Row("cdf-missing", CHECK, "workload.sizes: CDF file '{tmp}/none.cdf': no such file", CDF % "none.cdf"),
    Row("cdf-folder", CHECK, "workload.sizes: CDF file '{tmp}/d.cdf': not a regular file", CDF % "d.cdf",
        setup=mkdir("d.cdf")),
    Row("cdf-content", CHECK, "workload.sizes: CDF file {tmp}/bad.cdf:2: size_packets 'ten' is not a number",
        CDF % "bad.cdf", setup=mkfile("bad.cdf", "1 0.5\nten 1\n")),
    Row("run-cdf-content", RUN + ["--out", "{tmp}/res"], "workload.sizes: CDF file {tmp}/bad.cdf:1:",
        CDF % "bad.cdf", setup=mkfile("bad.cdf", "\x00\x01garbage\n")),
    # --- experiment files that are not UTF-8 text (item 5) ---
    Row("file-binary", CHECK, "{exp}:1: contains a NUL byte (a binary file?)", b"\x7fELF\x02\x01\x01\x00\x00\x00"),
    Row("file-jpeg", CHECK, "{exp}:1: not UTF-8 text (byte 0xff at offset 0)", b"\xff\xd8\xff\xe0\x00\x10JFIF"),
    Row("file-utf16", CHECK, "{exp}: looks like UTF-16 text; save it as UTF-8", GOOD.encode("utf-16")),
    Row("file-utf16le-no-bom", CHECK, "{exp}: looks like UTF-16 text", GOOD.encode("utf-16-le")),
    Row("file-latin1", CHECK, "{exp}:2: not UTF-8 text (byte 0xe9 at offset", ("x: 1\ndescription: caf\xe9\n").encode("latin-1")),
    Row("yaml-syntax", CHECK, "{exp}:6:1: not valid YAML: expected ',' or ']'", with_("lab: {bypass: [udp\n")),
    Row("duplicate-key", CHECK, "{exp}:5:1: not valid YAML: duplicate key 'duration_s' (first at line 4, column 1)",
        with_("duration_s: 20\n")),
    Row("duplicate-variant", CHECK, "not valid YAML: duplicate key 'a'", with_("variants:\n  a: {}\n  a: {seed: 2}\n")),
    Row("file-is-a-folder", ["check", "{tmp}"], "{tmp}: is a folder, not an experiment file"),
    Row("run-file-utf16", RUN + ["--out", "{tmp}/res"], "{exp}: looks like UTF-16 text", GOOD.encode("utf-16")),
    # --- binaries (item 5) ---
    Row("bin-dir-missing", CHECK + ["--bin-dir", "{tmp}/nowhere"], "--bin-dir {tmp}/nowhere: not a folder", bins=False),
    Row("bin-not-executable", CHECK + ["--bin-dir", "{tmp}/bins"], "{tmp}/bins/flexplane-emulator: not an executable file",
        bins=False, setup=bin_dir_with(mkfile("bins/flexplane-emulator", "#!/bin/sh\n", 0o644))),
    Row("bin-not-a-program", CHECK + ["--bin-dir", "{tmp}/bins"], "{tmp}/bins/flexplane-emulator: cannot run it",
        bins=False, setup=bin_dir_with(mkfile("bins/flexplane-emulator", "not a program\n", 0o755)),
        also=["Exec format error"]),
    Row("run-bin-not-executable", RUN + ["--out", "{tmp}/res", "--bin-dir", "{tmp}/bins"],
        "{tmp}/bins/flexplane-emulator: not an executable file",
        bins=False, setup=bin_dir_with(mkfile("bins/flexplane-emulator", "#!/bin/sh\n", 0o644))),
]


def tree(root: Path) -> list[str]:
    """Every path under root with its type and, for files, content (what 'nothing changed' compares)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in sorted(dirnames + filenames):
            p = Path(dirpath) / n
            kind = "link" if p.is_symlink() else "dir" if p.is_dir() else "file"
            out.append(f"{kind} {p.relative_to(root)} {p.read_bytes()!r}" if kind == "file" else f"{kind} {p.relative_to(root)}")
    return sorted(out)


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_bad_input(tmp_path, lab_bins, row: Row):
    exp = tmp_path / "exp.yaml"
    text = row.exp.replace("{tmp}", str(tmp_path)) if isinstance(row.exp, str) else row.exp
    exp.write_bytes(text.encode() if isinstance(text, str) else text)
    if row.setup:
        row.setup(tmp_path, lab_bins)
    args = [a.replace("{exp}", str(exp)).replace("{tmp}", str(tmp_path)) for a in row.args]
    if row.bins and args[0] in ("run", "check"):
        args += ["--bin-dir", str(lab_bins)]
    before = tree(tmp_path)
    p = subprocess.run([str(LAB), *args], capture_output=True, text=True, errors="strict", timeout=120)
    assert p.returncode == row.code, p.stdout + p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    for frag in [row.message, *row.also]:
        assert frag.replace("{exp}", str(exp)).replace("{tmp}", str(tmp_path)) in lines[0], lines[0]
    assert not any(ord(c) < 0x20 for c in lines[0]), repr(lines[0])  # control bytes escaped
    if args[0] == "run":
        assert tree(tmp_path) == before  # nothing created, moved or deleted
        assert namespaces("fplbadin") == []


def test_binary_file_yields_no_raw_bytes(tmp_path, lab_bins):
    """A file of random bytes (neither text nor UTF-16): one message, exit 2."""
    exp = tmp_path / "random.yaml"
    exp.write_bytes(bytes(range(256)) * 4)
    p = subprocess.run([str(LAB), "check", str(exp), "--bin-dir", str(lab_bins)], capture_output=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith(b"error: ") and p.stderr.count(b"\n") == 1, p.stderr
    assert all(b >= 0x20 or b == 0x0a for b in p.stderr), p.stderr


CHECK_ROWS = [r for r in ROWS if r.args == CHECK]


@pytest.mark.parametrize("row", CHECK_ROWS, ids=[r.id for r in CHECK_ROWS])
def test_run_refuses_what_check_refuses(tmp_path, lab_bins, row: Row):
    """check and run share one validation path: run gives the same one-line
    error as check for every experiment-file row above, and creates nothing."""
    exp = tmp_path / "exp.yaml"
    text = row.exp.replace("{tmp}", str(tmp_path)) if isinstance(row.exp, str) else row.exp
    exp.write_bytes(text.encode() if isinstance(text, str) else text)
    if row.setup:
        row.setup(tmp_path, lab_bins)
    bins = ["--bin-dir", str(lab_bins)]
    c = subprocess.run([str(LAB), "check", str(exp), *bins], capture_output=True, text=True, timeout=120)
    before = tree(tmp_path)
    r = subprocess.run([str(LAB), "run", str(exp), "--out", str(tmp_path / "res"), "--prefix", "fplbadin", *bins],
                       capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (c.returncode, c.stderr) == (2, c.stderr)
    assert tree(tmp_path) == before
    assert namespaces("fplbadin") == []
