"""Reader for a run's sampled queue occupancy, in either format the emulator
writes (docs/output-format.md, `output.occupancy`):

- occupancy.bin (the default): a compact binary file, per router a row per
  sample with a column per port;
- occupancy.csv: one row per (time, router, port), for small runs.

Standard library only (struct, array, json), so tests and scripts can read it
without numpy; numpy.frombuffer(trace.packets, dtype=numpy.uint32) views the
arrays without a copy.

    from occupancy_io import read_occupancy_bin, find_occupancy, read_long
    occ = read_occupancy_bin(Path("results/run/occupancy.bin"))
    tor0 = occ.router("tor0")
    tor0.port_packets(3)        # packets queued at tor0 port 3, one value per sample
"""
from __future__ import annotations

import array
import json
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

MAGIC = b"FPOCC1\n\0"
FILES = ("occupancy.bin", "occupancy.csv")  # in the order a results folder is searched


class OccupancyError(Exception):
    """The file is not a valid occupancy file; the message names it."""


@dataclass
class RouterTrace:
    name: str
    tier: str
    ports: int
    times: array.array      # 'Q': sampled timeslots, n values
    packets: array.array    # 'I': n * ports values, row-major (sample, port)
    bytes: array.array      # 'I': the same in bytes (saturating at 2^32 - 1); empty if packet_bytes > 0
    packet_bytes: int = 0   # > 0: every queued packet had this size, so bytes = packets * packet_bytes

    @property
    def samples(self) -> int:
        return len(self.times)

    def port_packets(self, port: int) -> List[int]:
        return list(self.packets[port::self.ports])

    def port_bytes(self, port: int) -> List[int]:
        if self.packet_bytes:
            return [min(x * self.packet_bytes, 2**32 - 1) for x in self.packets[port::self.ports]]
        return list(self.bytes[port::self.ports])

    def bytes_at(self, i: int) -> int:
        return min(self.packets[i] * self.packet_bytes, 2**32 - 1) if self.packet_bytes else self.bytes[i]


@dataclass
class Occupancy:
    timeslot_ns: float
    interval_timeslots: int
    routers: List[RouterTrace] = field(default_factory=list)

    def router(self, name: str) -> RouterTrace:
        for r in self.routers:
            if r.name == name:
                return r
        raise KeyError(name)


def _array(code: str, data: bytes, offset: int, count: int, path: Path) -> array.array:
    a = array.array(code)
    end = offset + count * a.itemsize
    if end > len(data):
        raise OccupancyError(f"{path}: truncated (needs {end} bytes, has {len(data)})")
    a.frombytes(data[offset:end])
    if sys.byteorder != "little":
        a.byteswap()
    return a


def read_occupancy_bin(path: Path) -> Occupancy:
    data = Path(path).read_bytes()
    if len(data) < 12 or data[:8] != MAGIC:
        raise OccupancyError(f"{path}: not a flexplane occupancy file (bad magic)")
    (hlen,) = struct.unpack_from("<I", data, 8)
    try:
        header = json.loads(data[12:12 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise OccupancyError(f"{path}: bad header: {e}") from None
    if header.get("format") != "flexplane-occupancy" or header.get("version") != 1:
        raise OccupancyError(f"{path}: unsupported format {header.get('format')!r} version {header.get('version')!r}")
    occ = Occupancy(float(header["timeslot_ns"]), int(header["interval_timeslots"]))
    offset = 12 + hlen
    for r in header["routers"]:
        n, ports = int(r["samples"]), int(r["ports"])
        times = _array("Q", data, offset, n, path)
        offset += 8 * n
        packets = _array("I", data, offset, n * ports, path)
        offset += 4 * n * ports
        packet_bytes = int(r.get("packet_bytes", 0))
        nbytes = array.array("I")
        if not packet_bytes:
            nbytes = _array("I", data, offset, n * ports, path)
            offset += 4 * n * ports
        occ.routers.append(RouterTrace(r["name"], r["tier"], ports, times, packets, nbytes, packet_bytes))
    if offset != len(data):
        raise OccupancyError(f"{path}: {len(data) - offset} bytes after the last router")
    return occ


def find_occupancy(folder: Path) -> Optional[Path]:
    """The occupancy file of a run folder (binary preferred), or None."""
    for name in FILES:
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


def read_long(path: Path) -> Dict[str, list]:
    """Either format as the CSV's columns (timeslot, time_us, router, port,
    packets, bytes), one entry per (time, router, port), sorted by (time,
    router order, port) like occupancy.csv."""
    path = Path(path)
    if path.suffix == ".csv":
        import csv
        cols: Dict[str, list] = {c: [] for c in ("timeslot", "time_us", "router", "port", "packets", "bytes")}
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                for c in cols:
                    v = row[c]
                    cols[c].append(v if c == "router" else float(v))
        return cols
    occ = read_occupancy_bin(path)
    rows = []
    for ri, r in enumerate(occ.routers):
        for i, t in enumerate(r.times):
            for p in range(r.ports):
                rows.append((t, ri, p, r.packets[i * r.ports + p], r.bytes_at(i * r.ports + p)))
    rows.sort()
    us = occ.timeslot_ns / 1000.0
    return {"timeslot": [float(x[0]) for x in rows], "time_us": [x[0] * us for x in rows],
            "router": [occ.routers[x[1]].name for x in rows], "port": [float(x[2]) for x in rows],
            "packets": [float(x[3]) for x in rows], "bytes": [float(x[4]) for x in rows]}


def write_occupancy_bin(path: Path, occ: Occupancy) -> None:
    """Writes `occ` in the emulator's binary layout (tests, conversions)."""
    routers = []
    for r in occ.routers:
        if len(r.packets) != r.samples * r.ports or (not r.packet_bytes and len(r.bytes) != r.samples * r.ports):
            raise ValueError(f"router {r.name}: {r.samples} samples x {r.ports} ports needs that many values")
        routers.append({"name": r.name, "tier": r.tier, "ports": r.ports, "samples": r.samples,
                        "packet_bytes": r.packet_bytes})
    header = json.dumps({"format": "flexplane-occupancy", "version": 1, "timeslot_ns": occ.timeslot_ns,
                         "interval_timeslots": occ.interval_timeslots, "routers": routers}).encode() + b"\n"
    with open(path, "wb") as fh:
        fh.write(MAGIC + struct.pack("<I", len(header)) + header)
        for r in occ.routers:
            for code, values in (("Q", r.times), ("I", r.packets), ("I", [] if r.packet_bytes else r.bytes)):
                a = array.array(code, values)
                if sys.byteorder != "little":
                    a.byteswap()
                fh.write(a.tobytes())
