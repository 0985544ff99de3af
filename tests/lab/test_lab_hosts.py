"""The hosts backend driven as on a real rack: three QEMU/TCG guests run an
SSH server (dropbear, root login by key only: kmod/vm/guest/init) on
10.77.0.10-12, the runner reaches them from 10.77.0.3 on the lab namespace's
bridge, and `scripts/lab run --inventory` is started inside that namespace
(`ip netns exec`), as a user starts it on the machine wired to the rack.
Nothing goes through the qemu backend's virtio-serial agent: the runner
uses ssh only (the agent serves only to know the guests have booted).

One set of guests serves every test of this module (module fixture, ~20-40 s
to boot). Each test also checks, over SSH, that it left nothing on them."""
from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from flexlab.backends.base import dpdk_runtime_root
from lab_cli import LAB, processes_mentioning

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "kmod" / "vm"))
from vmlab import MGMT_IP, Lab  # noqa: E402

from conftest import bin_dir  # noqa: E402

N = 3
PREFIX = f"fph{os.getpid() % 10000}"  # the guests' namespace (fph<pid>) and its interfaces
_runs = [0]

EXPERIMENT = """\
description: hosts backend test (3 SSH-reachable guests)
backend: hosts
topology: {kind: single_rack, endpoints: 3}
network: {link_rate_gbps: 0.004}
transport: {cc: dctcp, ecn: true}
routers: {default: {scheme: dctcp, queue_manager: {k_pkts: 4}}}
workload: {kind: bulk, senders: [1, 2], receiver: 0, interval_ms: 1000}
duration_s: 5
drain_s: 5
emulator: {occupancy_interval_us: 12000, realtime_priority: 0}
"""
LONG = EXPERIMENT.replace("duration_s: 5", "duration_s: 120")


class Rack:
    """The booted guests, their namespace and the runner's SSH key."""

    def __init__(self, lab: Lab, key: Path, bins: Path) -> None:
        self.lab, self.key, self.bins, self.ns = lab, key, bins, lab.ns

    def inventory(self, folder: Path, **over) -> Path:
        inv = {"emulator": {"machine": "local", "interface": self.lab.emu_if, "ip": "10.77.0.2"},
               "first_host_ip": "10.77.0.10",
               "rto_us": 50000,  # TCG guests answer tens of ms late (the qemu backend's value)
               "connect_timeout_s": 5,
               "defaults": {"user": "root", "key": str(self.key), "interface": "eth0"},
               "hosts": [{"address": g.ip} for g in self.lab.guests]}
        inv.update(over)
        path = folder / "inventory.yaml"
        path.write_text(yaml.safe_dump(inv, sort_keys=False))
        return path

    def ssh(self, i: int, cmd: str) -> str:
        """A command on guest i over SSH (its own known_hosts: the test's, not the runner's)."""
        p = subprocess.run(["ip", "netns", "exec", self.ns, "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                            "-o", f"UserKnownHostsFile={self.lab.dir}/known_hosts", "-o", "LogLevel=ERROR",
                            "-o", "StrictHostKeyChecking=accept-new", "-i", str(self.key),
                            f"root@{self.lab.guests[i].ip}", cmd], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def lab_cmd(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        argv = ["ip", "netns", "exec", self.ns, str(LAB), *args]
        if args[0] in ("run", "check"):
            argv += ["--bin-dir", str(self.bins)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def state(self, i: int) -> dict:
        """What a run leaves on guest i: its root qdisc, lab folders, workload processes, tcp_ecn."""
        out = self.ssh(i, "/sbin/tc qdisc show dev eth0 root; echo @; ls -d /tmp/flexlab-* 2>/dev/null; echo @; "
                          "ps -o pid,args | grep [f]lexplane-workload; echo @; cat /proc/sys/net/ipv4/tcp_ecn")
        qdisc, dirs, procs, ecn = (x.strip() for x in out.split("@"))
        return {"qdisc": qdisc.split()[1] if qdisc else "", "dirs": dirs.split(), "procs": procs.splitlines(),
                "tcp_ecn": ecn}

    def assert_clean(self, prefix: str) -> None:
        for i in range(N):
            st = self.state(i)
            assert st["qdisc"] != "flexplane" and st["dirs"] == [] and st["procs"] == [], (i, st)
            assert st["tcp_ecn"] == "2", (i, st)  # the kernel's default, restored
        assert processes_mentioning(f"flexlab-{prefix}") == []  # ControlMasters, the emulator's scratch
        assert processes_mentioning(f"iface={self.lab.emu_if}") == []  # no emulator left
        assert not (dpdk_runtime_root() / prefix).exists()


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    from flexlab.backends.qemu import QemuBackend
    bins = bin_dir()
    problems = QemuBackend.problems() + [f"'{t}' not found (apt-get install openssh-client)"
                                          for t in ("ssh", "ssh-keygen") if not shutil.which(t)]
    if not shutil.which("dropbear"):
        problems.append("'dropbear' not found (apt-get install dropbear-bin): the guests' SSH server")
    for prog in ("flexplane-emulator", "flexplane-workload", "flexplane-nfq-endpoint"):
        if not (bins / prog).exists():
            problems.append(f"{bins / prog} not built (make build, or set FLEXPLANE_BIN_DIR)")
    if problems:
        pytest.fail("hosts backend tests cannot run: " + "; ".join(problems))
    img = QemuBackend(PREFIX, None)._ensure_images(bins)
    work = tmp_path_factory.mktemp("rack")
    key = work / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fph-test", "-f", str(key)], check=True)
    lab = Lab(work / "vms", Path(img["KERNEL"]), Path(img["INITRD"]), bins / "flexplane-emulator", n=N,
              prefix=PREFIX, mem="256M", debug=False, ssh_pubkey=(work / "id_ed25519.pub").read_text())
    try:
        lab.up(boot_timeout=300)
        yield Rack(lab, key, bins)
    finally:
        lab.down()


def _prefix() -> str:
    _runs[0] += 1
    return f"fphr{os.getpid() % 10000}x{_runs[0]}"


def _counters(path: Path) -> dict[str, int]:
    return {r["counter"]: int(r["value"]) for r in csv.DictReader(open(path))}


def test_hosts_run_passes_its_checks(rack, tmp_path):
    """`lab check --inventory` probes every host; `lab run` runs a 5 s DCTCP
    bulk experiment on the guests: every request answered once, counters
    equal on both sides, CE marks applied, plots written, nothing left."""
    inv = rack.inventory(tmp_path)
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT)
    c = rack.lab_cmd("check", str(exp), "--inventory", str(inv))
    assert c.returncode == 0, c.stdout + c.stderr
    for g in rack.lab.guests:
        assert f"root@{g.ip}:22): reachable, root, eth0 has {g.ip}, module " in c.stdout, c.stdout
    prefix, out = _prefix(), tmp_path / "out"
    p = rack.lab_cmd("run", str(exp), "--inventory", str(inv), "--prefix", prefix, "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    run = out / "default" / "r0"
    s = yaml.safe_load((run / "summary.yaml").read_text())
    w, e, ep = s["workload"], s["emulator"], s["endpoints"]
    assert all(s["checks"].values()), s["checks"]
    assert w["flows"] == 2 and all(x > 0.1 for x in w["per_flow_mbps"]), w
    assert e["verdicts"] == e["requests"] == ep["verdicts"] == ep["requests_submitted"] > 100, (e, ep)
    assert e["pending_at_exit"] == 0 and ep["timeout_accepted"] == ep["timeout_dropped"] == 0
    assert e["marks"] > 0 and sum(_counters(run / "endpoints" / f"h{h}" / "endpoint_counters.csv")
                                  ["qdisc_verdict_mark"] for h in range(N)) == e["marks"]
    assert _counters(run / "endpoints" / "h0" / "netstat.csv")["IpExt.InCEPkts"] > 0
    q = yaml.safe_load((run / "endpoints" / "h1" / "qdisc.json").read_text())["options"]
    assert q["bypass"] == [22] and q["fallback"] == "closed" and q["count"] == N and q["rto_us"] == 50000, q
    for f in ("throughput.png", "fairness.png", "queue_timeseries.png", "runs.csv"):
        assert (out / f).stat().st_size > 0, f
    conf = yaml.safe_load((run / "run.yaml").read_text())
    assert conf["backend"] == "hosts" and [h["address"] for h in conf["inventory"]["hosts"]] == \
        [g.ip for g in rack.lab.guests]
    assert (tmp_path / "inventory.yaml.known_hosts").read_text().count("ssh-ed25519") == N
    rack.assert_clean(prefix)


def _start(rack, tmp_path, prefix: str) -> subprocess.Popen:
    inv = rack.inventory(tmp_path)
    exp = tmp_path / "long.yaml"
    exp.write_text(LONG)
    p = subprocess.Popen(["ip", "netns", "exec", rack.ns, str(LAB), "run", str(exp), "--inventory", str(inv),
                          "--prefix", prefix, "--out", str(tmp_path / "out"), "--bin-dir", str(rack.bins)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen, deadline = "", time.time() + 120
    while "workload bulk" not in seen and time.time() < deadline and p.poll() is None:
        seen += p.stdout.readline()
    assert "workload bulk" in seen, seen
    time.sleep(2)  # mid-workload
    for i in range(N):
        st = rack.state(i)
        assert st["qdisc"] == "flexplane" and st["dirs"] == [f"/tmp/flexlab-{prefix}"] and st["procs"], (i, st)
    return p


def test_hosts_sigint_tears_down_over_ssh(rack, tmp_path):
    """SIGINT mid-workload: exit 130; on every guest the flexplane qdisc is
    gone, no workload process is left, the run folder is removed and
    tcp_ecn restored; no emulator or SSH master is left here. (Before it, a
    second run with the same prefix is refused and leaves the first alone.)"""
    prefix = _prefix()
    p = _start(rack, tmp_path, prefix)
    # A second run with the same prefix is refused on the hosts and leaves the first one's state alone.
    second = rack.lab_cmd("run", str(tmp_path / "long.yaml"), "--inventory", str(tmp_path / "inventory.yaml"),
                          "--prefix", prefix, "--out", str(tmp_path / "out2"), timeout=120)
    assert second.returncode == 1 and f"/tmp/flexlab-{prefix} exists" in second.stdout, second.stdout
    for i in range(N):
        st = rack.state(i)
        assert st["qdisc"] == "flexplane" and st["dirs"] == [f"/tmp/flexlab-{prefix}"] and st["procs"], (i, st)
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 130, out
    assert "tearing everything down" in out and time.time() - t0 < 60
    rack.assert_clean(prefix)


def test_hosts_sigkill_leftovers_removed_by_cleanup(rack, tmp_path):
    """SIGKILL of the runner leaves the qdiscs, programs and run folders on
    the guests; `lab cleanup --inventory` removes them over SSH."""
    prefix = _prefix()
    p = _start(rack, tmp_path, prefix)
    p.kill()
    p.wait(10)
    assert any(rack.state(i)["dirs"] for i in range(N))
    deadline = time.time() + 15  # the local emulator got SIGTERM when its parent died, and drains
    while processes_mentioning(f"iface={rack.lab.emu_if}") and time.time() < deadline:
        time.sleep(0.2)
    c = rack.lab_cmd("cleanup", "--prefix", prefix, "--inventory", str(tmp_path / "inventory.yaml"))
    assert c.returncode == 0, c.stdout + c.stderr
    for g in rack.lab.guests:
        assert f"root@{g.ip}:22): /tmp/flexlab-{prefix}" in c.stdout, c.stdout
    assert f"DPDK runtime folder {dpdk_runtime_root() / prefix}" in c.stdout, c.stdout
    rack.assert_clean(prefix)


def test_hosts_remote_emulator(rack, tmp_path):
    """The emulator on another machine, reached over SSH as well: here a
    dropbear in the lab namespace on 10.77.0.3:2222 (this machine's files,
    root's home replaced by the test's in a private mount namespace). The run
    copies the emulator and its config in, starts it there on the bridge's
    port, puts its engine under SCHED_FIFO with chrt, brings its outputs back
    and removes its run folder and DPDK runtime folder."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    home.chmod(0o700)
    (home / ".ssh").chmod(0o700)
    (home / ".ssh" / "authorized_keys").write_text(Path(f"{rack.key}.pub").read_text())
    (home / ".ssh" / "authorized_keys").chmod(0o600)
    hostkey = tmp_path / "hostkey"
    subprocess.run(["dropbearkey", "-t", "ed25519", "-f", str(hostkey)], check=True, capture_output=True)
    log = open(tmp_path / "dropbear.log", "w")
    sshd = subprocess.Popen(["ip", "netns", "exec", rack.ns, "unshare", "-m", "--propagation", "private", "sh", "-c",
                             f"mount --bind {home} /root && exec dropbear -F -E -s -r {hostkey} -p {MGMT_IP}:2222"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 10
        while ":2222" not in subprocess.run(["ip", "netns", "exec", rack.ns, "ss", "-ltn"], capture_output=True,
                                            text=True).stdout:
            assert sshd.poll() is None and time.time() < deadline, (tmp_path / "dropbear.log").read_text()
            time.sleep(0.1)
        inv = rack.inventory(tmp_path, emulator={"machine": {"address": MGMT_IP, "port": 2222},
                                                 "interface": rack.lab.emu_if, "ip": "10.77.0.2"})
        exp = tmp_path / "exp.yaml"
        exp.write_text(EXPERIMENT.replace(", realtime_priority: 0", ""))  # the default, 20: chrt over SSH
        c = rack.lab_cmd("check", str(exp), "--inventory", str(inv))
        assert c.returncode == 0 and f"root@{MGMT_IP}:2222): reachable, root, has {rack.lab.emu_if}" in c.stdout, \
            c.stdout + c.stderr
        prefix, out = _prefix(), tmp_path / "out"
        p = rack.lab_cmd("run", str(exp), "--inventory", str(inv), "--prefix", prefix, "--out", str(out))
        assert p.returncode == 0, p.stdout + p.stderr
        run = out / "default" / "r0"
        s = yaml.safe_load((run / "summary.yaml").read_text())
        assert all(s["checks"].values()), s["checks"]
        e, ep = s["emulator"], s["endpoints"]
        assert e["verdicts"] == e["requests"] == ep["verdicts"] == ep["requests_submitted"] > 100, (e, ep)
        for f in ("counters.csv", "live_summary.yaml", "occupancy.csv"):
            assert (run / "emulator" / f).stat().st_size > 0, f
        assert yaml.safe_load((run / "run.yaml").read_text())["engine_threads_realtime"], "chrt found no engine"
        assert "listening on" in (run / "emulator.log").read_text()
        assert not Path(f"/tmp/flexlab-{prefix}-emu").exists() and not Path(f"/var/run/dpdk/{prefix}").exists()
        rack.assert_clean(prefix)
    finally:
        os.killpg(sshd.pid, signal.SIGTERM)
        sshd.wait(10)
        log.close()


BAD = {
    # inventory change -> what the error line names
    "missing-interface": ({"defaults": {"user": "root", "key": "KEY"}}, "hosts[0].interface: required"),
    "unknown-key": ({"hostz": []}, "hostz: unknown key"),
    "bad-port": ({"hosts": [{"address": "10.77.0.10", "port": 70000}]}, "hosts[0].port: 70000 is out of range"),
    "option-injection": ({"hosts": [{"address": "-oProxyCommand=x"}]}, "hosts[0].address: '-oProxyCommand=x'"),
    "bad-user": ({"defaults": {"user": "ro ot", "key": "KEY", "interface": "eth0"}}, "defaults.user: 'ro ot'"),
    "missing-key-file": ({"defaults": {"user": "root", "key": "/nonexistent/key", "interface": "eth0"}},
                         "defaults.key: /nonexistent/key: no such file"),
    "too-few-hosts": ({"hosts": [{"address": "10.77.0.10"}]}, "hosts: 1 listed, the experiment's topology has 3"),
    "emulator-machine": ({"emulator": {"machine": "10.0.0.1", "interface": "eth1"}}, "emulator.machine: '10.0.0.1'"),
    "deb-without-files": ({"install": "deb"}, "debs: required for install: deb"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_inventory(rack, tmp_path, case):
    """A bad inventory: `check` and `run` exit 2 with one error line naming
    the field, and run creates nothing."""
    over, needle = BAD[case]
    over = yaml.safe_load(yaml.safe_dump(over).replace("KEY", str(rack.key)))
    inv = rack.inventory(tmp_path, **over)
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT)
    for cmd in ("check", "run"):
        p = rack.lab_cmd(cmd, str(exp), "--inventory", str(inv), *(("--out", str(tmp_path / "out")) if cmd == "run"
                                                                    else ()), timeout=60)
        assert p.returncode == 2, (cmd, p.stdout, p.stderr)
        assert p.stderr.startswith(f"error: {inv}: ") and needle in p.stderr, (cmd, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


def test_inventory_required_and_backend_option(rack, tmp_path):
    """backend hosts without --inventory names the option; --backend hosts
    turns a netns file into a hosts one (check probes the guests)."""
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT)
    p = rack.lab_cmd("check", str(exp))
    assert p.returncode == 2 and p.stderr.startswith("error: --inventory: required for backend hosts"), p.stderr
    exp.write_text(EXPERIMENT.replace("backend: hosts\n", "").replace("cc: dctcp", "cc: cubic"))
    p = rack.lab_cmd("check", str(exp), "--inventory", str(rack.inventory(tmp_path)))
    assert p.returncode == 2 and "no variant of" in p.stderr, p.stderr
    p = rack.lab_cmd("check", str(exp), "--backend", "hosts", "--inventory", str(rack.inventory(tmp_path)))
    assert p.returncode == 0 and "backend hosts" in p.stdout, p.stdout + p.stderr


def test_unreachable_host_is_named_and_nothing_hangs(rack, tmp_path):
    """A host that does not answer (no machine at 10.77.0.99): `run` fails
    within the connect timeout with the host named, and leaves nothing on
    the hosts it did reach."""
    inv = rack.inventory(tmp_path, hosts=[{"address": "10.77.0.10"}, {"address": "10.77.0.11"},
                                          {"address": "10.77.0.99"}], connect_timeout_s=3)
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT)
    prefix, t0 = _prefix(), time.time()
    p = rack.lab_cmd("run", str(exp), "--inventory", str(inv), "--prefix", prefix, "--out", str(tmp_path / "out"),
                     timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "cannot reach h2 (root@10.77.0.99:22)" in p.stdout + p.stderr, p.stdout + p.stderr
    assert time.time() - t0 < 45
    c = rack.lab_cmd("check", str(exp), "--inventory", str(inv), timeout=60)
    assert c.returncode == 1 and "h2 (root@10.77.0.99:22)" in c.stderr, c.stdout + c.stderr
    rack.assert_clean(prefix)


HOST_PROBLEMS = {
    # inventory change -> what the run's error names
    "wrong-address": ({"first_host_ip": "10.77.0.20"},
                      "h0 (root@10.77.0.10:22): eth0 does not have the address 10.77.0.20"),
    "no-interface": ({"hosts": [{"address": "10.77.0.10"}, {"address": "10.77.0.11", "interface": "eth7"},
                                {"address": "10.77.0.12"}]},
                     "h1 (root@10.77.0.11:22): interface 'eth7' (hosts[1].interface)"),
    # The guests have no apt: the .debs are copied in, apt-get fails, the host and the step are named.
    "install-without-apt": ({"install": "deb", "debs": ["flexplane-tc_0.1-1_amd64.deb"]},
                            "h0 (root@10.77.0.10:22): installing the endpoint packages (apt-get install) failed"),
}


@pytest.mark.parametrize("case", HOST_PROBLEMS, ids=list(HOST_PROBLEMS))
def test_host_problem_is_named_and_nothing_is_left(rack, tmp_path, case):
    """A host that is reachable but not fit (its interface lacks the address
    first_host_ip + i, or has no such interface, or install: deb where there
    is no apt): the run fails before any qdisc is attached, naming the host
    and the step, and leaves nothing on any host."""
    over, needle = HOST_PROBLEMS[case]
    for deb in over.get("debs", []):
        (tmp_path / deb).write_bytes(b"!<arch>\n")  # a file to copy; apt-get is what is missing
    inv = rack.inventory(tmp_path, **over)
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT)
    prefix = _prefix()
    p = rack.lab_cmd("run", str(exp), "--inventory", str(inv), "--prefix", prefix, "--out", str(tmp_path / "out"),
                     timeout=120)
    assert p.returncode == 1 and needle in p.stdout, p.stdout + p.stderr
    rack.assert_clean(prefix)


@pytest.mark.parametrize("backend", ["hosts", "qemu"])
@pytest.mark.parametrize("lab,needle", [("{hold_ms: 60001}", "lab.hold_ms: 60001 is above 60000 on backend"),
                                        ("{window: 1}", "lab.window: 1 is below 2 on backend"),
                                        ("{bypass: ['tcp:22']}", "lab.bypass: not supported on backend")],
                         ids=["hold", "window", "bypass"])
def test_qdisc_limits_refused_by_check(tmp_path, lab, needle, backend):
    """What the flexplane qdisc would refuse at `tc qdisc add` is refused by
    `check` (no inventory, no VM needed): exit 2, the field named."""
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT.replace("backend: hosts", f"backend: {backend}") + f"lab: {lab}\n")
    p = subprocess.run([str(LAB), "check", str(exp), "--bin-dir", str(bin_dir())], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and p.stderr.startswith(f"error: {exp}: {needle} {backend}"), p.stderr
