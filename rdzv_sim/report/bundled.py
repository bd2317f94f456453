"""Regenerate the reports of every bundled scenario: `python -m rdzv_sim.report.bundled [DIR]`.

Writes DIR/<scenario>/report.html, report.md, figures/ and the rounds and summary tables
(default DIR: reports/scenarios), plus DIR/README.md linking them all.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..api import run
from ..scenario.load import bundled
from .document import build


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    index = ["# Reports of the bundled scenarios", "",
             "Regenerate with `make reports`. Each links an HTML report (plots embedded) and its "
             "Markdown twin.", "", "| scenario | protocol | nodes | rounds | rdzv latency p50 (s) | report |",
             "|---|---|---|---|---|---|"]
    for name in bundled():
        r = run(name)
        d = out / name
        build({"events": r.events, "rounds": r.rounds, "summary": r.summary,
               "store_load": r.store_load}, r.scenario.model_dump(mode="json"), d)
        r.rounds.to_csv(d / "rounds.csv", index=False)
        r.summary.to_csv(d / "summary.csv", index=False)
        s = r.summary.iloc[0]
        index.append(f"| {name} | {s.protocol} | {s.nodes} | {s.rounds_completed} | "
                     f"{s.rdzv_latency_p50:.3g} | [html]({name}/report.html), [md]({name}/report.md) |")
        print(f"{name}: {d}")
    (out / "README.md").write_text("\n".join(index) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "reports/scenarios"))
