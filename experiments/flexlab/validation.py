"""The one validation path of `lab check` and `lab run` (docs/lab.md).

`lab check FILE` runs `validate`; `lab run FILE` runs `validate` and
`plan_run` (its options: which variants, the results folder) before it
creates anything. What the experiment file alone decides is checked when it
is read (spec.load_experiment: fields, names, bypass rules, cdf files);
what needs the binaries is checked here: the emulator's `check` of every
variant's generated config (schemes, parameters, topology, the cdf file's
content), the workload's hosts against the topology's size, and whether the
backend can run on this machine.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from flexlab.backends import backend_class
from flexlab.emuconfig import check_config, emulator_config, write_config
from flexlab.errors import SpecError
from flexlab.inventory import Inventory, check_inventory_for
from flexlab.outdir import OutFolder
from flexlab.spec import Experiment, RunSpec, _check_workload

PROGRAMS = ("flexplane-emulator", "flexplane-nfq-endpoint", "flexplane-workload")


def check_binaries(bin_dir: Path) -> None:
    if not bin_dir.is_dir():
        raise SpecError(f"--bin-dir {bin_dir}: not a folder (build first: make build)")
    for prog in PROGRAMS:
        p = bin_dir / prog
        if not p.exists():
            raise SpecError(f"{p}: not found: build first (make build, or --bin-dir)")
        if not p.is_file() or not os.access(p, os.X_OK):
            raise SpecError(f"{p}: not an executable file (--bin-dir)")


def validate(exp: Experiment, bin_dir: Path, inventory: Inventory | None = None) -> dict[str, int]:
    """Checks every variant with the emulator and the workload's hosts
    against the topology (and, backend hosts, the inventory's hosts);
    returns the number of hosts per variant."""
    check_binaries(bin_dir)
    uses = [v.name for v in exp.variants if v.config["backend"] == "hosts"]
    if uses and inventory is None:
        raise SpecError(f"--inventory: required for backend hosts (variant '{uses[0]}' of {exp.path}): "
                        "the machines to run on (docs/lab.md, 'Backend hosts')")
    if inventory is not None and not uses:
        raise SpecError(f"--inventory {inventory.path}: no variant of {exp.path} uses backend hosts "
                        "(backend: hosts in the file, or --backend hosts)")
    hosts = {}
    with tempfile.TemporaryDirectory(prefix="flexlab-check-") as scratch:
        for v in exp.variants:
            where = f"{exp.path}: variant '{v.name}': " if len(exp.variants) > 1 else f"{exp.path}: "
            problems = backend_class(v.config["backend"]).problems()
            if problems:
                raise SpecError(f"{where}backend: " + "; ".join(problems))
            path = Path(scratch) / f"check-{v.name}.yaml"
            write_config(emulator_config(v.config, v.config["seed"], None, exp.path), path)
            try:
                n = check_config(bin_dir / "flexplane-emulator", path, where)
            except (OSError, subprocess.SubprocessError) as e:
                raise SpecError(f"{bin_dir / 'flexplane-emulator'}: cannot run it: {e}") from None
            try:
                _check_workload(v.config, "", n)
            except SpecError as e:
                raise SpecError(f"{where}{e}") from None
            if v.config["backend"] == "hosts":
                check_inventory_for(inventory, n, where)
            hosts[v.name] = n
    return hosts


def select_runs(exp: Experiment, only: list[str] | None) -> list[RunSpec]:
    """The runs of the variants named by --variant (all without it)."""
    names = [v.name for v in exp.variants]
    for o in only or []:
        if o not in names:
            raise SpecError(f"--variant '{o}': {exp.path} has no such variant (it has {', '.join(names)})")
    return exp.runs(only)


def plan_run(exp: Experiment, bin_dir: Path, out: str | None, only: list[str] | None,
             inventory: Inventory | None = None) -> tuple[list[RunSpec], dict[str, int], OutFolder]:
    """Everything `lab run` checks before it creates anything."""
    runs = select_runs(exp, only)
    if out is None:
        given = exp.variants[0].config["output"]["dir"]
        label = f"{exp.path}: output.dir '{given}'" if given else f"results folder '{exp.output_dir}'"
        folder = OutFolder.check(str(exp.output_dir), label, runs)
    else:
        folder = OutFolder.check(out, f"--out '{out}'", runs)
    hosts = validate(exp, bin_dir, inventory)
    return runs, hosts, folder
