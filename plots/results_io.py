"""Shared helpers for the plot scripts: finding scheme variants in a results
directory, reading their CSVs strictly, and making sure we run in the
project's virtual environment (plots/setup_venv.sh) where matplotlib lives.

A results directory holds one subfolder per scheme variant (the folder name is
the scheme label on every plot), each with the CSVs the emulator writes:

    RESULTS_DIR/
      dctcp/flows.csv  dctcp/occupancy.csv
      droptail/flows.csv ...
"""
from __future__ import annotations

import csv
import math
import os
import sys
from pathlib import Path
from typing import Dict, List, Sequence

REPO = Path(__file__).resolve().parent.parent
VENV_PYTHON = REPO / ".venv" / "bin" / "python"


class DataError(Exception):
    """A results file is missing or malformed; the message names the file."""


def ensure_venv() -> None:
    """Re-run the current script under <repo>/.venv if matplotlib is missing here."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        # (the venv's python is a symlink to the base interpreter: compare prefixes, not binaries)
        in_venv = Path(sys.prefix).resolve() == VENV_PYTHON.parent.parent.resolve()
        if VENV_PYTHON.exists() and not in_venv and not os.environ.get("FLEXPLANE_PLOTS_REEXEC"):
            os.environ["FLEXPLANE_PLOTS_REEXEC"] = "1"
            os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), *sys.argv])
        sys.exit(f"{sys.argv[0]}: matplotlib is not installed for {sys.executable}; "
                 f"run plots/setup_venv.sh and use {VENV_PYTHON}")


def find_variants(results_dir: Path, csv_name: str) -> Dict[str, Path]:
    """scheme label -> path of its `csv_name`, for every subfolder that has one (sorted by name)."""
    if not results_dir.is_dir():
        raise DataError(f"{results_dir}: not a directory")
    found: Dict[str, Path] = {}
    for sub in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        f = sub / csv_name
        if f.is_file():
            found[sub.name] = f
    return found


def find_runs(results_dir: Path, csv_name: str) -> Dict[str, Path]:
    """Like find_variants, but a run folder that holds `csv_name` itself is one run
    (named after the folder)."""
    if (results_dir / csv_name).is_file():
        return {results_dir.name: results_dir / csv_name}
    return find_variants(results_dir, csv_name)


def parse_float(text: str) -> float:
    """Empty / 'nan' / 'NaN' -> nan; anything else must be a number."""
    t = text.strip()
    if t == "" or t.lower() == "nan":
        return math.nan
    return float(t)


def read_columns(path: Path, required: Sequence[str], numeric: Sequence[str]) -> Dict[str, List]:
    """Reads a CSV with a header into column lists. `numeric` columns are parsed
    as floats (empty or NaN -> nan); others stay strings. Raises DataError
    naming the file and line for missing columns or bad numbers."""
    with open(path, newline="") as fh:
        rows = csv.reader(fh)
        try:
            header = [h.strip() for h in next(rows)]
        except StopIteration:
            raise DataError(f"{path}: empty file (expected a header with {', '.join(required)})") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise DataError(f"{path}: missing column(s) {', '.join(missing)} (header: {','.join(header)})")
        index = {c: header.index(c) for c in required}
        cols: Dict[str, List] = {c: [] for c in required}
        for row in rows:
            line_no = rows.line_num
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) != len(header):
                raise DataError(f"{path}:{line_no}: {len(row)} fields, header has {len(header)}")
            for c, i in index.items():
                if c in numeric:
                    try:
                        cols[c].append(parse_float(row[i]))
                    except ValueError:
                        raise DataError(f"{path}:{line_no}: column {c}: '{row[i]}' is not a number") from None
                else:
                    cols[c].append(row[i].strip())
    return cols


def scheme_colors(schemes: Sequence[str]) -> Dict[str, str]:
    """A stable colour per scheme (matplotlib's tab10 cycle, in the given order)."""
    palette = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
               "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]
    return {s: palette[i % len(palette)] for i, s in enumerate(schemes)}
