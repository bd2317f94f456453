"""`rdzv-sim validate`: one scenario simulated and run for real, then compared.

For protocols whose outcome is deterministic (static, hrw) in scenarios where arrival timing
cannot change membership, every round's members and ranks must be identical and the round
count equal. For all, each node's rendezvous latency (join started -> rank known) is compared:
the relative error per node-round, and its median.

Real processes do not start together (spawning and importing torch on a few cores staggers
them by seconds), and the first node of a round then waits for the last: that is arrival skew,
not protocol time. So the simulator runs twice: as configured, and *arrival-aligned*, with
every agent starting (and restarting) when its real counterpart began its first rendezvous.
The timing model is the same in both (calibration only); the aligned error is the verdict.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from rdzv_sim.api import run as run_sim
from rdzv_sim.protocols.registry import get
from rdzv_sim.scenario.load import load

from .launcher import anchor, run_real
from .parts import validator_of
from . import quorum_validate as _quorum  # noqa: F401 - registers the quorum protocol's validate
from rdzv_sim.events import Event


def _ranks(events: pd.DataFrame) -> list[dict]:
    ra = events[events["event"] == Event.RANK_ASSIGNED]
    return [dict(zip(g["node"], g["rank"].astype(int))) for _, g in ra.groupby("round", sort=True)]


def _latencies(events: pd.DataFrame) -> dict:
    ra = events[events["event"] == Event.RANK_ASSIGNED]
    out = {}
    for i, (_, g) in enumerate(ra.groupby("round", sort=True, observed=True)):
        for node, lat in zip(g["node"], g["latency"]):
            out[(i, node)] = float(lat)
    return out


def aligned(sc, real_events: pd.DataFrame):
    """The scenario with each node's (re)starts moved to when it really began to rendezvous."""
    ev = real_events.sort_values("t")
    data = sc.model_dump(mode="json")
    data["agent"]["process_start"] = 0.0
    restarts = [f for f in data["faults"] if f["kind"] == "restart"]
    faults = [f for f in data["faults"] if f["kind"] not in ("slow_join", "restart")]
    width = len(str(sc.cluster.nodes - 1))
    for i in range(sc.cluster.nodes):
        name = f"node{i:0{width}d}"                      # the simulator's (and launcher's) names
        mine = ev[ev["node"] == name]
        starts = mine[mine["event"] == Event.NODE_START]["t"].tolist()
        begins = mine[mine["event"] == Event.RENDEZVOUS_START]["t"].tolist()
        firsts = [next((b for b in begins if b >= s0), None) for s0 in starts]
        for k, (s0, b) in enumerate(zip(starts, firsts)):
            if b is None:
                continue
            if k == 0:
                faults.append({"kind": "slow_join", "node": i, "delay": round(b, 6)})
            else:
                faults.append({"kind": "restart", "node": i, "at": round(b, 6)})
    if not any(f["kind"] == "restart" for f in faults):    # none really happened: keep the plan
        faults += restarts
    data["faults"] = faults
    data["name"] = sc.name
    return load(data)


def compare(sim, real) -> tuple[pd.DataFrame, dict]:
    """Per node-round latencies side by side, and the verdict."""
    s_ranks, r_ranks = _ranks(sim.events), _ranks(real.events)
    s_lat, r_lat = _latencies(sim.events), _latencies(real.events)
    rows = []
    for key in sorted(set(s_lat) & set(r_lat)):
        s, r = s_lat[key], r_lat[key]
        rows.append({"round_index": key[0], "node": key[1], "sim_latency": s, "real_latency": r,
                     "rel_error": abs(s - r) / r if r > 0 else np.nan})
    table = pd.DataFrame(rows, columns=["round_index", "node", "sim_latency", "real_latency", "rel_error"])
    verdict = {
        "rounds_sim": len(s_ranks), "rounds_real": len(r_ranks),
        "same_round_count": len(s_ranks) == len(r_ranks),
        "same_members_and_ranks": s_ranks == r_ranks,
        "median_rel_error": float(table["rel_error"].median()) if len(table) else float("nan"),
    }
    return table, verdict


def pass_rule(protocol: str, deterministic: bool) -> str:
    """What `passed` judges, said beside it: the thresholds are rounds, members and ranks; the
    latency errors are measured and shown, never judged (real processes start in seconds)."""
    if deterministic:
        return (f"the same number of rounds, each with the same members and ranks ({protocol} is "
                "deterministic); median_rel_error is reported, not judged (no latency threshold)")
    return (f"always: {protocol}'s rounds depend on arrival order, so neither rounds nor latencies "
            "are judged; compare them by eye")


def _markdown(df: pd.DataFrame) -> str:
    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns)
    return head + "\n" + "\n".join("| " + " | ".join(cell(v) for v in row) + " |"
                                    for row in df.itertuples(index=False))


def _html(out: Path, name: str, verdict: dict, table: pd.DataFrame) -> None:
    """validation.html: the verdict, the overlaid timelines (embedded) and the latency table."""
    import base64
    import html
    from rdzv_sim.report.document import CSS
    png = base64.b64encode((out / "figures" / "overlay.png").read_bytes()).decode()
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>"
                   for k, v in verdict.items())
    (out / "validation.html").write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>validation: {html.escape(name)}</title>"
        f"<style>{CSS}</style></head><body><h1>Validation of {html.escape(name)}: simulated vs real</h1>"
        f"<table><tr><th>check</th><th>value</th></tr>{rows}</table>"
        f"<figure id='fig-overlay'><img alt='overlay' src='data:image/png;base64,{png}'>"
        f"<figcaption>Simulated and real timelines, overlaid</figcaption></figure>"
        f"<h2>Rendezvous latency per node and round</h2>"
        f"{table.to_html(index=False, float_format=lambda v: f'{v:.4g}')}"
        f"<p>Reports of each side: <a href='sim/report.html'>simulated</a>, "
        f"<a href='real/report.html'>real</a>.</p></body></html>")


def validate(scenario, out: str | Path, torch_static: bool = False, torchrun: bool = False,
             until=None) -> dict:
    """Simulate and run for real, compare. `torch_static`: the real side of a `static` scenario
    is torch's own StaticTCPRendezvous (as `c10d`'s always is torch's handler). `torchrun`: the
    real side is torchrun's own agents with this project's handler (torchrun_run.py). `until`:
    an anchor that ends the real run early once met (as `launcher.run_real`'s)."""
    sc = load(scenario)
    own = validator_of(sc.protocol.name)             # quorum: the real side is torchft's Lighthouse
    if own is not None:
        return own(sc, out)
    if torch_static and get(sc.protocol.name).caps.torch_baseline is None:
        raise ValueError(f"--torch-static compares the static model with torch's static "
                         f"rendezvous; this scenario runs {sc.protocol.name!r}")
    out = Path(out)
    if torchrun:
        if torch_static:
            raise ValueError("--torch-static and --torchrun: choose one real side")
        from .torchrun_run import TorchrunRun
        agents = TorchrunRun(sc, out / "agents")        # refuses what it cannot run, before any output
        agents.until = anchor(until)
        real = agents.run()                             # the agents' logs stay in out/agents
    out.mkdir(parents=True, exist_ok=True)
    if not torchrun:
        real = run_real(sc, torch_static=torch_static, until=until)   # node logs: a temporary folder
    sim = run_sim(aligned(sc, real.events))
    plain = run_sim(sc)
    sim.save(out / "sim")
    plain.save(out / "sim-as-configured")
    real.save(out / "real")
    table, verdict = compare(sim, real)
    verdict["median_rel_error_as_configured"] = compare(plain, real)[1]["median_rel_error"]
    table.to_csv(out / "latency_comparison.csv", index=False)
    spec = get(sc.protocol.name)
    deterministic = spec.caps.deterministic
    verdict["protocol"], verdict["deterministic"] = sc.protocol.name, deterministic
    verdict["real_side"] = (f"torch's own {spec.caps.torch_counterpart} handler" if spec.caps.torch_counterpart else
                            "torch StaticTCPRendezvous" if torch_static else
                            "torchrun's agents, --rdzv-backend=rdzv-sim" if torchrun else "this project's protocol")
    verdict["passed"] = (not deterministic) or (verdict["same_round_count"] and verdict["same_members_and_ranks"])
    verdict["passed_when"] = pass_rule(sc.protocol.name, deterministic)
    lines = [f"# Validation of {sc.name}: simulated vs real", "",
             f"Protocol `{sc.protocol.name}`, {sc.cluster.nodes} nodes (real: "
             f"{'a torchrun agent' if torchrun else 'one process'} each on 127.0.0.x, a real TCPStore, "
             f"gloo). Rebuild: `rdzv-sim validate {sc.name}{' --torchrun' if torchrun else ''}`.", "",
             "| check | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in verdict.items()]
    lines += ["", "## Rendezvous latency per node and round (seconds)", "",
              _markdown(table) if len(table) else "(no common rounds)", "",
              "The real processes start in a few seconds (torch import), the simulated ones at once: "
              "compare per-round latencies and memberships, not absolute times. The simulator's "
              "store, network and start-up parameters come from `rdzv-sim calibrate` when given "
              "(`--calibration`), else from the scenario's defaults.", ""]
    from rdzv_sim.report.figures import overlay
    (out / "figures").mkdir(exist_ok=True)
    (out / "figures" / "overlay.png").write_bytes(overlay({"simulated": sim.events, "real": real.events},
                                                          sc.duration))
    lines += ["## Timelines", "", "![simulated and real timelines](figures/overlay.png)", ""]
    (out / "validation.md").write_text("\n".join(lines))
    _html(out, sc.name, verdict, table)
    from rdzv_sim.report import build
    for name, res in (("sim", sim), ("real", real)):
        build(res.tables(), sc.model_dump(mode="json"), out / name)
    (out / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
    return verdict
