"""Semantic checks that the types alone cannot express; each problem names its YAML path."""
from __future__ import annotations

from ..protocols.registry import specs
from .faults import AGGREGATE_KINDS
from .schema import Scenario


def spare_problems(sc: Scenario) -> list[tuple[tuple, str]]:
    """Spares as whole racks need racks, and racks of one size to copy."""
    if sc.scheduler.hot_spares_unit != "racks":
        return []
    topo, path = sc.cluster.topology, ("scheduler", "hot_spares_unit")
    if topo.kind != "racks":
        return [(path, "spares as whole racks need racks: cluster.topology.kind: racks")]
    if sc.cluster.nodes % topo.racks:
        return [(path, f"spares as whole racks need racks of one size: {sc.cluster.nodes} nodes do not "
                       f"fill {topo.racks} racks evenly")]
    return []


def problems(sc: Scenario) -> list[tuple[tuple, str]]:
    """Every problem of `sc` the types let through, each with its YAML path, in a fixed order."""
    node = _NodeCheck(sc)
    out = spare_problems(sc) + _cluster(sc, node) + _store(sc, node) + _protocol(sc) + _lifecycle(sc)
    if sc.fidelity == "aggregate":
        out += _aggregate(sc)
    out += _random_settings(sc)
    for i, f in enumerate(sc.faults):
        out += _fault(sc, node, i, f)
    for i, rf in enumerate(sc.random_faults):
        for j, x in enumerate(getattr(rf, "nodes", None) or []):
            out += node(("random_faults", i, "nodes", j), x)
        if getattr(rf, "scope", None) == "rack" and not node.racks:
            out.append((("random_faults", i, "scope"), "rack interruptions need cluster.topology.kind: racks"))
    return out


class _NodeCheck:
    """A node index named anywhere must exist (the hot spares count: faults may name them)."""

    def __init__(self, sc: Scenario):
        self.n, self.spares = sc.hosts, sc.scheduler.hot_spares
        self.racks = sc.racks if sc.cluster.topology.kind == "racks" else 0      # spare racks included

    def __call__(self, path, idx) -> list:
        if 0 <= idx < self.n:
            return []
        return [(path, f"node {idx} does not exist (the cluster has nodes 0..{self.n - 1}"
                       + (", spares included" if self.spares else "") + ")")]


def _lifecycle(sc: Scenario) -> list:
    """A working pool holds the job and its hot spares."""
    lc, out = sc.lifecycle, []
    if lc is None:
        return out
    if lc.working_pool is not None and lc.working_pool < sc.started_hosts:
        out.append((("lifecycle", "working_pool"),
                    f"a working pool of {lc.working_pool} hosts cannot hold the job's {sc.cluster.nodes} nodes "
                    f"and {sc.spare_hosts} hot spares ({sc.started_hosts})"))
    return out


def _cluster(sc: Scenario, node: _NodeCheck) -> list:
    out, n = [], node.n
    if sc.cluster.topology.kind == "racks" and node.racks > n:
        out.append((("cluster", "topology", "racks"), f"{node.racks} racks for only {n} nodes"))
    if sc.cluster.start_nodes is not None and sc.cluster.start_nodes > n:
        out.append((("cluster", "start_nodes"), f"{sc.cluster.start_nodes} > nodes ({n})"))
    return out


def _store(sc: Scenario, node: _NodeCheck) -> list:
    st, out = sc.store, []
    if st.kind != "replicated":
        return node(("store", "host"), st.host) if st.host is not None else []
    if st.replicas < 3 or st.replicas % 2 == 0:
        out.append((("store", "replicas"), f"{st.replicas} replicas: a replicated store needs an "
                    "odd number, at least 3 (a majority must survive a member's loss)"))
    if "host" in st.model_fields_set and st.host is not None:
        out.append((("store", "host"), "a replicated store lives on `hosts` (one node per "
                    "replica, or none: outside the job), not on one `host`: set it to null"))
    if st.hosts is not None:
        if len(st.hosts) != st.replicas:
            out.append((("store", "hosts"), f"{len(st.hosts)} hosts for {st.replicas} replicas: "
                        "give one node per replica"))
        elif len(set(st.hosts)) != len(st.hosts):
            out.append((("store", "hosts"), "two replicas on one node: give each its own"))
        for j, x in enumerate(st.hosts):
            out += node(("store", "hosts", j), x)
    if st.heartbeat_interval >= st.election_timeout:
        out.append((("store", "heartbeat_interval"), f"{st.heartbeat_interval:g} s is not shorter "
                    f"than the election timeout ({st.election_timeout:g} s): followers would "
                    "elect a new leader between beats"))
    return out


def _protocol(sc: Scenario) -> list:
    """The protocol's bounds, its own checks, its recovery modes and the segment."""
    p, out = sc.protocol, []
    if sc.min_nodes > sc.max_nodes:
        out.append((("protocol", "min_nodes"),
                    f"min_nodes ({sc.min_nodes}) must not exceed max_nodes ({sc.max_nodes})"))
    if sc.min_nodes > sc.cluster.nodes:
        out.append((("protocol", "min_nodes"),
                    f"min_nodes ({sc.min_nodes}) exceeds the cluster's {sc.cluster.nodes} nodes"))
    out += p.problems(sc)                 # what the protocol itself says of the scenario
    modes = specs()[p.name].caps.recovery if p.name in specs() else ("in_job",)
    if sc.agent.recovery not in modes:
        out.append((("agent", "recovery"), f"protocol {p.name!r} recovers {' or '.join(modes)}, not "
                    f"{sc.agent.recovery}"))
    seg = sc.scheduler.segment
    if seg > 1 and sc.min_nodes % seg:
        out.append((("scheduler", "segment"), f"min_nodes ({sc.min_nodes}) must be a multiple of the "
                    f"segment ({seg} hosts): an in-process restart keeps whole segments"))
    return out


def _aggregate(sc: Scenario) -> list:
    """What the aggregate fidelity does not model, refused by name."""
    out, p = [], sc.protocol
    if sc.store.kind != "tcpstore":
        out.append((("store", "kind"), "fidelity: aggregate models one TCPStore only; use "
                    "fidelity: per_operation for a replicated store"))
    able = sorted(n for n, s in specs().items() if "aggregate" in s.caps.fidelities)
    if p.name not in able:
        out.append((("protocol", "name"), f"fidelity: aggregate models the {' and '.join(able)} "
                    f"protocols, not {p.name!r}; use fidelity: per_operation"))
    if sc.cluster.cpu.shared_cores:
        out.append((("cluster", "cpu", "shared_cores"), "fidelity: aggregate gives every agent "
                    "a CPU of its own; use fidelity: per_operation for cores shared on one machine"))
    for i, f in enumerate(sc.faults):
        if not f.aggregate:
            out.append((("faults", i, "kind"), f"{f.kind!r} is not modelled by fidelity: "
                        f"aggregate (it models {', '.join(AGGREGATE_KINDS)}); use "
                        "fidelity: per_operation"))
    return out


def _random_settings(sc: Scenario) -> list:
    out = []
    for i, rf in enumerate(sc.random_faults):
        if getattr(rf, "detection", None) is not None and getattr(rf, "scope", None) == "job":
            out.append((("random_faults", i, "detection"), "a job-scope interruption fails every "
                        "worker at once: detection applies to node and rack scope"))
        if getattr(rf, "requeue", False):
            if rf.scope != "job":
                out.append((("random_faults", i, "requeue"), "only a job-scope interruption requeues the job"))
            if sc.scheduler.requeue_delay is None:
                out.append((("random_faults", i, "requeue"), "requeue needs scheduler.requeue_delay"))
    return out


def _fault(sc: Scenario, node: _NodeCheck, i: int, f) -> list:
    """One scheduled fault: the nodes and rack it names, its own checks, when it falls."""
    base, out, racks = ("faults", i), [], node.racks
    if hasattr(f, "node"):
        out += node(base + ("node",), f.node)
    if getattr(f, "nodes", None) is not None:
        for j, x in enumerate(f.nodes):
            out += node(base + ("nodes", j), x)
    out += f.problems(sc, base)
    if getattr(f, "rack", None) is not None:
        if not racks:
            out.append((base + ("rack",), "rack faults need cluster.topology.kind: racks"))
        elif not 0 <= f.rack < racks:
            out.append((base + ("rack",), f"rack {f.rack} does not exist (racks 0..{racks - 1})"))
    at = f.start                          # an anchored fault: its delay after the anchor
    if f.anchor is not None and sc.fidelity == "aggregate":
        out.append((base + ("at",), "fidelity: aggregate times faults in seconds; use "
                    "fidelity: per_operation for a fault timed from an event"))
    if at > sc.duration:
        key = "at" if hasattr(f, "at") else "delay"
        what = f"{at:g} s" + (" after its anchor" if f.anchor is not None else "")
        out.append((base + (key,), f"{what} is after the end of the run (duration {sc.duration:g} s)"))
    return out
