"""The unfinished-flows panel of plots/plot_fct.py: readable labels, and no empty panel.

    .venv/bin/python -m pytest -q plots/test_plot_fct.py

The demo's six schemes used to get vertical bars with two-line labels that ran into each other
("0 of 28040 of 2804…"), and a panel of zero-height bars when every flow finished.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Dict, List

PLOTS = Path(__file__).resolve().parent
sys.path.insert(0, str(PLOTS))

import plot_fct  # noqa: E402
from plot_fct import BucketStats  # noqa: E402

# The demo's schemes, in its order; names as long as a user's variants get.
SCHEMES = ["fifo_droptail", "red_ecn", "dctcp", "drr", "priority_by_size", "pfabric"]


def per_scheme(unfinished: Dict[str, int], flows: int = 28040) -> Dict[str, List[BucketStats]]:
    buckets = plot_fct.make_buckets(plot_fct.DEFAULT_EDGES_PKTS, 1500)
    out = {}
    for s in SCHEMES:
        u = unfinished.get(s, 0)
        rows = [BucketStats(s, b.name, 100, 2.0 + i, 9.0 + i, 0) for i, b in enumerate(buckets)]
        rows.append(BucketStats(s, "all", flows - u, 3.0, 20.0, u))
        out[s] = rows
    return out


def draw(stats: Dict[str, List[BucketStats]]):
    buckets = plot_fct.make_buckets(plot_fct.DEFAULT_EDGES_PKTS, 1500)
    fig = plot_fct.figure(stats, buckets, "scheduler_comparison", "network_slowdown")
    fig.canvas.draw()
    return fig


def test_no_panel_but_a_note_when_every_flow_finished() -> None:
    fig = draw(per_scheme({}))
    try:
        assert [ax.get_title() for ax in fig.axes] == ["mean slowdown by flow size",
                                                      "99th percentile slowdown by flow size"]
        notes = [t.get_text() for t in fig.texts]
        assert "every flow finished in every scheme (28040 flows each)" in notes
    finally:
        plot_fct.plt.close(fig)


def test_unfinished_labels_do_not_overlap_and_stay_in_the_figure() -> None:
    # Counts of every width, zero included, and one scheme far above the rest.
    fig = draw(per_scheme({"fifo_droptail": 2819, "red_ecn": 0, "dctcp": 315, "drr": 28040 - 1,
                           "priority_by_size": 1, "pfabric": 0}))
    try:
        assert len(fig.axes) == 3
        ax = fig.axes[2]
        assert ax.get_title() == "flows not finished by end of run"
        labels = [t for t in ax.texts]
        assert [t.get_text() for t in labels] == [
            "2819 of 28040 (10.0%)", "0 of 28040 (0%)", "315 of 28040 (1.1%)", "28039 of 28040 (99.9%)",
            "1 of 28040 (0.0036%)", "0 of 28040 (0%)"]
        renderer = fig.canvas.get_renderer()
        boxes = [t.get_window_extent(renderer) for t in labels]
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                assert not boxes[i].overlaps(boxes[j]), (labels[i].get_text(), labels[j].get_text())
        # Inside the panel: no label runs off into the figure's edge or the next panel.
        panel = ax.get_window_extent(renderer)
        for t, b in zip(labels, boxes):
            assert panel.x0 <= b.x0 and b.x1 <= panel.x1 and panel.y0 <= b.y0 and b.y1 <= panel.y1, t.get_text()
        # One row per scheme, first on top, named on the axis.
        rows = {t.get_text(): t.get_position()[1] for t in ax.get_yticklabels()}
        assert sorted(rows, key=rows.get, reverse=True) == SCHEMES
    finally:
        plot_fct.plt.close(fig)


def test_plot_writes_a_png_in_either_layout(tmp_path: Path) -> None:
    for unfinished in ({}, {"dctcp": 3}):
        png = tmp_path / f"fct_{len(unfinished)}.png"
        buckets = plot_fct.make_buckets(plot_fct.DEFAULT_EDGES_PKTS, 1500)
        plot_fct.plot(per_scheme(unfinished), buckets, png, "t")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
