"""`sorted`: the hrw protocol with ranks in name order (or reverse), as a user package would
define and register it. Nothing in rdzv_sim knows of it: its kit, one value naming its parts (an
aggregate round model, an invariant, a cost estimate, a settings strategy), is the whole story.

    RDZV_SIM_PROTOCOLS=userproto.sorted_hrw rdzv-sim run my-sorted.yaml
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

import rdzv_sim
from rdzv_sim.estimate import Cost
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.testing import Violation


class SortedSettings(HrwSettings):
    """hrw's settings, plus the order of ranks."""
    name: Literal["sorted"] = "sorted"
    order: Literal["name", "reverse"] = Field("name", description="ranks by host name, or reversed")


class SortedProtocol(HrwProtocol):
    name = "sorted"

    def rank_order(self, names: list[str]) -> list[str]:
        return sorted(names, reverse=self.cfg.order == "reverse")


def ranks_follow_names(tables, scenario) -> list[Violation]:
    """This protocol's own promise: in every round, rank i is the i-th name in its order."""
    ev = tables["events"]
    out = []
    for rnd, g in ev[ev["event"] == "rank_assigned"].groupby("round"):
        got = list(g.sort_values("rank")["node"])
        want = sorted(got, reverse=scenario.protocol.order == "reverse")
        if got != want:
            out.append(Violation("ranks_follow_names", f"ranks {got}, expected {want}", int(rnd)))
    return out


def settings(nodes: int):
    """What the property tests draw for it: both orders, any floor, a short last call."""
    from hypothesis import strategies as st
    return st.fixed_dictionaries({"order": st.sampled_from(["name", "reverse"]),
                                  "min_nodes": st.integers(1, nodes), "max_nodes": st.just(nodes),
                                  "last_call_timeout": st.integers(0, 3), "join_timeout": st.just(1e6)})


rdzv_sim.register_kit(rdzv_sim.Kit("sorted", SortedProtocol, SortedSettings,
                                   rdzv_sim.Capabilities(fidelities=("per_operation", "aggregate")), parts={
    "round_model": "rdzv_sim.aggregate.hrw_round:HrwRounds",   # hrw's honours its rank order
    "invariants": [ranks_follow_names], "settings_strategy": settings,
    "cost/per_operation": Cost(lambda n, sc: 1e-3 * n)}))
