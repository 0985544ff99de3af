"""Runs an experiment's matrix (variants x repetitions), one run at a time:

    up -> emulator -> endpoints -> servers -> clients -> wait -> stop in
    reverse order -> down -> metrics

with progress lines, and tears everything down on any exit path: normal end,
a failure, SIGINT or SIGTERM. A signal only sets a flag: whatever the runner
is doing (a run, its teardown, the analysis) goes on to the end of the
current teardown, then the whole invocation stops (Interrupted: exit 130);
no further run starts. Each run writes its folder (run.yaml with the
resolved config, the emulator's and endpoints' outputs, the workload CSVs,
logs, summary.yaml); the experiment writes runs.csv and the plots. The
caller validates everything first (validation.plan_run)."""
from __future__ import annotations

import csv
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from flexlab import analysis
from flexlab.backends import backend_class
from flexlab.backends.base import Backend, LabSettings
from flexlab.emuconfig import emulator_config, write_config
from flexlab.errors import Interrupted, LabError
from flexlab.names import printable
from flexlab.outdir import OutFolder
from flexlab.procs import Processes
from flexlab.spec import Experiment, RunSpec
from flexlab.workload import commands, receivers

REPO = Path(__file__).resolve().parents[2]


class Signals:
    """SIGINT / SIGTERM set a flag that every wait checks (Interrupted)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> "Signals":
        for s in (signal.SIGINT, signal.SIGTERM):
            self._old[s] = signal.signal(s, self._on)
        return self

    def _on(self, sig: int, frame) -> None:
        if self.received is None:
            self.received = sig
            try:
                print(f"\nlab: {signal.Signals(sig).name}: stopping the run and tearing everything down ...",
                      file=sys.stderr, flush=True)
            except OSError:  # stderr gone: the flag is what matters
                pass

    def check(self) -> None:
        """Interrupted once a signal came (between steps, after a teardown)."""
        if self.received is not None:
            raise Interrupted(signal.Signals(self.received).name)

    def __exit__(self, *exc) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)


def log(msg: str) -> None:
    try:
        print(printable(msg), flush=True)
    except OSError:  # stdout gone (`lab run ... | head`): the run and its teardown go on, unheard
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class Runner:
    def __init__(self, exp: Experiment, out: OutFolder, bin_dir: Path, prefix: str, runs: list[RunSpec],
                 hosts: dict[str, int], keep_going: bool = False, inventory=None) -> None:
        self.exp = exp
        self.folder = out
        self.out = out.path
        self.bin = bin_dir
        self.prefix = prefix
        self.runs = runs
        self.hosts = hosts
        self.keep_going = keep_going
        self.inventory = inventory  # flexlab.inventory.Inventory (backend hosts)
        self.signals = Signals()

    def run(self) -> int:
        """Runs the matrix (validated by the caller); the exit status."""
        with self.signals:
            return self._matrix(self.runs)

    def _matrix(self, runs: list[RunSpec]) -> int:
        self.signals.check()
        self.folder.create()
        for old, new in self.folder.moved:
            log(f"lab: moved the earlier run {old} aside to {new}")
        self._write_experiment_record(self.hosts)
        scratch = Path(tempfile.mkdtemp(prefix=f"flexlab-{self.prefix}-"))
        rows: list[dict] = []
        t_all = time.monotonic()
        try:
            log(f"lab: {self.exp.path} -> {self.out}: {len(runs)} run(s) of "
                f"{len({r.variant.name for r in runs})} variant(s), backend {runs[0].variant.config['backend']}, "
                f"namespace prefix {self.prefix}")
            for i, spec in enumerate(runs):
                self.signals.check()
                if not self._run_one(spec, self.hosts[spec.variant.name], scratch, i, len(runs), rows):
                    break
        finally:
            if rows:
                self._write_runs_csv(rows)
            shutil.rmtree(scratch, ignore_errors=True)
        self.signals.check()
        failed = sum(1 for r in rows if r["status"] != "ok")
        if failed < len(rows):
            self._plot()
        self.signals.check()
        log(f"lab: done in {time.monotonic() - t_all:.0f} s: {len(rows) - failed} ok, {failed} failed -> {self.out}")
        return 1 if failed else 0

    def _run_one(self, spec: RunSpec, hosts: int, scratch: Path, i: int, total: int, rows: list[dict]) -> bool:
        """One run with its progress lines; False when the matrix should stop."""
        t0 = time.monotonic()
        log(f"[{i + 1}/{total}] {spec.name} (seed {spec.seed}): starting")
        try:
            summary = self._one(spec, hosts, scratch, i)
            self.signals.check()
        except Interrupted:
            rows.append(self._row(spec, {}, "interrupted"))
            raise
        except LabError as e:
            if self.signals.received is not None:  # a step failed because of the signal (a child got it too)
                rows.append(self._row(spec, {}, "interrupted"))
                raise Interrupted(signal.Signals(self.signals.received).name) from None
            rows.append(self._row(spec, {}, f"failed: {str(e).splitlines()[0]}"))
            log(f"[{i + 1}/{total}] {spec.name}: FAILED: {e}")
            return self.keep_going
        rows.append(self._row(spec, summary, "ok"))
        log(f"[{i + 1}/{total}] {spec.name}: {self._one_line(spec, summary)} ({time.monotonic() - t0:.0f} s)")
        return True

    # --- one run -----------------------------------------------------------------
    def _one(self, spec: RunSpec, hosts: int, scratch: Path, order: int) -> dict:
        c = spec.variant.config
        run_dir = self.folder.run_dir(spec)
        emu_cfg = run_dir / "emulator.yaml"
        procs = Processes(lambda: self.signals.received is not None)
        backend: Backend = backend_class(c["backend"])(self.prefix, procs)
        settings = LabSettings(hosts=hosts, ecn=c["transport"]["ecn"], hold_ms=c["lab"]["hold_ms"],
                               fallback=c["lab"]["fallback"], bypass=c["lab"]["bypass"], window=c["lab"]["window"],
                               bin_dir=self.bin, scratch=scratch, ipv6=c["lab"]["ipv6"],
                               cc=c["transport"]["cc"], qemu=c["qemu"], inventory=self.inventory,
                               trace_stages=c["lab"]["trace_stages"], queue_at=c["lab"]["queue_at"])
        emu_ip, host_ips = backend.addresses(settings)
        cfg = emulator_config(c, spec.seed, hosts, self.exp.path)
        cfg["live"]["emulator_ip"], cfg["live"]["endpoint_ips"] = emu_ip, host_ips
        write_config(cfg, emu_cfg)
        meta: dict[str, Any] = {"variant": spec.variant.name, "repetition": spec.repetition, "seed": spec.seed,
                                "order": order, "hosts": hosts, "backend": c["backend"], "prefix": self.prefix,
                                "experiment_file": str(self.exp.path.resolve()),
                                "experiment_dir": str(self.exp.path.resolve().parent),
                                "git_commit": _git_commit(), "config": c}
        if self.inventory is not None and c["backend"] == "hosts":
            meta["inventory"] = {"file": str(self.inventory.path.resolve()), "emulator_ip": emu_ip,
                                 "hosts": [{"address": h.address, "interface": h.interface, "ip": ip}
                                           for h, ip in zip(self.inventory.hosts, host_ips)]}
        try:
            backend.up(settings)
            t_emu = time.time()
            limit = c["duration_s"] + c["drain_s"] + 120
            emu = backend.start_emulator(
                [str(self.bin / "flexplane-emulator"), "live", str(emu_cfg), "--out", str(run_dir / "emulator"),
                 "--duration-s", f"{limit:g}"] + (["--trace-stages"] if c["lab"]["trace_stages"] else []),
                self._eal(c), run_dir / "emulator.log")
            procs.wait_for(emu, r"listening on", 30, "'listening on'")
            t_emu = (t_emu + time.time()) / 2
            prio = realtime_priority(c)
            rt = backend.realtime_engine(emu, prio)
            meta["engine_threads_realtime"] = rt if rt is not None else _realtime_engine(emu.popen.pid, prio)
            backend.start_endpoints(emu_cfg, run_dir / "endpoints", settings)
            hints = {h: backend.hints_path(settings, h) for h in range(hosts)}
            cmds = commands(c, spec.seed, self.bin, run_dir / "workload", hints, host_ips)
            (run_dir / "workload").mkdir(exist_ok=True)
            servers = [backend.run_on_host(x.host, f"server h{x.host}", x.argv, run_dir / "workload" / f"h{x.host}.server.log")
                       for x in cmds if x.role == "server"]
            for p in servers:
                procs.wait_for(p, r"serve: listening", 10, "a listening server")
            meta["workload_start_s"] = time.time() - t_emu
            clients = [backend.run_on_host(x.host, f"client h{x.host}", x.argv, run_dir / "workload" / f"h{x.host}.client.log")
                       for x in cmds if x.role == "client"]
            log(f"      {hosts} hosts up, emulator and endpoints ready; workload {c['workload']['kind']} "
                f"for {c['duration_s']:g} s")
            if not procs.wait_exit(clients, c["duration_s"] + c["drain_s"] + 30):
                raise LabError("the workload clients did not finish in time:\n" +
                               "\n".join(p.tail(3) for p in clients if p.running()))
            bad = [p for p in clients if p.popen.returncode != 0]
            if bad:
                raise LabError(f"{bad[0].name} failed (status {bad[0].popen.returncode}):\n{bad[0].tail()}")
            log("      workload done; stopping servers, endpoints and the emulator")
            # Stop in reverse order: servers, then endpoints (they drain their
            # outstanding verdicts and write counters), then the emulator.
            procs.stop(servers, signal.SIGTERM, 10)
            time.sleep(0.3)
            backend.stop_endpoints(run_dir / "endpoints")
            procs.stop([emu], signal.SIGINT, 30)
            if emu.popen.returncode != 0:
                raise LabError(f"the emulator exited with status {emu.popen.returncode}:\n{emu.tail()}")
        finally:
            self._teardown(procs, backend)
        self.signals.check()  # a signal during the run or its teardown: no analysis, no further run
        (run_dir / "run.yaml").write_text("# flexplane lab run: resolved configuration (docs/lab.md)\n" +
                                         yaml.safe_dump(meta, sort_keys=False))
        try:
            summary = analysis.run_metrics(analysis.load_run(run_dir), receivers(c))
        except (analysis.DataError, KeyError, ValueError) as e:
            raise LabError(f"cannot analyse {run_dir}: {e}") from None
        (run_dir / "summary.yaml").write_text("# flexplane lab run summary (docs/lab.md)\n" +
                                             yaml.safe_dump(_plain(summary), sort_keys=False))
        return summary

    def _teardown(self, procs: Processes, backend: Backend) -> None:
        """Everything started ends, whatever happened. A signal meanwhile
        only sets the flag (Signals): teardown never checks it, so it always
        completes, and the caller stops the invocation afterwards."""
        log("      tearing down")
        try:
            procs.stop_all(10)
        finally:
            backend.down()

    def _eal(self, c: dict) -> list[str]:
        lc = c["emulator"]["lcores"]
        if not lc:
            cpus = os.cpu_count() or 1
            span = f"(0-{cpus - 1})" if cpus > 1 else "(0)"
            lc = f"0@{span},1@{span}"
        return [f"--lcores={lc}", "--no-huge", "-m", "256", "--no-pci", "--no-shconf"]

    # --- records -----------------------------------------------------------------
    def _write_experiment_record(self, hosts: dict[str, int]) -> None:
        rec = {"experiment_file": str(self.exp.path.resolve()), "git_commit": _git_commit(),
               "variants": {v.name: {"hosts": hosts[v.name], "config": v.config} for v in self.exp.variants}}
        (self.out / "experiment.yaml").write_text(
            "# flexplane lab experiment: every variant's resolved configuration (docs/lab.md)\n" +
            yaml.safe_dump(rec, sort_keys=False))

    def _row(self, spec: RunSpec, s: dict, status: str) -> dict:
        row: dict[str, Any] = {"variant": spec.variant.name, "repetition": spec.repetition, "seed": spec.seed,
                               "status": status}
        if not s:
            return row
        w, e, q = s["workload"], s["emulator"], s["queue"]
        kind = spec.variant.config["workload"]["kind"]
        if kind == "rpc":
            row.update({"requests": w["requests"], "not_ok": w["not_ok"], "short_mean_ms": w["short"]["mean"],
                        "short_p99_ms": w["short"]["p99"], "long_mean_ms": w["long"]["mean"],
                        "long_p99_ms": w["long"]["p99"]})
        elif kind == "bulk":
            row.update({"throughput_mbps": w["throughput_mbps"], "jain_median": w["jain_median"]})
        else:
            row.update({"queries": w["queries"], "complete": w["complete"], "qct_mean_ms": w["qct"]["mean"],
                        "qct_p99_ms": w["qct"]["p99"]})
        row.update({"queue_median_pkts": q["median_pkts"], "queue_p99_pkts": q["p99_pkts"],
                    "emulator_drops": e["drops"], "emulator_marks": e["marks"], "late_timeslots": e["late_timeslots"],
                    "max_lag_us": e["max_lag_us"], "on_time": e["on_time"], "checks_failed": ",".join(k for k, ok in s["checks"].items() if not ok)})
        return row

    def _one_line(self, spec: RunSpec, s: dict) -> str:
        w, e, q = s["workload"], s["emulator"], s["queue"]
        kind = spec.variant.config["workload"]["kind"]
        if kind == "rpc":
            head = (f"{w['ok']}/{w['requests']} requests ok; FCT short mean {w['short']['mean']:.2f} ms "
                    f"p99 {w['short']['p99']:.2f} ms, long mean {w['long']['mean']:.0f} ms")
        elif kind == "bulk":
            head = f"{w['throughput_mbps']:.1f} Mbit/s over {w['flows']} flows, Jain median {w['jain_median']:.3f}"
        else:
            head = f"{w['complete']}/{w['queries']} queries, QCT mean {w['qct']['mean']:.2f} ms p99 {w['qct']['p99']:.2f} ms"
        failed = [k for k, ok in s["checks"].items() if not ok]
        tail = (f"; queue median {q['median_pkts']:.0f} p99 {q['p99_pkts']:.0f} pkts; drops {e['drops']}, marks {e['marks']}; "
                f"late timeslots {e['late_timeslots']} of {e['timeslots']} ({100 * e['late_fraction']:.2f}%, "
                f"worst {e['max_lag_us'] / 1000:.1f} ms)")
        if not e["on_time"]:
            tail += (f"; LATE: more than {100 * e['late_threshold']:g}% of timeslots started late, so the rates "
                     "and FCTs above are not those of the emulated network")
        return head + tail + (f"; CHECKS FAILED: {', '.join(failed)}" if failed else "")

    def _write_runs_csv(self, rows: list[dict]) -> None:
        keys: list[str] = []
        for r in rows:
            for k in r:
                if k not in keys:
                    keys.append(k)
        with open(self.out / "runs.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})

    def _plot(self) -> None:
        py = REPO / ".venv" / "bin" / "python"
        p = subprocess.run([str(py if py.exists() else sys.executable), str(REPO / "plots" / "plot_lab.py"),
                            str(self.out)], capture_output=True, text=True)
        if p.returncode != 0:
            log(f"lab: plotting failed:\n{p.stderr.strip()}")
        else:
            for line in p.stdout.splitlines():
                log(f"   wrote {line}")


# Threads of flexplane-emulator live that are not engine cores (with the
# lcores the runner gives: the comm core is DPDK worker lcore 1).
_NOT_ENGINE = ("rte-worker-1", "eal-intr-thread", "telemetry-v2", "rte_mp_handle", "dpdk-intr")


# The engine sleeps when it is more than 100 us ahead of its next timeslot
# (EngineOptions::sleep_threshold_ns); with shorter timeslots it never is, so
# it spins, and the kernel stops a SCHED_FIFO thread that runs for more than
# sched_rt_runtime_us of every sched_rt_period_us (950 of 1000 ms): 50 ms
# stalls every second (measured: one bulk flow at 200 Mbit/s, 4.8 % of
# timeslots late, worst 50.1 ms, against 1.1 % and 1.4 ms without SCHED_FIFO).
MIN_RT_TIMESLOT_US = 100.0


def timeslot_us(c: dict) -> float:
    n = c["network"]
    return n.get("abstract_packet_bytes", 1500) * 8 / (n["link_rate_gbps"] * 1000)


def realtime_priority(c: dict) -> int:
    """emulator.realtime_priority, or 0 where the timeslot is too short for the
    engine to sleep (above; docs/lab.md, 'Fidelity')."""
    prio = c["emulator"]["realtime_priority"]
    if prio > 0 and timeslot_us(c) <= MIN_RT_TIMESLOT_US:
        log(f"lab: timeslots of {timeslot_us(c):.1f} us keep the engine spinning: it runs without SCHED_FIFO "
            f"(emulator.realtime_priority {prio} applies to timeslots over {MIN_RT_TIMESLOT_US:g} us)")
        return 0
    return prio


def _realtime_engine(pid: int, priority: int) -> list[int]:
    """Puts the emulator's engine threads under SCHED_FIFO `priority` (they
    sleep when ahead and must wake within a timeslot; the comm core, which
    polls, stays under normal scheduling). Returns the thread ids changed."""
    if priority <= 0:
        return []
    changed = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        try:
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        if name.startswith(_NOT_ENGINE):
            continue
        try:
            os.sched_setscheduler(int(task.name), os.SCHED_FIFO, os.sched_param(priority))
            changed.append(int(task.name))
        except PermissionError as e:
            # The machine's limit, not the file's: a VM or container without a
            # real-time budget refuses SCHED_FIFO even to root (the lent 16-core
            # machine did). The run goes on; its late timeslots say what it cost.
            log(f"lab: this machine refuses SCHED_FIFO ({e.strerror}): the engine runs under normal "
                "scheduling (run.yaml: engine_threads_realtime: []; emulator.realtime_priority: 0 "
                "asks for that and silences this)")
            return []
        except OSError as e:
            raise LabError(f"cannot give the emulator's engine thread {task.name} SCHED_FIFO {priority}: "
                           f"{e.strerror} (set emulator.realtime_priority: 0 to run without)") from None
    return changed


def _plain(x: Any) -> Any:
    """YAML-safe: NaN as null, tuples as lists."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _git_commit() -> str:
    p = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() or "unknown"
