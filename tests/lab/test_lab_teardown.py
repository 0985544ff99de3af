"""Nothing outlives a run: SIGINT (or SIGTERM) at any moment (mid-run, after
the clients exited, during teardown) tears down every namespace, process and
DPDK runtime folder, stops the whole invocation (no further variant runs)
and exits 130; after SIGKILL of the runner, `lab cleanup` removes what is
left."""
from __future__ import annotations

import csv
import signal
import subprocess
import tempfile
import time

import pytest

from flexlab.backends.base import dpdk_runtime_root
from lab_cli import LAB, lab, namespaces, processes_mentioning

LONG = """\
description: teardown test (killed long before it ends)
topology: {kind: single_rack, endpoints: 3}
network: {link_rate_gbps: 0.05}
workload: {kind: bulk, senders: [1, 2], receiver: 0}
duration_s: 120
"""


# Two short variants: a signal in the first must keep the second from starting.
TWO = """\
description: signal test (two short variants)
topology: {kind: single_rack, endpoints: 3}
network: {link_rate_gbps: 0.05}
workload: {kind: bulk, senders: [1, 2], receiver: 0, interval_ms: 200}
duration_s: 2
variants: {first: {}, second: {}}
"""


def start_run(tmp_path, bins, prefix, text: str = LONG, marker: str = "workload bulk",
              settle_s: float = 1.5) -> subprocess.Popen:
    """Starts `scripts/lab run` and returns once its output printed `marker`
    (and `settle_s` passed); the process's output so far is in p.seen."""
    exp = tmp_path / "exp.yaml"
    exp.write_text(text)
    p = subprocess.Popen([str(LAB), "run", str(exp), "--out", str(tmp_path / "out"), "--prefix", prefix,
                          "--bin-dir", str(bins)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    seen = ""
    while time.time() < deadline:
        line = p.stdout.readline()
        seen += line
        if marker in line:
            time.sleep(settle_s)  # e.g. mid-run: traffic flowing through the emulator
            p.seen = seen  # type: ignore[attr-defined]
            return p
        if p.poll() is not None:
            break
    p.kill()
    raise AssertionError(f"the run never printed '{marker}':\n{seen}")


def nothing_left(tmp_path, prefix) -> None:
    assert namespaces(prefix) == []
    assert processes_mentioning(str(tmp_path)) == []
    assert not (dpdk_runtime_root() / prefix).exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_tears_everything_down(tmp_path, lab_bins, prefix, sig):
    p = start_run(tmp_path, lab_bins, prefix)
    assert namespaces(prefix), "the run should have namespaces while it runs"
    t0 = time.time()
    p.send_signal(sig)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 130, out
    assert time.time() - t0 < 30
    assert "tearing everything down" in out
    nothing_left(tmp_path, prefix)


# Where the signal lands: the progress line after which it is sent at once.
# "workload done": the clients exited, the servers, endpoints and emulator
# are being stopped; "tearing down": the run's teardown is under way (it
# used to ignore signals; the runner then went on with the next variant).
POINTS = {"after-clients-exited": "workload done", "during-teardown": "tearing down"}


@pytest.mark.parametrize("point", POINTS, ids=list(POINTS))
def test_sigint_at_any_moment_stops_the_invocation(tmp_path, lab_bins, prefix, point):
    p = start_run(tmp_path, lab_bins, prefix, TWO, POINTS[point], settle_s=0)
    p.send_signal(signal.SIGINT)
    rest, _ = p.communicate(timeout=120)
    out = p.seen + rest  # type: ignore[attr-defined]
    assert p.returncode == 130, out
    assert "interrupted; everything this run started has been removed" in out
    assert "[2/2]" not in out and not (tmp_path / "out" / "second").exists(), out  # no further variant
    rows = list(csv.DictReader(open(tmp_path / "out" / "runs.csv")))
    assert [(r["variant"], r["status"]) for r in rows] == [("first", "interrupted")]
    nothing_left(tmp_path, prefix)


def test_rerun_moves_the_earlier_run_aside(tmp_path, lab_bins, prefix):
    """A run folder left by an earlier invocation is moved aside, never
    deleted; a finished run leaves no namespace, process or DPDK folder."""
    out = tmp_path / "out"
    (out / "first" / "r0").mkdir(parents=True)
    (out / "experiment.yaml").write_text("# flexplane lab experiment (an earlier run)\n")
    (out / "first" / "r0" / "mine.txt").write_text("keep me\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text(TWO)
    p = lab("run", str(exp), "--out", str(out), "--prefix", prefix, "--variant", "first", bins=lab_bins, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    moved = list((out / "first" / "_previous").glob("r0-*/mine.txt"))
    assert [m.read_text() for m in moved] == ["keep me\n"], p.stdout
    assert f"moved the earlier run {out / 'first' / 'r0'} aside to {moved[0].parent}" in p.stdout
    assert (out / "first" / "r0" / "summary.yaml").exists()
    nothing_left(tmp_path, prefix)


def test_sigkill_leftovers_are_removed_by_cleanup(tmp_path, lab_bins, prefix):
    p = start_run(tmp_path, lab_bins, prefix)
    p.kill()
    p.wait(10)
    left = namespaces(prefix)
    assert left, "after SIGKILL the namespaces are left for cleanup"
    c = lab("cleanup", "--prefix", prefix)
    assert c.returncode == 0, c.stderr
    for ns in left:
        assert f"netns {ns}" in c.stdout
    assert namespaces(prefix) == []
    # the killed emulator's EAL runtime folder (DPDK leaves it behind)
    assert f"DPDK runtime folder {dpdk_runtime_root() / prefix}" in c.stdout
    assert not (dpdk_runtime_root() / prefix).exists()
    deadline = time.time() + 10  # processes got SIGTERM (parent death or cleanup) and exit
    while processes_mentioning(str(tmp_path)) and time.time() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(str(tmp_path)) == []
    assert f"scratch folder {tempfile.gettempdir()}/flexlab-{prefix}-" in c.stdout
    again = lab("cleanup", "--prefix", prefix)
    assert "nothing left" in again.stdout
