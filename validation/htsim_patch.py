"""Editing htsim's sources for the comparisons (validation/htsim_*.sh).

Every edit is a regular expression that must match exactly as often as
given, or the script stops with the file and pattern: a changed htsim is
noticed, never half-patched. The edits more than one script makes are here.
Imported by the scripts' inline Python, which runs from the repository root.
"""
import re
import sys


def patcher(sim):
    """patch(name, pattern, repl, count=1): one edit of sim/name."""
    def patch(name, pattern, repl, count=1):
        path = f"{sim}/{name}"
        with open(path) as f:
            text = f.read()
        new, n = re.subn(pattern, repl, text)
        if n != count:
            sys.exit(f"error: {path}: {pattern!r} found {n} times, expected {count}; cannot patch")
        with open(path, "w") as f:
            f.write(new)
    return patch


def restart_alpha_timer(patch):
    """DCQCNSrc::doNextEvent decays alpha once its timer has run out but never
    restarts the timer: restart it where alpha decays."""
    patch("dcqcn.cpp", r"\n([ \t]*)(_alpha\s*=\s*\(1\s*-\s*_g\)\s*\*\s*_alpha;)\n",
          lambda m: f"\n{m[1]}{m[2]}\n{m[1]}_last_alpha_update = eventlist().now();\n")


def roce_start_in_ns(patch):
    """RoCE sources start at the connection matrix's time read as ns (it is written in ns), not us."""
    patch("roce.cpp", r"sourceIsPending\(\*this,timeFromUs\(\(double\)starttime\)\)",
          "sourceIsPending(*this,timeFromNs((double)starttime))")
