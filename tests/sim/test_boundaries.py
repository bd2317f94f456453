"""Every scenario check at its boundary, on both sides."""
import pytest

from rdzv_sim.scenario import ScenarioError, load


def sc(**parts):
    base = {"name": "b", "duration": 100, "cluster": {"nodes": 4}, "protocol": {"name": "hrw"}}
    for k, v in parts.items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return base


CASES = [
    ("min == max", sc(protocol={"name": "hrw", "min_nodes": 3, "max_nodes": 3}), None),
    ("min == max + 1", sc(protocol={"name": "hrw", "min_nodes": 4, "max_nodes": 3}), "protocol.min_nodes"),
    ("min == nodes", sc(protocol={"name": "hrw", "min_nodes": 4, "max_nodes": 4}), None),
    ("min == nodes + 1", sc(protocol={"name": "hrw", "min_nodes": 5, "max_nodes": 5}), "exceeds the cluster"),
    ("fault on the last node", sc(faults=[{"kind": "crash", "node": 3, "at": 1}]), None),
    ("fault past the last node", sc(faults=[{"kind": "crash", "node": 4, "at": 1}]), "faults[0].node"),
    ("fault at the end", sc(faults=[{"kind": "crash", "node": 0, "at": 100}]), None),
    ("fault after the end", sc(faults=[{"kind": "crash", "node": 0, "at": 100.5}]), "faults[0].at"),
    ("start_nodes == nodes", sc(cluster={"nodes": 4, "start_nodes": 4}), None),
    ("start_nodes == nodes + 1", sc(cluster={"nodes": 4, "start_nodes": 5}), "cluster.start_nodes"),
    ("racks == nodes", sc(cluster={"nodes": 4, "topology": {"kind": "racks", "racks": 4}}), None),
    ("racks == nodes + 1", sc(cluster={"nodes": 4, "topology": {"kind": "racks", "racks": 5}}), "cluster.topology.racks"),
    ("last rack", sc(cluster={"nodes": 4, "topology": {"kind": "racks", "racks": 2}},
                     faults=[{"kind": "rack_failure", "rack": 1, "at": 1}]), None),
    ("rack past the last", sc(cluster={"nodes": 4, "topology": {"kind": "racks", "racks": 2}},
                              faults=[{"kind": "rack_failure", "rack": 2, "at": 1}]), "faults[0].rack"),
    ("store on the last node", sc(store={"host": 3}), None),
    ("store past the last node", sc(store={"host": 4}), "store.host"),
    ("spare indexes count", sc(scheduler={"hot_spares": 1}, faults=[{"kind": "crash", "node": 4, "at": 1}]), None),
    ("nodes at the bound", sc(cluster={"nodes": 100_000}), None),
    ("nodes past the bound", sc(cluster={"nodes": 100_001}), "cluster.nodes"),
    ("duration at the bound", sc(duration=3.2e8), None),
    ("duration past the bound", sc(duration=3.21e8), "duration"),
]


@pytest.mark.parametrize("case, data, error", CASES, ids=[c[0] for c in CASES])
def test_scenario_checks_at_their_boundaries(case, data, error):
    if error is None:
        load(data)
    else:
        with pytest.raises(ScenarioError) as e:
            load(data)
        assert any(error in m for m in e.value.messages), e.value.messages
