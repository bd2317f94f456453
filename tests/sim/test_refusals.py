"""Every refusal of the scenario checks (rdzv_sim/scenario/checks.py and the fault models'):
one input just over the line is refused with its YAML path, and the input just inside it is
accepted, so a rule cannot drift to a near miss unnoticed."""
import copy

import pytest

from rdzv_sim.scenario import ScenarioError, load

BASE = {"name": "refusals", "seed": 1, "duration": 100,
        "cluster": {"nodes": 12, "start_spread": 0}, "store": {"host": None},
        "protocol": {"name": "hrw"}}


def merged(*parts):
    out = copy.deepcopy(BASE)
    for part in parts:
        for k, v in part.items():
            out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


RACKS = {"cluster": {"nodes": 12, "start_spread": 0, "topology": {"kind": "racks", "racks": 3}}}
REPL = {"store": {"kind": "replicated", "host": None, "replicas": 3}}
AGG = {"fidelity": "aggregate"}

# (name, refused, accepted, path, words)
CASES = [
    ("racks past the nodes", {"cluster": {"nodes": 12, "topology": {"kind": "racks", "racks": 13}}},
     {"cluster": {"nodes": 12, "topology": {"kind": "racks", "racks": 12}}}, "cluster.topology.racks", "13 racks for only 12"),
    ("start_nodes past the nodes", {"cluster": {"nodes": 12, "start_nodes": 13}},
     {"cluster": {"nodes": 12, "start_nodes": 12}}, "cluster.start_nodes", "13 > nodes (12)"),
    ("even replicas", {**REPL, "store": {**REPL["store"], "replicas": 4}},
     {**REPL, "store": {**REPL["store"], "replicas": 5}}, "store.replicas", "4 replicas"),
    ("replicated store given a host", {"store": {"kind": "replicated", "host": 0}}, REPL,
     "store.host", "set it to null"),
    ("hosts not one per replica", {"store": {**REPL["store"], "hosts": [0, 1]}},
     {"store": {**REPL["store"], "hosts": [0, 1, 11]}}, "store.hosts", "2 hosts for 3 replicas"),
    ("two replicas on one node", {"store": {**REPL["store"], "hosts": [0, 10, 10]}},
     {"store": {**REPL["store"], "hosts": [0, 10, 11]}}, "store.hosts", "two replicas on one node"),
    ("a replica on no node", {"store": {**REPL["store"], "hosts": [0, 1, 12]}},
     {"store": {**REPL["store"], "hosts": [0, 1, 11]}}, "store.hosts[2]", "node 12 does not exist"),
    ("heartbeat as long as the election", {"store": {**REPL["store"], "heartbeat_interval": 1.0, "election_timeout": 1.0}},
     {"store": {**REPL["store"], "heartbeat_interval": 0.99, "election_timeout": 1.0}}, "store.heartbeat_interval",
     "not shorter than the election timeout"),
    ("store host past the nodes", {"store": {"host": 12}}, {"store": {"host": 11}}, "store.host",
     "node 12 does not exist"),
    ("min over max", {"protocol": {"name": "hrw", "min_nodes": 11, "max_nodes": 10}},
     {"protocol": {"name": "hrw", "min_nodes": 10, "max_nodes": 10}}, "protocol.min_nodes", "must not exceed max_nodes"),
    ("min over the cluster", {"protocol": {"name": "hrw", "min_nodes": 13, "max_nodes": 13}},
     {"protocol": {"name": "hrw", "min_nodes": 12, "max_nodes": 13}}, "protocol.min_nodes", "exceeds the cluster's 12"),
    ("aggregate on a replicated store", {**AGG, **REPL}, AGG, "store.kind", "one TCPStore only"),
    ("aggregate with a protocol it does not model", {**AGG, "protocol": {"name": "static"}}, AGG,
     "protocol.name", "not 'static'"),
    ("aggregate with shared cores", {**AGG, "cluster": {"nodes": 12, "cpu": {"shared_cores": 2}}}, AGG,
     "cluster.cpu.shared_cores", "a CPU of its own"),
    ("aggregate with a fault it does not model", {**AGG, "faults": [{"kind": "pause", "node": 1, "at": 5, "duration": 2}]},
     {**AGG, "faults": [{"kind": "crash", "node": 1, "at": 5}]}, "faults[0].kind", "'pause' is not modelled"),
    ("detection on a job-wide interruption",
     {"random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "job", "detection": 1}]},
     {"random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "node", "detection": 1}]},
     "random_faults[0].detection", "applies to node and rack scope"),
    ("requeue of a node interruption",
     {"scheduler": {"requeue_delay": 5}, "random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "node", "requeue": True}]},
     {"scheduler": {"requeue_delay": 5}, "random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "job", "requeue": True}]},
     "random_faults[0].requeue", "only a job-scope interruption"),
    ("requeue without a delay",
     {"random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "job", "requeue": True}]},
     {"scheduler": {"requeue_delay": 0}, "random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "job", "requeue": True}]},
     "random_faults[0].requeue", "needs scheduler.requeue_delay"),
    ("a fault on no node", {"faults": [{"kind": "crash", "node": 12, "at": 5}]},
     {"faults": [{"kind": "crash", "node": 11, "at": 5}]}, "faults[0].node", "node 12 does not exist"),
    ("a partition naming no node", {"faults": [{"kind": "partition", "nodes": [3, 12], "at": 5, "duration": 1}]},
     {"faults": [{"kind": "partition", "nodes": [3, 11], "at": 5, "duration": 1}]}, "faults[0].nodes[1]", "node 12 does not exist"),
    ("a partition naming nodes and a rack", {**RACKS, "faults": [{"kind": "partition", "nodes": [1], "rack": 0, "at": 5, "duration": 1}]},
     {**RACKS, "faults": [{"kind": "partition", "rack": 0, "at": 5, "duration": 1}]}, "faults[0]", "either `nodes` or `rack`"),
    ("a loss fault naming neither", {"faults": [{"kind": "loss", "rate": 0.1, "at": 5, "duration": 1}]},
     {"faults": [{"kind": "loss", "nodes": [10], "rate": 0.1, "at": 5, "duration": 1}]}, "faults[0]", "a loss fault names"),
    ("a flap never up", {"faults": [{"kind": "flap", "nodes": [1], "at": 5, "duration": 20, "period": 2, "down": 2}]},
     {"faults": [{"kind": "flap", "nodes": [1], "at": 5, "duration": 20, "period": 2, "down": 1.99}]}, "faults[0].down",
     "down must be shorter than period"),
    ("a flap of too many downs", {"duration": 30000, "faults": [{"kind": "flap", "nodes": [1], "at": 5, "duration": 20001, "period": 2, "down": 1}]},
     {"duration": 30000, "faults": [{"kind": "flap", "nodes": [1], "at": 5, "duration": 20000, "period": 2, "down": 1}]},
     "faults[0].period", "at most 10,000 per flap"),
    ("a rack fault without racks", {"faults": [{"kind": "rack_failure", "rack": 0, "at": 5}]},
     {**RACKS, "faults": [{"kind": "rack_failure", "rack": 0, "at": 5}]}, "faults[0].rack", "need cluster.topology.kind: racks"),
    ("a rack that does not exist", {**RACKS, "faults": [{"kind": "rack_failure", "rack": 3, "at": 5}]},
     {**RACKS, "faults": [{"kind": "rack_failure", "rack": 2, "at": 5}]}, "faults[0].rack", "rack 3 does not exist"),
    ("a fault after the run", {"faults": [{"kind": "crash", "node": 1, "at": 100.5}]},
     {"faults": [{"kind": "crash", "node": 1, "at": 100}]}, "faults[0].at", "after the end of the run"),
    ("a slow join after the run", {"faults": [{"kind": "slow_join", "node": 1, "delay": 101}]},
     {"faults": [{"kind": "slow_join", "node": 1, "delay": 99}]}, "faults[0].delay", "after the end of the run"),
    ("random failures on no node", {"random_faults": [{"kind": "node_failures", "mtbf": 1e6, "nodes": [12]}]},
     {"random_faults": [{"kind": "node_failures", "mtbf": 1e6, "nodes": [11]}]}, "random_faults[0].nodes[0]", "node 12 does not exist"),
    ("rack interruptions without racks",
     {"random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "rack"}]},
     {**RACKS, "random_faults": [{"kind": "interruptions", "cause": "x", "count": 1, "scope": "rack"}]},
     "random_faults[0].scope", "rack interruptions need"),
    ("a spare is a node too", {"scheduler": {"hot_spares": 2}, "faults": [{"kind": "crash", "node": 14, "at": 5}]},
     {"scheduler": {"hot_spares": 2}, "faults": [{"kind": "crash", "node": 13, "at": 5}]}, "faults[0].node",
     "nodes 0..13, spares included"),
    ("a segment that min_nodes is no multiple of",
     {"protocol": {"name": "hrw", "min_nodes": 6}, "scheduler": {"segment": 4}},
     {"protocol": {"name": "hrw", "min_nodes": 8}, "scheduler": {"segment": 4}}, "scheduler.segment",
     "must be a multiple of the segment"),
    ("a recovery mode the protocol does not declare",
     {"protocol": {"name": "static"}, "agent": {"recovery": "shrink"}},
     {"protocol": {"name": "static"}, "agent": {"recovery": "in_job"}}, "agent.recovery",
     "recovers in_job, not shrink"),
    ("a soft timeout not shorter than the hard one",
     {"agent": {"recovery": "in_process", "in_process": {"soft_timeout": 90}}},
     {"agent": {"recovery": "in_process", "in_process": {"soft_timeout": 89}}}, "agent.in_process",
     "must be shorter than hard_timeout"),
]


@pytest.mark.parametrize("name, refused, accepted, path, words", CASES, ids=[c[0] for c in CASES])
def test_refused_just_over_the_line_accepted_just_inside(name, refused, accepted, path, words):
    with pytest.raises(ScenarioError) as e:
        load(merged(refused))
    hits = [m for m in e.value.messages if f": {path}: " in m]
    assert hits and words in hits[0], e.value.messages
    load(merged(accepted))
