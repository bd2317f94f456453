"""Hypothesis strategies for clusters, protocol settings, fault schedules and whole scenarios.

They compose, for any registered protocol:

    scenarios(protocol="hrw", faults=lambda n: fault_schedules(n, kinds=("crash", "restart")))

Every scenario they make is valid, and long enough for the liveness check to judge it.
"""
from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from ..scenario.load import load
from ..scenario.schema import MAX_DURATION
from .liveness import liveness_bound, quiet_time
from .parts import register_settings_strategy, settings_strategy_of

FAULT_KINDS = ("crash", "restart", "pause", "partition", "worker_failure", "slow_join",
               "store_pause", "clock_skew", "preemption", "flap")


def times(horizon: float) -> st.SearchStrategy[float]:
    return st.integers(0, int(horizon * 10)).map(lambda x: x / 10)


@st.composite
def fault_schedules(draw, nodes: int, horizon: float = 200.0, kinds=FAULT_KINDS,
                    max_faults: int = 6) -> list[dict]:
    """A list of scheduled faults (YAML-shaped dicts) on `nodes` hosts within `horizon` s."""
    out = []
    for _ in range(draw(st.integers(0, max_faults))):
        kind = draw(st.sampled_from(list(kinds)))
        node = draw(st.integers(0, nodes - 1))
        at = draw(times(horizon))
        if kind in ("crash", "restart", "worker_failure"):
            out.append({"kind": kind, "node": node, "at": at})
        elif kind == "pause":
            out.append({"kind": kind, "node": node, "at": at, "duration": draw(st.integers(1, 120))})
        elif kind == "partition":
            hosts = draw(st.lists(st.integers(0, nodes - 1), min_size=1, max_size=nodes, unique=True))
            out.append({"kind": kind, "nodes": sorted(hosts), "at": at,
                        "duration": draw(st.integers(1, 120))})
        elif kind == "slow_join":
            out.append({"kind": kind, "node": node, "delay": at})
        elif kind == "store_pause":
            out.append({"kind": kind, "at": at, "duration": draw(st.integers(1, 60))})
        elif kind == "store_crash":
            out.append({"kind": kind, "at": at})
        elif kind == "preemption":
            out.append({"kind": kind, "node": node, "at": at, "notice": draw(st.integers(0, 60)) * 1.0})
        elif kind == "flap":
            hosts = draw(st.lists(st.integers(0, nodes - 1), min_size=1, max_size=nodes, unique=True))
            period = draw(st.integers(2, 60))
            out.append({"kind": kind, "nodes": sorted(hosts), "at": at, "period": period,
                        "down": draw(st.integers(1, period - 1)),
                        "duration": draw(st.integers(period, 4 * period))})
        elif kind == "clock_skew":
            out.append({"kind": kind, "node": node, "at": at,
                        "offset": draw(st.integers(-30, 30)).__float__()})
    # one slow_join per node at most (a node starts once)
    seen, unique = set(), []
    for f in out:
        if f["kind"] == "slow_join":
            if f["node"] in seen:
                continue
            seen.add(f["node"])
        unique.append(f)
    return unique


# how the strategies draw a settings field, wherever a protocol's model has it (seconds)
DRAWN = {"last_call_timeout": st.integers(0, 5), "confirm_timeout": st.integers(5, 30),
         "close_grace": st.integers(1, 3)}
FIXED = {"join_timeout": 1e6, "hole_grace": 1.0}


@st.composite
def protocol_settings(draw, protocol: str, nodes: int, settings: dict | None = None) -> dict:
    """Settings for any registered protocol: min/max nodes drawn (both `nodes` for a
    protocol with a fixed world), the fields in DRAWN drawn, the rest default.
    A protocol may register its own (`register_settings_strategy`) to draw instead.
    `settings` maps field names to values or strategies that replace what is drawn."""
    from ..protocols.registry import get
    model = get(protocol).settings
    fields = model.model_fields
    given = dict(settings or {})
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise InvalidArgument(f"settings={unknown!r}: not fields of {protocol!r}'s settings; "
                              f"it has {sorted(set(fields) - {'name'})}")
    given = {k: draw(v) if isinstance(v, st.SearchStrategy) else v for k, v in given.items()}
    own = settings_strategy_of(protocol)
    if own is not None:
        return {"name": protocol, **draw(own(nodes)), **given}
    if model.fixed_world:
        lo = hi = nodes
    else:
        lo = draw(st.integers(1, nodes))
        hi = draw(st.integers(lo, nodes))
    out = {"name": protocol, "min_nodes": lo, "max_nodes": hi}
    out.update({k: v for k, v in FIXED.items() if k in fields})
    for k, strategy in DRAWN.items():
        if k in fields:
            out[k] = draw(strategy)
    return out | given


def _quorum_settings(nodes: int):
    """What `scenarios(protocol="quorum")` draws: a group size that divides the nodes,
    min_replicas up to the groups, short Lighthouse timers."""
    @st.composite
    def draw(d):
        size = d(st.sampled_from([k for k in range(1, nodes + 1) if nodes % k == 0]))
        out = {"group_size": size, "min_replicas": d(st.integers(1, nodes // size)),
               "heartbeat_timeout": d(st.sampled_from([0.5, 1.0, 5.0])),
               "quorum_join_timeout": d(st.sampled_from([0.0, 1.0, 10.0])),
               "step_time": d(st.sampled_from([0.1, 1.0, 3.0])),
               "reconfigure_time": d(st.sampled_from([0.0, 0.5])),
               "state_bytes": d(st.sampled_from([0.0, 1e9])), "heal_bandwidth": 1e9,
               "probe_interval": 5.0, "probe_timeout": 2.0, **FIXED}
        out.update({k: d(v) for k, v in DRAWN.items()})
        return out
    return draw()


register_settings_strategy("quorum", _quorum_settings)


@st.composite
def agent_settings(draw) -> dict:
    return {"max_restarts": 10_000, "max_rendezvous_attempts": 10_000,
            "monitor_interval": draw(st.sampled_from([0.5, 1.0, 5.0])),
            "collective_timeout": draw(st.integers(5, 60)),
            "worker_start": draw(st.integers(0, 10)), "retry_backoff": 1.0}


@st.composite
def replicated_stores(draw, nodes: int) -> dict:
    """A replicated store section (etcd's shape): 3 or 5 members on distinct nodes of the job
    (so that crashes and partitions of those nodes hit them) or outside it, and its timers."""
    replicas = draw(st.sampled_from([3, 5] if nodes >= 5 else [3]))
    inside = nodes >= replicas and draw(st.booleans())
    hosts = sorted(draw(st.permutations(range(nodes)))[:replicas]) if inside else None
    election = draw(st.sampled_from([0.5, 1.0, 3.0]))
    return {"kind": "replicated", "host": None, "replicas": replicas, "hosts": hosts,
            "election_timeout": election, "heartbeat_interval": election / 10,
            "commit_time": draw(st.sampled_from([0.0, 1e-3, 0.02])),
            "op_timeout": draw(st.integers(5, 30))}


@st.composite
def scenarios(draw, protocol: str = "hrw", nodes=st.integers(1, 8), faults=None,
              horizon: float = 200.0, settings: dict | None = None, store=None):
    """A validated Scenario with generated cluster, settings and faults.

    `settings` fixes or draws protocol fields: `settings={"rank_order": st.just("stable")}`.
    `store` is a store section, a strategy of one, or a function of the node count that
    returns either (`store=replicated_stores`); default: one TCPStore outside the job.

    `faults` is a strategy of fault lists, or a function of the node count that returns one
    (so that node indexes fit the drawn cluster): `faults=lambda n: fault_schedules(n, ...)`.
    """
    n = draw(nodes)
    if callable(faults) and not isinstance(faults, st.SearchStrategy):
        faults = faults(n)
    if callable(store) and not isinstance(store, st.SearchStrategy):
        store = store(n)
    if isinstance(store, st.SearchStrategy):
        store = draw(store)
    data = {
        "name": f"generated-{protocol}",
        "seed": draw(st.integers(0, 2**32 - 1)),
        "duration": 1.0,
        "cluster": {"nodes": n, "nproc_per_node": draw(st.integers(1, 4)),
                    "start_spread": draw(st.sampled_from([0.0, 0.5, 5.0]))},
        "store": store or {"host": None, "op_timeout": draw(st.integers(5, 30))},
        "protocol": draw(protocol_settings(protocol, n, settings)),
        "agent": draw(agent_settings()),
        "shards": {"count": 256, "policies": ["hrw"]},
        "faults": draw(faults if faults is not None else fault_schedules(n, horizon)),
    }
    sc = load(data | {"duration": MAX_DURATION})          # long enough to compute the bound
    data["duration"] = float(int(quiet_time(sc) + liveness_bound(sc) + 10))
    return load(data)
