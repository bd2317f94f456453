"""Reports: produced by `run`, rebuilt by `report DIR`, readable at 10,000 nodes, and shown by
a real headless browser."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rdzv_sim
from rdzv_sim.report import FIGURES, build, from_dir
from rdzv_sim.trace import RunStats, events_table, rounds_table, summary_table
from rdzv_sim.training import round_spans


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rdzv_sim", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    r = cli("run", "quickstart", "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_run_writes_html_and_markdown_with_every_figure(run_dir):
    html = (run_dir / "report.html").read_text()
    md = (run_dir / "report.md").read_text()
    for name in FIGURES:
        assert f"id='fig-{name}'" in html and "data:image/png;base64," in html
        assert f"(figures/{name}.png)" in md
        png = (run_dir / "figures" / f"{name}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "rounds_completed" in html and "quickstart" in md


def test_the_report_opens_with_what_happened_and_what_it_cost(run_dir):
    """quickstart: host 3 crashes at 120 s, the survivors' collective times out at 150 s, they
    re-form at 7 hosts and grow back to 8 once host 3 is back (200 s). The report says so in
    sentences, with the numbers, before any figure; the table after gives every unit."""
    md = (run_dir / "report.md").read_text()
    short = md[md.index("## In short"):md.index("## Figures")]
    assert "8 hosts x 8 GPUs, the hrw protocol" in short
    assert "node3 crash at t = 120.0 s" in short and "left it at 150.0 s" in short
    assert "with 7 hosts" in short and "grew back to 8 hosts at 20" in short
    summary = pd.read_parquet(run_dir / "summary.parquet").iloc[0]
    assert f"kept {summary['ettr']:.1%} of the run's time (ETTR)" in short
    assert "Young's interval" in short
    assert md.index("## Figures") < md.index("## Summary")
    assert "| metric | value | unit |" in md and "| duration | 400 | s |" in md
    html = (run_dir / "report.html").read_text()
    assert html.index("In short") < html.index("fig-timeline") < html.index("<th>unit</th>")


def test_report_rebuilds_from_saved_tables_alone(run_dir, tmp_path):
    shutil.copytree(run_dir, tmp_path / "copy")
    for f in ("report.html", "report.md"):
        (tmp_path / "copy" / f).unlink()
    r = cli("report", str(tmp_path / "copy"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "copy" / "report.html").stat().st_size > 10_000


def test_missing_tables_is_a_clear_error(tmp_path):
    r = cli("report", str(tmp_path))
    assert r.returncode == 2 and "events.parquet" in r.stderr and "Traceback" not in r.stderr


def _synthetic(n: int, rounds: int = 6):
    """A 10,000-node trace built directly (the report must not care who produced it)."""
    rows, t = [], 0.0
    names = [f"node{i:05d}" for i in range(n)]
    for name in names:
        rows.append((0.0, name, "node_start", None, None, None, ""))
    for r in range(rounds):
        members = names[: n - 50 * r]
        t += 100.0
        for rank, name in enumerate(members):
            rows.append((t, name, "join", r, None, None, ""))
            d = {"nnodes": len(members), "first_rank": rank * 8, "master": members[0],
                 "digest": f"d{r}", "latency": float(1 + (rank % 97) / 50)}
            rows.append((t + 2, name, "rank_assigned", r, rank, len(members) * 8, json.dumps(d)))
            rows.append((t + 3, name, "workers_started", r, rank, len(members) * 8, ""))
        for name in names[n - 50 * (r + 1): n - 50 * r]:
            rows.append((t + 50, name, "fault_crash", r, None, None, ""))
        for name in names[: n - 50 * (r + 1)]:
            rows.append((t + 80, name, "round_left", r, None, None, ""))
    ev = events_table(rows, "synthetic", 0)
    rd = rounds_table(ev)
    for c in ("hrw", "modulo", "ring", "fair_share"):
        rd[f"shards_moved_{c}"] = np.arange(len(rd)) * 10
    summ = summary_table(ev, rd, RunStats(duration=1000.0, protocol="hrw", nodes=n), "synthetic", 0,
                         None, round_spans(ev, 1000.0))
    return {"events": ev, "rounds": rd, "summary": summ, "store_load": None}


def test_ten_thousand_nodes_stay_readable_and_small(tmp_path):
    tables = _synthetic(10_000)
    paths = build(tables, {"name": "synthetic", "duration": 1000.0, "cluster": {"nodes": 10_000}}, tmp_path)
    size = paths["html"].stat().st_size
    assert size < 3_000_000, size                       # aggregated, not one line per node


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it: apt-get install chromium)")
def test_headless_browser_shows_the_plots(run_dir, tmp_path):
    shot = tmp_path / "shot.png"
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
                        "--window-size=1200,2400", f"--screenshot={shot}",
                        (run_dir / "report.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists(), r.stderr[-2000:]
    import matplotlib.image as mpimg
    img = mpimg.imread(shot)
    rgb = img[..., :3]
    # the figures are there: many distinct colours, and the plot colours (not just text)
    colourful = (rgb.max(axis=2) - rgb.min(axis=2)) > 0.3
    assert colourful.mean() > 0.02, colourful.mean()
