"""Bad input to flexplane-emulator, one row per input (issue 21): the exit
status, the message's field and its place (file:line:col, or file:line in a
flow trace).

`check` and `run` share their validation (cli/emulator_main.cc, validate_run in
emulator/run/setup.h), so every row of a bad config is run both ways: both must
refuse it with the same message, and `run` must refuse it before it creates
its output folder."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("FLEXPLANE_BIN_DIR", REPO / "build")) / "flexplane-emulator"

TOPO = "topology: {kind: leaf_spine, racks: 2, endpoints_per_rack: 2, spines: 1}\n"  # 4 endpoints, 3 routers
TRACE_WL = "workload: {kind: trace, trace: tr.csv}\n"
RUN = "run: {duration_ms: 0.01, drain_ms: 0.05}\n"
BASE = TOPO + TRACE_WL + RUN  # lines 1-3
HEADER = "flow_id,src,dst,size_pkts,start_timeslot\n"
GOOD_TRACE = HEADER + "0,0,1,3,0\n1,2,3,2,1\n"
POISSON = "workload: {kind: poisson, load: 0.5, fixed_size_pkts: 3}\n"


@dataclass
class Case:
    id: str
    files: dict[str, str | bytes]        # name -> text (or bytes); a name ending in "/" is a folder
    expect: list[str]                     # substrings of stderr: the place and the field first
    rc: int = 2
    argv: list[str] | None = None         # default: both `check exp.yaml` and `run exp.yaml --out out`
    stdout: list[str] = field(default_factory=list)


CASES = [
    # --- item 3: check validates the trace and the workload against the topology, as run does
    Case("trace_binary_garbage", {"exp.yaml": BASE, "tr.csv": bytes(range(256)) * 4},
         ["tr.csv:1: expected the header 'flow_id,src,dst,size_pkts,start_timeslot', got '\\0\\x01\\x02"]),
    Case("trace_src_equals_dst", {"exp.yaml": BASE, "tr.csv": HEADER + "0,0,1,3,0\n1,2,2,3,0\n"},
         ["tr.csv:3: src and dst are both 2"]),
    Case("trace_id_out_of_range", {"exp.yaml": BASE, "tr.csv": HEADER + "0,0,9,3,0\n"},
         ["tr.csv:2: dst 9 is not an endpoint (the topology has 4, numbered 0..3)"]),
    Case("trace_duplicate_id", {"exp.yaml": BASE, "tr.csv": HEADER + "5,0,1,3,0\n5,1,0,3,0\n"},
         ["tr.csv:3: flow_id 5 already used on line 2"]),
    Case("incast_fan_in_above_endpoints",
         {"exp.yaml": TOPO + "workload: {kind: poisson, pattern: incast, fan_in: 9, load: 0.5, fixed_size_pkts: 3}\n"
          + RUN},
         ["exp.yaml:2:11: workload.fan_in: incast needs 1 <= fan_in <= num_endpoints - 1 = 3 ('9')"]),
    Case("schemes_disagree_on_endpoint_stamping",  # the endpoint contract was derived by run only
         {"exp.yaml": TOPO + "routers:\n  tor: {scheme: pfabric}\n  spine: {scheme: priority_by_size}\n" + POISSON
          + RUN},
         ["exp.yaml: endpoint.priority: routers' schemes want different endpoint stamping"]),
    Case("trace_names_a_folder", {"exp.yaml": TOPO + "workload: {kind: trace, trace: sub}\n" + RUN, "sub/": ""},
         ["exp.yaml:2:25: workload.trace: '", "sub' is a folder, not a file"]),
    Case("size_cdf_names_a_folder",
         {"exp.yaml": TOPO + "workload: {kind: poisson, load: 0.5, size_cdf: sub}\n" + RUN, "sub/": ""},
         ["exp.yaml:2:38: workload.size_cdf: '", "sub' is a folder, not a file"]),
    Case("topology_file_names_a_folder", {"exp.yaml": "topology: {file: sub}\n" + POISSON + RUN, "sub/": ""},
         ["exp.yaml:1:18: topology.file: '", "sub' is a folder, not a file"]),
    # --- item 6: silent acceptance
    Case("duplicate_top_level_key", {"exp.yaml": BASE + "topology: {kind: single_rack}\n", "tr.csv": GOOD_TRACE},
         ["exp.yaml:4:1: topology: key 'topology' given twice (first at exp.yaml:1:1)"]),
    Case("duplicate_nested_key",
         {"exp.yaml": TOPO + TRACE_WL + "run: {duration_ms: 0.01, duration_ms: 5}\n", "tr.csv": GOOD_TRACE},
         ["exp.yaml:3:26: run.duration_ms: key 'duration_ms' given twice (first at exp.yaml:3:7)"]),
    Case("rto_below_one_timeslot",
         {"exp.yaml": BASE + "transport: {kind: dctcp, min_rto_us: 0.5}\n", "tr.csv": GOOD_TRACE},
         ["exp.yaml:4:38: transport.min_rto_us: 0.5 us is shorter than one timeslot (1.2 us"]),
    Case("empty_output_dir", {"exp.yaml": BASE + 'output: {dir: ""}\n', "tr.csv": GOOD_TRACE},
         ["exp.yaml:4:15: output.dir: empty"]),
    Case("empty_out_option", {"exp.yaml": BASE, "tr.csv": GOOD_TRACE}, ["error: --out: empty folder name"],
         argv=["run", "exp.yaml", "--out", ""]),
    # --- PFC (issue 26; docs/pfc.md): the field and its place
    Case("pfc_xon_not_below_xoff",
         {"exp.yaml": BASE + "routers:\n  default: {pfc: {xoff_pkts: 8, xon_pkts: 9}}\n", "tr.csv": GOOD_TRACE},
         ["exp.yaml:5:33: routers.default.pfc.xon_pkts (pfc): xon_pkts (9) must be below xoff_pkts (8)"]),
    Case("pfc_not_a_bool", {"exp.yaml": BASE + "routers:\n  default: {pfc: maybe}\n", "tr.csv": GOOD_TRACE},
         ["exp.yaml:5:18: routers.default.pfc: 'maybe' is not true/false"]),
    Case("pfc_unknown_parameter",
         {"exp.yaml": BASE + "routers:\n  default: {pfc: {xof_pkts: 8}}\n", "tr.csv": GOOD_TRACE},
         ["exp.yaml:5:19: routers.default.pfc.xof_pkts (pfc): unknown parameter 'xof_pkts' (known: xoff_pkts,"]),
    Case("cores_above_routers_warns_and_caps", {"exp.yaml": BASE, "tr.csv": GOOD_TRACE},
         ["warning: exp.yaml: 256 cores for 3 routers: using 3"], rc=0,
         argv=["run", "exp.yaml", "--out", "out", "--cores", "256", "-q"], stdout=["flows 2: finished 2"]),
    # --- item 7: messages with a place; control bytes escaped
    Case("fat_tree_odd_k", {"exp.yaml": "topology: {kind: fat_tree, k: 5}\n" + POISSON + RUN},
         ["exp.yaml:1:11: topology (topology kind 'fat_tree'): parameter 'k': value 5 is odd"]),
    Case("leaf_spine_one_endpoint",
         {"exp.yaml": "topology: {kind: leaf_spine, racks: 1, endpoints_per_rack: 1}\n" + POISSON + RUN},
         ["exp.yaml:1:11: topology (topology kind 'leaf_spine'): parameters 'racks' x 'endpoints_per_rack': "
          "1 x 1 = 1 endpoints, must be in [2, 65000]"]),
    Case("check_a_folder", {"sub/": ""}, ["error: sub: is a folder, not a file"], argv=["check", "sub"]),
    Case("escape_sequence_in_yaml_key", {"exp.yaml": BASE + '"\\e[2Jfoo": 1\n', "tr.csv": GOOD_TRACE},
         ["exp.yaml:4:1: \\e[2Jfoo: unknown key '\\e[2Jfoo'"]),
    Case("escape_sequence_in_trace_cell", {"exp.yaml": BASE, "tr.csv": HEADER + "0,0,\x1b[31m1,3,0\n"},
         ["tr.csv:2: dst '\\e[31m1' is not an unsigned integer"]),
    # --- item 9: parameters and variants point at their own line and name the variant
    Case("misspelled_parameter_points_at_its_line",
         {"exp.yaml": TOPO + "routers:\n  default:\n    scheme: red\n    queue_manager:\n      min_th_pkts: 5\n"
          "      max_th_pktz: 9\n" + POISSON + RUN},
         ["exp.yaml:7:7: routers.default.queue_manager.max_th_pktz (queue_manager 'red'): "
          "unknown parameter 'max_th_pktz'"]),
    Case("misspelled_workload_key_points_at_its_line",
         {"exp.yaml": TOPO + "workload:\n  kind: poisson\n  load: 0.5\n  fixed_size_pkts: 3\n  fan_inn: 3\n" + RUN},
         ["exp.yaml:6:3: workload.fan_inn: unknown key 'fan_inn'"]),
    Case("misspelled_transport_parameter_points_at_its_line",
         {"exp.yaml": BASE + "transport:\n  kind: dctcp\n  min_rto_uss: 5\n", "tr.csv": GOOD_TRACE},
         ["exp.yaml:6:3: transport.min_rto_uss (transport dctcp): unknown parameter 'min_rto_uss'"]),
]

VARIANTS = (BASE + "variants:\n  good: {}\n  bad:\n    routers:\n      default:\n"
            "        queue_manager: {name: red, max_th_pktz: 9}\n")  # the bad key: line 9, column 36
VARIANT_ERROR = ("exp.yaml:9:36: routers.default.queue_manager.max_th_pktz (queue_manager 'red'): "
                 "unknown parameter 'max_th_pktz'")
CASES += [
    Case("variant_error_has_its_place_and_name", {"exp.yaml": VARIANTS, "tr.csv": GOOD_TRACE},
         [VARIANT_ERROR, "(in variant 'bad')"]),
    Case("variant_runs_although_another_is_broken", {"exp.yaml": VARIANTS, "tr.csv": GOOD_TRACE}, [], rc=0,
         argv=["run", "exp.yaml", "--variant", "good", "--out", "out", "-q"], stdout=["good", "flows 2: finished 2"]),
    Case("check_one_variant", {"exp.yaml": VARIANTS, "tr.csv": GOOD_TRACE}, [], rc=0,
         argv=["check", "exp.yaml", "--variant", "good"], stdout=["ok: exp.yaml variant good"]),
    Case("run_the_broken_variant", {"exp.yaml": VARIANTS, "tr.csv": GOOD_TRACE}, [VARIANT_ERROR, "(in variant 'bad')"],
         argv=["run", "exp.yaml", "--variant", "bad", "--out", "out"]),
    Case("unknown_variant_lists_the_variants", {"exp.yaml": VARIANTS, "tr.csv": GOOD_TRACE},
         ["exp.yaml: no variant named 'nope' (variants: good, bad)"], argv=["check", "exp.yaml", "--variant", "nope"]),
    Case("variant_alias_makes_a_cycle",  # the merge shares nodes: an alias can loop a tree back on itself
         {"exp.yaml": BASE + "routers: &x {default: {scheme: droptail}}\nvariants:\n  v: {routers: {extra: *x}}\n",
          "tr.csv": GOOD_TRACE},
         ["exp.yaml:", ": routers.extra.extra.extra", "nested too deeply or too large", "(in variant 'v')"]),
    Case("variant_switching_scheme_drops_the_base_parameters",
         {"exp.yaml": TOPO + "routers:\n  default: {scheme: red, queue_manager: {min_th_pkts: 5, max_th_pkts: 9}}\n"
          + POISSON + RUN + "variants:\n  red: {}\n  dctcp: {routers: {default: {scheme: dctcp}}}\n"},
         [], rc=0, argv=["check", "exp.yaml"], stdout=["ok: exp.yaml variant red", "ok: exp.yaml variant dctcp"]),
    Case("variant_switching_component_drops_its_parameters",
         {"exp.yaml": TOPO + "routers:\n  default: {queue_manager: {name: red, min_th_pkts: 5}}\n" + POISSON + RUN
          + "variants:\n  red: {}\n  tail: {routers: {default: {queue_manager: {name: droptail}}}}\n"},
         [], rc=0, argv=["check", "exp.yaml"], stdout=["ok: exp.yaml variant tail"]),
]


def materialise(tmp: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        if name.endswith("/"):
            (tmp / name).mkdir()
        elif isinstance(content, bytes):
            (tmp / name).write_bytes(content)
        else:
            (tmp / name).write_text(content)


def emulator(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(BIN), *args], capture_output=True, cwd=tmp, timeout=120)


def assert_message(r: subprocess.CompletedProcess[bytes], case: Case) -> None:
    err = r.stderr.decode("utf-8", errors="replace")
    out = r.stdout.decode("utf-8", errors="replace")
    assert r.returncode == case.rc, (r.returncode, out, err)
    for e in case.expect:
        assert e in err, (e, err)
    for e in case.stdout:
        assert e in out, (e, out)
    # Whatever the input held, a message never carries a control byte but its newline.
    assert all(b >= 0x20 and b != 0x7F or b == 0x0A for b in r.stderr), r.stderr


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(tmp_path: Path, case: Case) -> None:
    materialise(tmp_path, case.files)
    if case.argv is not None:
        assert_message(emulator(tmp_path, *case.argv), case)
        return
    # check and run: the same refusal, and run creates nothing.
    assert_message(emulator(tmp_path, "check", "exp.yaml"), case)
    r = emulator(tmp_path, "run", "exp.yaml", "--out", "out")
    assert_message(r, case)
    assert not (tmp_path / "out").exists(), "run created its output folder before refusing the config"
    assert not (tmp_path / "results").exists()


def test_check_is_ok_where_run_is(tmp_path: Path) -> None:
    """The rows above fail for the input alone: the same files with a good trace pass both."""
    materialise(tmp_path, {"exp.yaml": BASE, "tr.csv": GOOD_TRACE})
    assert emulator(tmp_path, "check", "exp.yaml").returncode == 0
    r = emulator(tmp_path, "run", "exp.yaml", "--out", "out", "-q")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "flows.csv").exists()
