"""`QuorumRounds`: the `quorum` protocol at round granularity.

Per operation, `QuorumProtocol` runs one `hrw` per replica group, under `<run_id>/g<g>`, its
rounds numbered g, g + G, ... Here each group is a cell of the aggregate job with hrw's round
model, read through the group's own settings (min = max = group_size) and protocol, so a
host's failure re-forms its group only, as per operation. The Lighthouse is not store traffic
(`protocols/quorum/lighthouse.py`): the training model replays it over the groups' lives
from the tables, at either fidelity.

The store's queue is each group's own here (one `Fifo` a cell), where per operation the groups
share one TCPStore: a group's rendezvous does not wait behind another's requests. Its error
against per operation is measured in reports/per_step_ft.md.
"""
from __future__ import annotations

from .hrw_round import HrwRounds
from .round_model import CellSpec


class QuorumRounds(HrwRounds):
    """hrw's rounds, one rendezvous per replica group."""

    @classmethod
    def cells(cls, job) -> list[CellSpec]:
        p = job.protocol
        by_group: dict[int, list[str]] = {g: [] for g in range(p.groups)}
        for h in job.hosts:
            by_group[p.group_of(job.nodes[h].info)].append(h)
        out = []
        for g, hosts in by_group.items():
            inner = p.group(g)
            sc = job.sc.model_copy(update={"protocol": inner.cfg})
            out.append(CellSpec(hosts, sc, inner, first=g, step=p.groups))
        return out


