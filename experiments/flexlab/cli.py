"""Command line of the lab (docs/lab.md):

    scripts/lab run FILE [--out DIR] [--variant V]... [--bin-dir DIR] [--prefix P] [--keep-going]
    scripts/lab check FILE [--bin-dir DIR]
    scripts/lab cleanup [--prefix P]
    scripts/lab plot DIR
    scripts/lab schema

Exit status: 0 ok; 1 a run failed; 2 a bad experiment file or arguments;
130 interrupted (everything started was torn down).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from flexlab.backends import BACKENDS
from flexlab.errors import Interrupted, LabError, SpecError
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
    c = sub.add_parser("check", help="validate an experiment file (and each variant with the emulator) and exit")
    c.add_argument("file")
    c.add_argument("--bin-dir", default=str(REPO / "build"))
    k = sub.add_parser("cleanup", help="remove leftovers of killed runs: namespaces (and their processes) by prefix")
    k.add_argument("--prefix", default="fplab", help="name prefix (default fplab: every lab run's)")
    p = sub.add_parser("plot", help="(re)draw the plots of a results folder")
    p.add_argument("dir")
    sub.add_parser("schema", help="print every experiment-file field with its default")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "schema":
            print(describe_schema())
            return 0
        if a.cmd == "cleanup":
            removed = []
            for b in BACKENDS.values():
                removed += b.cleanup(a.prefix)
            print("\n".join(f"removed {x}" for x in removed) if removed else f"nothing left with prefix '{a.prefix}'")
            return 0
        if a.cmd == "plot":
            return subprocess.call([sys.executable, str(REPO / "plots" / "plot_lab.py"), a.dir])
        exp = load_experiment(a.file)
        if a.cmd == "check":
            from flexlab.runner import validate
            with tempfile.TemporaryDirectory(prefix="flexlab-check-") as d:
                hosts = validate(exp, Path(a.bin_dir), Path(d))
            for v in exp.variants:
                w = v.config["workload"]
                print(f"ok: {exp.path} variant {v.name}: {hosts[v.name]} hosts, backend {v.config['backend']}, "
                      f"workload {w['kind']} for {v.config['duration_s']:g} s, {v.config['repetitions']} repetition(s)")
            return 0
        from flexlab.runner import Runner
        out = Path(a.out) if a.out else exp.output_dir
        return Runner(exp, out, Path(a.bin_dir), a.prefix, a.variant, a.keep_going).run()
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Interrupted:
        print("lab: interrupted; everything this run started has been removed", file=sys.stderr)
        return 130
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
