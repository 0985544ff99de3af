"""The results folder of one `lab run` (docs/lab.md, "Outputs").

Checked before anything is created (`check`: a bad --out is exit 2 with
nothing started); created once every other check has passed (`create`).
The runner deletes nothing here: a run folder left by an earlier invocation
(`<variant>/r<k>`) is moved aside to `<variant>/_previous/r<k>-<UTC time>`
(docs/design.md, "Lab runner: bad input"), and every folder written or moved
is proven to lie inside the results folder (names.inside).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from flexlab.errors import LabError, SpecError
from flexlab.names import inside
from flexlab.spec import RunSpec

MARKER = "experiment.yaml"  # written first into every results folder
PREVIOUS = "_previous"      # no variant can be named so (names.VARIANT_NAME)


class OutFolder:
    def __init__(self, path: Path, label: str, runs: list[RunSpec]) -> None:
        self.path = path
        self.label = label          # how the user named it: "--out 'X'" or "FILE: output.dir 'X'"
        self.runs = runs
        self.moved: list[tuple[Path, Path]] = []

    @classmethod
    def check(cls, given: str, label: str, runs: list[RunSpec]) -> "OutFolder":
        """Validates the folder for these runs without creating anything."""
        if given == "":
            raise SpecError(f"{label}: empty folder name (leave it out for the default)")
        if "\0" in given:
            raise SpecError(f"{label}: contains a NUL byte")
        out = cls(Path(given), label, runs)
        p = out.path
        if p.exists() or p.is_symlink():
            if not p.is_dir():
                raise SpecError(f"{label}: exists and is not a folder")
            if any(p.iterdir()) and not (p / MARKER).is_file():
                raise SpecError(f"{label}: exists, is not empty and is not a lab results folder (no {MARKER}); "
                                "choose a new or empty folder")
            if not os.access(p, os.W_OK | os.X_OK):
                raise SpecError(f"{label}: folder not writable")
            for d in out._existing_run_paths():
                out._inside(d)
        else:
            up = p.absolute().parent
            while not (up.exists() or up.is_symlink()):
                up = up.parent
            if not up.is_dir():
                raise SpecError(f"{label}: cannot create it: {up} is not a folder")
            if not os.access(up, os.W_OK | os.X_OK):
                raise SpecError(f"{label}: cannot create it: {up} is not writable")
        return out

    def _inside(self, d: Path) -> Path:
        try:
            return inside(self.path, d)
        except LabError as e:
            raise SpecError(f"{self.label}: {e}") from None

    def _existing_run_paths(self) -> list[Path]:
        """What this invocation will write or move: each variant folder, its
        _previous folder, and run folders that exist already."""
        found = []
        for v in dict.fromkeys(r.variant.name for r in self.runs):
            vdir = self.path / v
            if vdir.exists() or vdir.is_symlink():
                if not vdir.is_dir():
                    raise SpecError(f"{self.label}: {vdir} exists and is not a folder")
                found.append(vdir)
                if (vdir / PREVIOUS).exists() and not (vdir / PREVIOUS).is_dir():
                    raise SpecError(f"{self.label}: {vdir / PREVIOUS} exists and is not a folder")
        for r in self.runs:
            rdir = self.path / r.variant.name / f"r{r.repetition}"
            if rdir.exists() or rdir.is_symlink():
                found.append(rdir.parent / PREVIOUS)
        return found

    def create(self) -> None:
        """Creates the folder and moves earlier run folders of this matrix aside."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SpecError(f"{self.label}: cannot create it: {e.strerror}") from None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        for r in self.runs:
            rdir = self.path / r.variant.name / f"r{r.repetition}"
            if not (rdir.exists() or rdir.is_symlink()):
                continue
            prev = self._inside(rdir.parent / PREVIOUS)
            prev.mkdir(exist_ok=True)
            dest = prev / f"r{r.repetition}-{stamp}"
            n = 1
            while dest.exists() or dest.is_symlink():
                n += 1
                dest = prev / f"r{r.repetition}-{stamp}-{n}"
            # rename moves the link itself where rdir is one: its target is untouched.
            src = rdir if rdir.is_symlink() else self._inside(rdir)
            try:
                src.rename(dest)
            except OSError as e:
                raise LabError(f"cannot move the earlier run {rdir} aside to {dest}: {e.strerror}") from None
            self.moved.append((rdir, dest))

    def run_dir(self, spec: RunSpec) -> Path:
        """A new, empty folder for one run (created here, in this invocation)."""
        d = self.path / spec.variant.name / f"r{spec.repetition}"
        inside(self.path, d)  # before creating anything: a variant folder may not lead elsewhere
        d.parent.mkdir(exist_ok=True)
        d.mkdir()
        return d
