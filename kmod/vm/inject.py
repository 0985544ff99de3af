"""Captures the emulator's VERDICTS datagrams to one VM and sends forged
copies of them, on raw Ethernet (AF_PACKET), inside the lab's namespace.

    python3 inject.py sniff IFACE DST_IP SECONDS OUT.json
        frames on IFACE from the emulator (UDP source port 9977) to DST_IP
        that carry a VERDICTS message with at least one verdict
    python3 inject.py send IFACE IN.json KIND
        KIND  replay      the captured frames, byte for byte (old verdicts)
              session     the same with another session epoch
              src         the same from another IPv4 source address
              port        the same from another UDP source port
              garbage     a datagram that is not a flexplane message
    prints {"sent": N, "entries": E} (E: verdict entries in what was sent)
"""
from __future__ import annotations

import json
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PORT = 9977


def ip_checksum(hdr: bytes) -> int:
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def parse(frame: bytes):
    """(ip header offset, ihl bytes, udp offset) of an IPv4/UDP frame, else None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    if frame[23] != 17:
        return None
    return 14, ihl, 14 + ihl


def sniff(iface: str, dst: str, seconds: float, out: str) -> None:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.settimeout(0.2)
    want = socket.inet_aton(dst)
    frames, deadline = [], time.time() + seconds
    while time.time() < deadline and len(frames) < 20:
        try:
            frame = s.recv(65535)
        except socket.timeout:
            continue
        p = parse(frame)
        if not p:
            continue
        ip, ihl, udp = p
        if frame[ip + 16:ip + 20] != want or struct.unpack("!H", frame[udp:udp + 2])[0] != PORT:
            continue
        msg = frame[udp + 8:]
        # header: magic 0x4650, version 1, type 6 (VERDICTS); count at byte 14
        if len(msg) >= 24 and msg[:4] == b"FP\x01\x06" and struct.unpack("!H", msg[14:16])[0] > 0:
            frames.append(frame.hex())
    json.dump(frames, open(out, "w"))
    print(json.dumps({"captured": len(frames)}))


def forge(frame: bytes, kind: str) -> bytes:
    ip, ihl, udp = parse(frame)
    f = bytearray(frame)
    msg_off = udp + 8
    if kind == "session":
        old = struct.unpack("!I", f[msg_off + 4:msg_off + 8])[0]
        f[msg_off + 4:msg_off + 8] = struct.pack("!I", (old ^ 0x5A5A5A5A) or 1)
    elif kind == "src":
        f[ip + 12:ip + 16] = socket.inet_aton("10.77.0.254")
    elif kind == "port":
        f[udp:udp + 2] = struct.pack("!H", PORT + 1)
    elif kind == "garbage":
        body = b"not a flexplane message"
        f = f[:msg_off] + bytearray(body)
        f[ip + 2:ip + 4] = struct.pack("!H", ihl + 8 + len(body))
        f[udp + 4:udp + 6] = struct.pack("!H", 8 + len(body))
    f[udp + 6:udp + 8] = b"\x00\x00"  # IPv4 UDP: checksum 0 = none
    f[ip + 10:ip + 12] = b"\x00\x00"
    f[ip + 10:ip + 12] = struct.pack("!H", ip_checksum(bytes(f[ip:ip + ihl])))
    return bytes(f)


def send(iface: str, path: str, kind: str) -> None:
    frames = [bytes.fromhex(h) for h in json.load(open(path))]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    entries = 0
    for frame in frames:
        out = frame if kind == "replay" else forge(frame, kind)
        s.send(out)
        if kind != "garbage":
            entries += struct.unpack("!H", frame[parse(frame)[2] + 8 + 14:][:2])[0]
        time.sleep(0.002)
    print(json.dumps({"sent": len(frames), "entries": entries}))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "sniff":
        sniff(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5])
    elif len(sys.argv) == 5 and sys.argv[1] == "send":
        send(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
