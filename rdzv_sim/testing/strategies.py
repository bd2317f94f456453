"""Hypothesis strategies for clusters, protocol settings, fault schedules and whole scenarios.

They compose, for any registered protocol:

    scenarios(protocol="hrw", faults=lambda n: fault_schedules(n, kinds=("crash", "restart")))

Every scenario they make is valid, and long enough for the liveness check to judge it.
"""
from __future__ import annotations

from hypothesis import HealthCheck, settings as _settings, strategies as st
from hypothesis.errors import InvalidArgument

from ..scenario.load import load
from ..scenario.schema import MAX_DURATION
from .liveness import liveness_bound, quiet_time
from .parts import settings_strategy_of

from ..scenario.faults import KINDS

# what `fault_schedules` draws unless told: the kinds every protocol and store survives
FAULT_KINDS = ("crash", "restart", "pause", "partition", "worker_failure", "slow_join",
               "store_pause", "clock_skew", "preemption", "flap")


# what a property test of whole simulations needs of Hypothesis: no deadline (one example is a
# simulation of up to a second or two, past Hypothesis's 200 ms), and examples that take long
# are not an error; 25 of them is a quick first run (raise max_examples in CI)
simulation_settings = _settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])


def times(horizon: float) -> st.SearchStrategy[float]:
    return st.integers(0, int(horizon * 10)).map(lambda x: x / 10)


def _hosts(d, nodes):
    return sorted(d(st.lists(st.integers(0, nodes - 1), min_size=1, max_size=nodes, unique=True)))


def _links(d, nodes, racks):
    """A link fault names some hosts, or (with racks) a whole rack."""
    if racks and d(st.booleans()):
        return {"rack": d(st.integers(0, racks - 1))}
    return {"nodes": _hosts(d, nodes)}


def _flap(d, nodes, racks, at):
    period = d(st.integers(2, 60))
    return {**_links(d, nodes, racks), "at": at, "period": period, "down": d(st.integers(1, period - 1)),
            "duration": d(st.integers(period, 4 * period))}


# kind -> draw(d, nodes, racks, node, at): one fault of that kind (YAML-shaped, without `kind`)
DRAW = {
    "crash": lambda d, n, r, node, at: {"node": node, "at": at, "device_unusable": d(st.booleans())},
    "restart": lambda d, n, r, node, at: {"node": node, "at": at},
    "worker_failure": lambda d, n, r, node, at: {"node": node, "at": at},
    "agent_failure": lambda d, n, r, node, at: {"node": node, "at": at},
    "slow_join": lambda d, n, r, node, at: {"node": node, "delay": at},
    "pause": lambda d, n, r, node, at: {"node": node, "at": at,
                                  "duration": d(st.integers(1, 120))},
    "partition": lambda d, n, r, node, at: {**_links(d, n, r), "at": at, "duration": d(st.integers(1, 120))},
    "latency": lambda d, n, r, node, at: {**_links(d, n, r), "at": at, "duration": d(st.integers(1, 120)),
                                    "delay": d(st.sampled_from([0.01, 0.5, 3.0]))},
    "loss": lambda d, n, r, node, at: {**_links(d, n, r), "at": at, "duration": d(st.integers(1, 60)),
                                 "rate": d(st.sampled_from([0.05, 0.3, 0.9]))},
    "flap": lambda d, n, r, node, at: _flap(d, n, r, at),
    "store_crash": lambda d, n, r, node, at: {"at": at},
    "store_pause": lambda d, n, r, node, at: {"at": at, "duration": d(st.integers(1, 60))},
    "lighthouse_crash": lambda d, n, r, node, at: {"at": at, "duration": d(st.integers(1, 120))},
    "rack_failure": lambda d, n, r, node, at: {"rack": d(st.integers(0, r - 1)), "at": at,
                                         "repair": d(st.one_of(st.none(), st.integers(1, 120)))},
    "clock_skew": lambda d, n, r, node, at: {"node": node, "at": at,
                                       "offset": float(d(st.integers(-30, 30)))},
    "preemption": lambda d, n, r, node, at: {"node": node, "at": at,
                                       "notice": d(st.integers(0, 60)) * 1.0},
    "straggler": lambda d, n, r, node, at: {"node": node, "at": at,
                                      "slowdown": d(st.sampled_from([1.5, 4.0])),
                                      "duration": d(st.one_of(st.none(), st.integers(1, 300)))},
}
assert set(DRAW) == set(KINDS), "every fault kind of the schema has a way to be drawn"


def fault_schedules(nodes: int, horizon: float = 200.0, kinds=FAULT_KINDS, max_faults: int = 6,
                    racks: int = 0) -> st.SearchStrategy[list[dict]]:
    """A list of scheduled faults (YAML-shaped dicts) on `nodes` hosts within `horizon` s, of
    the given `kinds` (any of `rdzv_sim.scenario.faults.KINDS`). `racks`: how many racks the
    cluster has (rack faults need it; `scenarios()` gives the cluster that topology)."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise InvalidArgument(f"fault_schedules(kinds={kinds!r}): {'unknown kind ' + repr(unknown[0]) if unknown else 'no kind'}; "
                              f"the kinds are {', '.join(KINDS)}")
    if not isinstance(nodes, int) or nodes < 1:
        raise InvalidArgument(f"fault_schedules(nodes={nodes!r}): give the cluster's host count, >= 1 "
                              "(pass faults=lambda n: fault_schedules(n, ...) to scenarios())")
    if "rack_failure" in kinds and not 1 <= racks <= nodes:
        raise InvalidArgument(f"fault_schedules(kinds=(..., 'rack_failure'), racks={racks!r}): a rack "
                              f"failure needs racks between 1 and nodes ({nodes})")
    if not 0 <= racks <= nodes:
        raise InvalidArgument(f"fault_schedules(racks={racks!r}): at most one rack per host ({nodes})")
    return _fault_schedules(nodes, horizon, kinds, max_faults, racks)


@st.composite
def _fault_schedules(draw, nodes, horizon, kinds, max_faults, racks) -> list[dict]:
    out = []
    for _ in range(draw(st.integers(0, max_faults))):
        kind = draw(st.sampled_from(kinds))
        node = draw(st.integers(0, nodes - 1))
        out.append({"kind": kind, **DRAW[kind](draw, nodes, racks, node, draw(times(horizon)))})
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


def protocol_settings(protocol: str, nodes: int, settings: dict | None = None) -> st.SearchStrategy[dict]:
    """Settings for any registered protocol: min/max nodes drawn (both `nodes` for a
    protocol with a fixed world), the fields in DRAWN drawn, the rest default.
    A protocol's kit may name its own (its `settings_strategy` part) to draw instead.
    `settings` maps field names to values or strategies that replace what is drawn."""
    from ..protocols.registry import get
    _known_protocol("protocol_settings", protocol)
    fields = get(protocol).settings.model_fields
    given = dict(settings or {})
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise InvalidArgument(f"settings={unknown!r}: not fields of {protocol!r}'s settings; "
                              f"it has {sorted(set(fields) - {'name'})}")
    return _protocol_settings(protocol, nodes, given)


@st.composite
def _protocol_settings(draw, protocol, nodes, given) -> dict:
    from ..protocols.registry import get
    model = get(protocol).settings
    fields = model.model_fields
    given = {k: draw(v) if isinstance(v, st.SearchStrategy) else v for k, v in given.items()}
    own = settings_strategy_of(protocol)
    if own is not None:
        return {"name": protocol, **draw(own(nodes)), **given}
    if get(protocol).caps.fixed_world:
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


def quorum_settings(nodes: int):
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




@st.composite
def agent_settings(draw, recovery=("in_job",)) -> dict:
    """The agent's settings; `recovery`: the modes to draw from (a protocol's `caps.recovery`),
    each with its parts (in_process's iteration bound, a planned re-form or none)."""
    out = {"max_restarts": 10_000, "max_rendezvous_attempts": 10_000,
           "monitor_interval": draw(st.sampled_from([0.5, 1.0, 5.0])),
           "collective_timeout": draw(st.integers(5, 60)),
           "worker_start": draw(st.integers(0, 10)), "retry_backoff": 1.0}
    mode = draw(st.sampled_from(list(recovery)))
    if mode != "in_job":
        out["recovery"] = mode
        out["reform_every"] = draw(st.sampled_from([None, 30.0, 120.0]))
        out["in_process"] = {"max_iterations": draw(st.sampled_from([None, 1, 3])),
                             "heartbeat_timeout": draw(st.sampled_from([5.0, 30.0]))}
    return out


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


def _known_protocol(where: str, protocol) -> None:
    from ..protocols.registry import specs
    known = specs()
    if protocol not in known:
        raise InvalidArgument(f"{where}(protocol={protocol!r}): not a registered protocol; registered: "
                              f"{', '.join(sorted(known))} (register yours with rdzv_sim.register_kit "
                              "before building the strategy)")


def scenarios(protocol: str = "hrw", nodes=st.integers(1, 12), faults=None, horizon: float = 200.0,
              settings: dict | None = None, store=None, recovery=None) -> st.SearchStrategy:
    """A validated Scenario with generated cluster, settings and faults.

    `settings` fixes or draws protocol fields: `settings={"rank_order": st.just("stable")}`.
    `store` is a store section, a strategy of one, or a function of the node count that
    returns either (`store=replicated_stores`); default: one TCPStore outside the job.

    `faults` is a strategy of fault lists, or a function of the node count that returns one
    (so that node indexes fit the drawn cluster): `faults=lambda n: fault_schedules(n, ...)`.
    A fault on a rack gives the cluster a rack topology.

    `recovery` is the agent's recovery mode to draw, or a list of them (default: every mode
    the protocol supports); the duration follows the mode's timers, as it does every other.
    """
    _known_protocol("scenarios", protocol)
    recovery = _recovery_modes(protocol, recovery)
    if not isinstance(nodes, st.SearchStrategy):
        raise InvalidArgument(f"scenarios(nodes={nodes!r}): give a strategy of host counts, "
                              "e.g. nodes=st.integers(1, 12) or st.just(4)")
    if not (faults is None or callable(faults) or isinstance(faults, st.SearchStrategy)):
        raise InvalidArgument(f"scenarios(faults={faults!r}): give a strategy of fault lists or a "
                              "function of the node count, e.g. faults=lambda n: fault_schedules(n)")
    if not isinstance(horizon, (int, float)) or horizon <= 0:
        raise InvalidArgument(f"scenarios(horizon={horizon!r}): give the seconds faults fall within, > 0")
    return _scenarios(protocol, nodes, faults, horizon, settings, store, recovery)


def _recovery_modes(protocol: str, recovery) -> tuple:
    from ..protocols.registry import specs
    can = tuple(specs()[protocol].caps.recovery)
    if recovery is None:
        return can
    modes = (recovery,) if isinstance(recovery, str) else tuple(recovery)
    wrong = [m for m in modes if m not in can]
    if not modes or wrong:
        raise InvalidArgument(f"scenarios(recovery={recovery!r}): {protocol} recovers by "
                              f"{', '.join(can)}; give one of them or a list of them")
    return modes


@st.composite
def _scenarios(draw, protocol, nodes, faults, horizon, settings, store, recovery):
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
        "agent": draw(agent_settings(recovery)),
        "shards": {"count": 256, "policies": ["hrw"]},
        "faults": draw(faults if faults is not None else fault_schedules(n, horizon)),
    }
    if data["agent"].get("recovery") == "in_process":      # the wrapper's inactive ranks
        data["scheduler"] = {"hot_spares": draw(st.integers(0, 2))}
    racks = [f["rack"] for f in data["faults"] if f.get("rack") is not None]
    if racks:
        data["cluster"]["topology"] = {"kind": "racks", "racks": max(racks) + 1}
    sc = load(data | {"duration": MAX_DURATION})          # long enough to compute the bound
    data["duration"] = float(int(quiet_time(sc) + liveness_bound(sc) + 10))
    return load(data)
