"""(e) malformed, truncated and forged packets (built by inject.py from raw
bytes, sent from an endpoint namespace over a UDP socket and over AF_PACKET)
are counted in the emulator's comm_counters.csv and dropped without a crash;
the emulator keeps serving real endpoints afterwards."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from live_harness import assert_exactly_once, read_counters

INJECT = str(Path(__file__).resolve().parent / "inject.py")


def inject(net, ns: str, *args: str) -> dict:
    p = net.exec(ns, [sys.executable, INJECT, *args], timeout=30)
    return json.loads(p.stdout)


def test_malformed_packets(live_run):
    net = live_run.net
    ns = net.eps[3]
    live_run.start_emulator("af_packet")

    # From a known endpoint address: every protocol-level malformation.
    known = inject(net, ns, "udp", net.endpoint_ip(3))
    rejects = [r for r in known["replies"] if r["type"] == 3]
    assert any(r["code"] == 1 and r["version"] == 9 for r in rejects), known  # REJECT(VERSION), in the HELLO's version
    # From an address the topology does not know.
    net.exec(ns, ["ip", "addr", "add", "10.77.0.99/24", "dev", "veth0"])
    unknown = inject(net, ns, "udp", "10.77.0.99")
    assert any(r["type"] == 3 and r["code"] == 5 for r in unknown["replies"]), unknown  # UNKNOWN_ENDPOINT
    net.exec(ns, ["ip", "addr", "del", "10.77.0.99/24", "dev", "veth0"])
    # Hand-made frames: bad IP / UDP headers, forged source addresses.
    neigh = net.exec(ns, ["ip", "neigh", "show", "10.77.0.2"]).stdout
    mac = re.search(r"lladdr ([0-9a-f:]{17})", neigh)
    assert mac, f"emulator MAC not resolved: {neigh!r}"
    raw = inject(net, ns, "raw", "veth0", mac.group(1), net.endpoint_ip(3))

    assert live_run.emu.poll() is None, "emulator died:\n" + live_run.emu_log.read_text()

    # It still serves real endpoints, exactly once.
    live_run.start_endpoints(limit_s=40)
    codes = live_run.wait_endpoints(timeout=60)
    assert codes == [0, 0, 0, 0], f"endpoint exit codes {codes}\n{live_run.endpoint_logs()}"
    assert live_run.stop_emulator() == 0, live_run.emu_log.read_text()
    total = assert_exactly_once(live_run)

    cc = read_counters(live_run.emu_out / "comm_counters.csv")
    # Not counted below: well-formed messages (3), and IP fragments, which
    # the veth/bridge path may merge or hold back before DPDK reads them.
    sent_malformed = (len(known["sent"]) - 3 - 1) + (len(raw["sent"]) - 1)
    assert cc["malformed"] >= sent_malformed, {k: v for k, v in cc.items() if v}
    for name in ["proto_decode", "unknown_src", "ip_bad_checksum", "ip_bad_version", "ip_bad_ihl", "ip_bad_length",
                 "ip_truncated", "udp_bad_length", "udp_truncated", "ip_not_udp", "non_ipv4",
                 "arp_malformed"]:
        assert cc[f"rx_drop_{name}"] > 0, (name, {k: v for k, v in cc.items() if v})
    assert cc["rejects_unknown"] >= 2  # the UDP HELLO from 10.77.0.99 and the forged-source HELLO
    assert cc["requests"] == total  # no garbage reached the engine
