"""Command line of the lab (docs/lab.md):

    scripts/lab run FILE [--out DIR] [--variant V]... [--bin-dir DIR] [--prefix P] [--keep-going]
                         [--backend B] [--inventory INV]
    scripts/lab check FILE [--bin-dir DIR] [--backend B] [--inventory INV]
    scripts/lab cleanup [--prefix P] [--inventory INV]
    scripts/lab plot DIR
    scripts/lab schema

Exit status: 0 ok; 1 a run failed; 2 a bad experiment file or arguments
(found by the validation `check` and `run` share: validation.py; `run`
creates nothing before it passes); 130 interrupted (everything started was
torn down). Every message is one `error: ...` line naming the file and the
field or the option, with control characters escaped (names.printable).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from flexlab.backends import BACKENDS
from flexlab.errors import Interrupted, LabError, SpecError
from flexlab.inventory import load_inventory
from flexlab.names import check_prefix, printable
from flexlab.spec import describe_schema, load_experiment

REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="lab", description="flexplane lab: real TCP through the emulator (docs/lab.md)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an experiment file (every variant x repetition), then plot")
    r.add_argument("file")
    r.add_argument("--out", help="results folder (default: output.dir of the file, or results/lab/<file stem>)")
    r.add_argument("--variant", action="append", help="run only this variant (repeatable)")
    r.add_argument("--bin-dir", default=str(REPO / "build"), help="where the flexplane binaries are (default build/)")
    r.add_argument("--prefix", default=f"fplab{os.getpid() % 100000}",
                   help="name prefix of every namespace this run creates (default fplab<pid>)")
    r.add_argument("--keep-going", action="store_true", help="run the remaining runs after a failed one")
    c = sub.add_parser("check", help="validate an experiment file (and each variant with the emulator) and exit; "
                       "with --inventory, also every host over SSH")
    c.add_argument("file")
    c.add_argument("--bin-dir", default=str(REPO / "build"))
    for x in (r, c):
        x.add_argument("--backend", choices=sorted(BACKENDS), help="run every variant on this backend "
                       "(instead of the file's backend:)")
        x.add_argument("--inventory", help="backend hosts: the machines (YAML, docs/lab.md 'Backend hosts')")
    k = sub.add_parser("cleanup", help="remove leftovers of killed runs: namespaces (and their processes) by prefix")
    k.add_argument("--prefix", default="fplab", help="name prefix (default fplab: every lab run's)")
    k.add_argument("--inventory", help="also remove the run folders, programs and qdiscs a killed run left on "
                   "these hosts (backend hosts)")
    p = sub.add_parser("plot", help="(re)draw the plots of a results folder")
    p.add_argument("dir")
    sub.add_parser("schema", help="print every experiment-file field with its default")
    a = ap.parse_args(argv)
    try:
        return _command(a)
    except SpecError as e:
        print(f"error: {printable(e)}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt):
        print("lab: interrupted; everything this run started has been removed", file=sys.stderr)
        return 130
    except LabError as e:
        print(f"error: {printable(e)}", file=sys.stderr)
        return 1


def _command(a: argparse.Namespace) -> int:
    if a.cmd == "schema":
        print(describe_schema())
        return 0
    if a.cmd == "cleanup":
        check_prefix(a.prefix)
        inv = load_inventory(a.inventory) if a.inventory else None
        removed = []
        for b in BACKENDS.values():
            removed += b.cleanup(a.prefix)
        if inv is not None:
            from flexlab.backends.hosts import HostsBackend
            removed += HostsBackend.cleanup_remote(a.prefix, inv)
        print("\n".join(f"removed {x}" for x in removed) if removed else f"nothing left with prefix '{a.prefix}'")
        return 0
    if a.cmd == "plot":
        if not Path(a.dir).is_dir():
            raise SpecError(f"{a.dir}: not a folder (plot takes a lab results folder)")
        return subprocess.call([sys.executable, str(REPO / "plots" / "plot_lab.py"), a.dir])
    if a.cmd == "run":
        check_prefix(a.prefix)
    exp = load_experiment(a.file, a.backend)
    inv = load_inventory(a.inventory) if a.inventory is not None else None
    from flexlab.validation import plan_run, validate  # one validation path for check and run
    if a.cmd == "check":
        hosts = validate(exp, Path(a.bin_dir), inv)
        for v in exp.variants:
            w = v.config["workload"]
            print(f"ok: {printable(exp.path)} variant {v.name}: {hosts[v.name]} hosts, "
                  f"backend {v.config['backend']}, workload {w['kind']} for {v.config['duration_s']:g} s, "
                  f"{v.config['repetitions']} repetition(s)")
        if inv is not None:
            from flexlab.backends.hosts import HostsBackend
            for line in HostsBackend.probe(inv, max(hosts.values())):
                print(f"ok: {printable(line)}")
        return 0
    runs, hosts, out = plan_run(exp, Path(a.bin_dir), a.out, a.variant, inv)
    from flexlab.runner import Runner
    return Runner(exp, out, Path(a.bin_dir), a.prefix, runs, hosts, a.keep_going, inv).run()


if __name__ == "__main__":
    sys.exit(main())
