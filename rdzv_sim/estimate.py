"""What a run will cost before it starts: rounds from the scenario's faults, seconds from the
cost of one round per fidelity and protocol, plus a run's fixed cost (measured on a 2-core VM:
reports/estimates.md, which sets each bundled scenario's estimate beside its run). It is there
so that no one waits a silent hour, not to promise a time."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .protocols.registry import get

LIMIT_S = 600.0                 # longer than this needs --long on the command line

OVERHEAD_S = 0.06               # a run's own cost: set-up, tables (reports/estimates.md)
PLACEMENT = 1.2e-8              # the shard-moves table's shortlists: seconds a shard and host
# a run's events in memory, at its peak: bytes a row (frontier-100k's week: 1.6 GB, 19 million
# rows; reports/frontier.md), and rows a host and round (its join, rank, workers and leaving;
# outputs.events all adds its rendezvous start and confirmation)
BYTES_A_ROW = 70
ROWS_A_HOST_ROUND = {"lean": 4, "all": 6}
HOLD_GB = 4.0                   # a run that would hold more is told of outputs.stream
PER_STORE_OP = 1.2e-5           # c10d per-operation: seconds per store request (reports/estimates.md)


def c10d_round(n: int, sc) -> float:
    """A c10d round is a compare-and-set storm: about 0.7 n^2 attempts when everyone restarts
    at once, unless the store cannot serve that many within the join timeout (then the storm
    ends there: the agents time out)."""
    from .protocols.c10d.state import blob_size
    service = sc.store.service(2 * blob_size(n, 0, 8))
    served = (sc.protocol.join_timeout + 60.0) / max(service, 1e-9)
    return PER_STORE_OP * min(0.7 * n * n, served)


@dataclass(frozen=True)
class Cost:
    """Seconds of simulation per round of n hosts at one fidelity, and what to say beside it."""
    per_round: Callable           # (n, scenario) -> seconds
    hint: Callable | None = None  # (n) -> extra words for the refusal, or ""


def cost_of(protocol: str, fidelity: str) -> Cost | None:
    """The protocol's kit's `cost/<fidelity>` part (a protocol without one is priced as hrw)."""
    return get(protocol).part(f"cost/{fidelity}")


# the built-in kits' costs: seconds of simulation per round of n nodes (reports/sim_speed.md,
# reports/scale_c10d.md; the aggregate hrw and c10d per operation set again by reports/estimates.md)
HRW_PER_OPERATION = Cost(lambda n, sc: 3.8e-4 * n)
STATIC_PER_OPERATION = Cost(lambda n, sc: 2.5e-4 * n)
C10D_PER_OPERATION = Cost(c10d_round)
HRW_AGGREGATE = Cost(lambda n, sc: 3.2e-3 + 1.6e-6 * n)     # a round's fixed part, and its members


def quorum_round(n: int, sc) -> float:
    """A quorum job's round re-forms one replica group (a fixed cost, less in a job of a few
    hosts), and every group steps through the run (a cost a group and day, spread over the
    rounds): llama3-54d-quorum at groups of 16 and 128 (reports/per_step_ft.md) and
    frontier-100k-quorum set both (reports/estimates.md)."""
    groups = max(1, n // sc.protocol.group_size)
    return 0.0104 * min(1.0, n / 16) + 0.00278 * groups * (sc.duration / 86400.0) / rounds(sc)


QUORUM_AGGREGATE = Cost(quorum_round)
# a storm that locks is carried forward, one that creeps is stepped write by write: llama3-54d
# (~825 rounds) takes 8 s as bundled and 18 minutes with a 30 s keep-alive (docs/c10d-at-scale.md)
C10D_AGGREGATE = Cost(lambda n, sc: 3e-4 * n,
                      lambda n: "; what c10d's storms do at this size: docs/c10d-at-scale.md" if n >= 1024 else "")


@dataclass(frozen=True)
class Estimate:
    rounds: float
    seconds: float
    fidelity: str
    faster: str = ""            # what would make it fast, when something would

    def message(self) -> str:
        m = (f"this run would take about {self.seconds / 60:,.0f} minutes here "
             f"(~{self.rounds:,.0f} rounds at fidelity {self.fidelity})")
        return m + (f"; {self.faster}" if self.faster else "") + "; pass --long to run it anyway"


def rounds(sc) -> float:
    """Rounds the run is expected to form: the first, one per scheduled fault's action (a crash,
    a restart, a heal), two per expected random failure (its crash and its repair)."""
    r = 1.0 + sum(len(f.actions(i)) for i, f in enumerate(sc.faults))
    for rf in sc.random_faults:
        two, one = rf.rates(sc)
        r += (2.0 * two + one) * sc.duration
    return r


def estimate(sc) -> Estimate:
    name, n = sc.protocol.name, sc.hosts
    cost = cost_of(name, sc.fidelity) or cost_of("hrw", sc.fidelity)   # unpriced: as hrw
    k = rounds(sc)
    faster = ""
    agg = (cost_of(name, "aggregate") or cost_of("hrw", "aggregate")) \
        if "aggregate" in get(name).caps.fidelities else None
    fixed = OVERHEAD_S + placement_s(sc)
    if sc.fidelity == "per_operation" and agg is not None:
        faster = (f"--set fidelity=aggregate would take about {fixed + k * agg.per_round(n, sc):,.0f} s"
                  + (agg.hint(n) if agg.hint else ""))
    return Estimate(k, fixed + k * cost.per_round(n, sc), sc.fidelity, faster)


def placement_s(sc) -> float:
    """The shard-moves table's shortlists: every shard ranked over every host, once."""
    return PLACEMENT * sc.shards.count * sc.hosts


def events_gb(sc) -> float:
    """How much memory the run's events could take held in memory, at its peak (`rounds`
    counts a round a failure and a repair: an upper bound where they fall together)."""
    return rounds(sc) * sc.hosts * ROWS_A_HOST_ROUND[sc.outputs.events] * BYTES_A_ROW / 1e9


def stream_hint(sc) -> str | None:
    """A line for a run whose events would take more than `HOLD_GB` held in memory."""
    gb = events_gb(sc)
    if sc.outputs.stream or gb <= HOLD_GB:
        return None
    return (f"this run's events could take up to {gb:,.0f} GB held in memory (a round for each "
            "failure and each repair; fewer where they fall together): --set outputs.stream=true "
            "keeps them on disk and folds the tables from there (docs/simulating.md)")
