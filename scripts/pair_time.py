#!/usr/bin/env python3
"""Whole-process wall time of two or more commands, alternated in one invocation.

Runs each command ROUNDS times, in order on even rounds and in reverse order on
odd ones (so drifting machine load hits every command alike), and prints per
command the median and range of its wall times, then the ratio of the first
command's median to each other's. Outputs of the commands are discarded; a
command that fails stops the run. docs/performance.md quotes figures made so.

    scripts/pair_time.py [--rounds N] CMD_A CMD_B [CMD...]

Example (a build from before a change against today's):
    scripts/pair_time.py --rounds 15 \\
      "/tmp/base/flexplane-emulator run validation/scenarios/flexplane_fat_tree_k8.yaml --cores 1 --quiet --out /tmp/a" \\
      "build/flexplane-emulator run validation/scenarios/flexplane_fat_tree_k8.yaml --cores 1 --quiet --out /tmp/b"
"""
import argparse
import statistics
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="runs of each command (default 5)")
    ap.add_argument("commands", nargs="+", help="shell command lines (at least two)")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    if len(a.commands) < 2:
        ap.error("give at least two commands to compare")
    times = [[] for _ in a.commands]
    for r in range(a.rounds):
        order = range(len(a.commands)) if r % 2 == 0 else reversed(range(len(a.commands)))
        for i in order:
            start = time.perf_counter()
            p = subprocess.run(a.commands[i], shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            elapsed = time.perf_counter() - start
            if p.returncode != 0:
                print(f"pair_time: command {i + 1} failed (exit {p.returncode}): {a.commands[i]}\n{p.stderr}", file=sys.stderr)
                return 1
            times[i].append(elapsed)
    for i, (c, t) in enumerate(zip(a.commands, times)):
        print(f"{i + 1}: median {statistics.median(t):.3f} s (range {min(t):.3f}-{max(t):.3f}, {len(t)} runs)  {c}")
    first = statistics.median(times[0])
    for i, t in enumerate(times[1:], start=2):
        print(f"median of 1 / median of {i}: {first / statistics.median(t):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
