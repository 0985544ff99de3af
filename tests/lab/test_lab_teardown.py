"""Nothing outlives a run: SIGINT (or SIGTERM) mid-run tears down every
namespace and process on its own; after SIGKILL of the runner, `lab cleanup`
removes what is left."""
from __future__ import annotations

import signal
import subprocess
import tempfile
import time

import pytest

from lab_cli import LAB, lab, namespaces, processes_mentioning

LONG = """\
description: teardown test (killed long before it ends)
topology: {kind: single_rack, endpoints: 3}
network: {link_rate_gbps: 0.05}
workload: {kind: bulk, senders: [1, 2], receiver: 0}
duration_s: 120
"""


def start_run(tmp_path, bins, prefix) -> subprocess.Popen:
    exp = tmp_path / "long.yaml"
    exp.write_text(LONG)
    p = subprocess.Popen([str(LAB), "run", str(exp), "--out", str(tmp_path / "out"), "--prefix", prefix,
                          "--bin-dir", str(bins)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    seen = ""
    while time.time() < deadline:
        line = p.stdout.readline()
        seen += line
        if "workload bulk" in line:
            time.sleep(1.5)  # mid-run: traffic flowing through the emulator
            return p
        if p.poll() is not None:
            break
    p.kill()
    raise AssertionError(f"the run never got to its workload:\n{seen}")


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
    assert namespaces(prefix) == []
    assert processes_mentioning(str(tmp_path)) == []


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
    deadline = time.time() + 10  # processes got SIGTERM (parent death or cleanup) and exit
    while processes_mentioning(str(tmp_path)) and time.time() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(str(tmp_path)) == []
    assert f"scratch folder {tempfile.gettempdir()}/flexlab-{prefix}-" in c.stdout
    again = lab("cleanup", "--prefix", prefix)
    assert "nothing left" in again.stdout
