"""scripts/pair_time.py: the paired wall-time helper docs/performance.md quotes."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pair_time.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_alternates_and_reports_each_command(tmp_path):
    log = tmp_path / "order"
    p = run("--rounds", "3", f"echo a >> {log}", f"echo b >> {log}")
    assert p.returncode == 0, p.stderr
    assert log.read_text().split() == ["a", "b", "b", "a", "a", "b"]  # reversed every other round
    lines = p.stdout.splitlines()
    assert lines[0].startswith("1: median ") and "3 runs" in lines[0]
    assert lines[1].startswith("2: median ") and "3 runs" in lines[1]
    assert lines[2].startswith("median of 1 / median of 2: ")


def test_refuses_bad_arguments_and_stops_on_a_failing_command():
    assert run("true").returncode == 2  # one command: nothing to compare
    assert run("--rounds", "0", "true", "true").returncode == 2
    p = run("true", "exit 3")
    assert p.returncode == 1 and "command 2 failed (exit 3)" in p.stderr
