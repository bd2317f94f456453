"""Regenerate the reports of the bundled scenarios: `python benchmarks/scenario_reports.py [DIR] [NAME ...]`.

Writes DIR/<scenario>/report.html, report.md, figures/ and the rounds and summary tables
(default DIR: reports/scenarios; default: every bundled scenario but the slow ones, which run
only when named), then DIR/README.md linking every report in DIR.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from rdzv_sim.api import run
from rdzv_sim.report.document import build
from rdzv_sim.scenario.load import bundled


SLOW = {"llama3-54d", "llama3-54d-quorum"}   # 15-35 min per-operation on a 2-core machine: only when named


def main(out: Path, names: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in names or [n for n in bundled() if n not in SLOW]:
        r = run(name)
        d = out / name
        build(r.tables(), r.scenario.model_dump(mode="json"), d)
        r.rounds.to_csv(d / "rounds.csv", index=False)
        r.summary.to_csv(d / "summary.csv", index=False)
        print(f"{name}: {d}")
    index = ["# Reports of the bundled scenarios", "",
             "Regenerate with `make reports`. Each links an HTML report (plots embedded) and its "
             "Markdown twin.", "", "| scenario | protocol | nodes | rounds | rdzv latency p50 (s) | report |",
             "|---|---|---|---|---|---|"]
    for d in sorted(p for p in out.iterdir() if (p / "summary.csv").exists()):
        s = pd.read_csv(d / "summary.csv").iloc[0]
        index.append(f"| {d.name} | {s.protocol} | {s.nodes} | {s.rounds_completed} | "
                     f"{s.rdzv_latency_p50:.3g} | [html]({d.name}/report.html), [md]({d.name}/report.md) |")
    (out / "README.md").write_text("\n".join(index) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(Path(args[0]) if args else Path("reports/scenarios"), args[1:] or None)
