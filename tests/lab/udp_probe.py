#!/usr/bin/env python3
"""Real packets for the NFQUEUE endpoint tests, run inside a host namespace.

    udp_probe.py send DST PORT --count N [--tos T] [--size B] [--gap-ms G] [--first-seq S]
    udp_probe.py recv PORT --seconds S [--v6] [--iface eth0]   -> JSON on stdout

`send` writes N datagrams, each carrying its sequence number, with the given
TOS / traffic class (ECN bits included: the kernel keeps what a UDP socket
sets). `recv` reports every datagram the kernel delivered with the TOS /
traffic class it arrived with (IP_RECVTOS / IPV6_RECVTCLASS), and captures
the same frames on the interface (AF_PACKET) so the IPv4 header checksum can
be checked byte for byte; plus the namespace's IP / UDP error counters.
"""
from __future__ import annotations

import argparse
import json
import select
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def snmp() -> dict[str, int]:
    out = {}
    lines = open("/proc/net/snmp").read().splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        proto = head.split(":")[0]
        for k, v in zip(head.split()[1:], vals.split()[1:]):
            out[f"{proto}.{k}"] = int(v)
    try:
        for line in open("/proc/net/snmp6"):
            k, v = line.split()
            out[k] = int(v)
    except OSError:
        pass
    return out


def send(a) -> None:
    fam = socket.AF_INET6 if ":" in a.dst else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, a.tos)
    else:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, a.tos)
    for i in range(a.count):
        payload = struct.pack("!I", a.first_seq + i) + bytes(max(0, a.size - 4))
        s.sendto(payload, (a.dst, a.port))
        if a.gap_ms:
            time.sleep(a.gap_ms / 1000)


def recv(a) -> None:
    fam = socket.AF_INET6 if a.v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if a.v6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
        s.bind(("::", a.port))
    else:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        s.bind(("0.0.0.0", a.port))
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    raw.bind((a.iface, 0))
    got, frames = [], []
    print("ready", file=sys.stderr, flush=True)
    end = time.time() + a.seconds
    while time.time() < end:
        r, _, _ = select.select([s, raw], [], [], 0.05)
        if s in r:
            data, anc, _, _ = s.recvmsg(65536, 64)
            tos = None
            for level, typ, val in anc:
                if (level, typ) in ((socket.IPPROTO_IP, socket.IP_TOS), (socket.IPPROTO_IPV6, socket.IPV6_TCLASS)):
                    tos = val[0] if len(val) == 1 else struct.unpack("i", val[:4])[0]
            got.append({"seq": struct.unpack("!I", data[:4])[0], "tos": tos, "len": len(data)})
        if raw in r:
            frame, addr = raw.recvfrom(65536)
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            eth_type = struct.unpack("!H", frame[12:14])[0]
            ip = frame[14:]
            if eth_type == 0x0800 and len(ip) >= 20 and ip[9] == 17:
                ihl = (ip[0] & 15) * 4
                dport = struct.unpack("!H", ip[ihl + 2:ihl + 4])[0]
                if dport == a.port:
                    frames.append({"tos": ip[1], "ip_checksum_ok": checksum(ip[:ihl]) == 0})
            elif eth_type == 0x86DD and len(ip) >= 48 and ip[6] == 17:
                dport = struct.unpack("!H", ip[42:44])[0]
                if dport == a.port:
                    frames.append({"tos": ((ip[0] & 15) << 4) | (ip[1] >> 4), "ip_checksum_ok": True})
    json.dump({"received": got, "frames": frames, "snmp": snmp()}, sys.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("dst")
    s.add_argument("port", type=int)
    s.add_argument("--count", type=int, default=10)
    s.add_argument("--tos", type=int, default=0)
    s.add_argument("--size", type=int, default=1000)
    s.add_argument("--gap-ms", type=float, default=2)
    s.add_argument("--first-seq", type=int, default=0)
    r = sub.add_parser("recv")
    r.add_argument("port", type=int)
    r.add_argument("--seconds", type=float, default=5)
    r.add_argument("--v6", action="store_true")
    r.add_argument("--iface", default="eth0")
    a = ap.parse_args()
    send(a) if a.cmd == "send" else recv(a)


if __name__ == "__main__":
    main()
