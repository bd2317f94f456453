"""Hot spares as hosts, whole NVLink segments or whole racks (scheduler.hot_spares_unit)."""
import pytest

import rdzv_sim
from rdzv_sim.scenario import load
from rdzv_sim.scenario.load import ScenarioError

BASE = {"name": "s", "duration": 3000, "seed": 2,
        "cluster": {"nodes": 8, "nproc_per_node": 8, "start_spread": 0, "topology": {"kind": "racks", "racks": 2}},
        "store": {"host": None}, "protocol": {"name": "hrw", "min_nodes": 4, "max_nodes": 8, "probe_interval": 86400},
        "agent": {"recovery": "in_process"}, "scheduler": {"hot_spares": 1, "segment": 2},
        "training": {"checkpoint_interval": 600, "checkpoint_cost": 10},
        "faults": [{"kind": "rack_failure", "rack": 0, "at": 1000}]}


@pytest.mark.parametrize("unit, hosts, racks", [("hosts", 9, 2), ("segments", 10, 2), ("racks", 12, 3)])
def test_a_spare_is_a_host_a_segment_or_a_rack(unit, hosts, racks):
    sc = load(BASE, [f"scheduler.hot_spares_unit={unit}"])
    assert (sc.hosts, sc.racks) == (hosts, racks)


def test_a_spare_rack_fills_a_failed_racks_seats_in_place():
    """A rack of 4 fails; the spare rack (hosts 8..11, a rack of its own) takes its 4 seats,
    at both fidelities. The near miss: one spare host fills one seat, and the world keeps
    whole segments of 2: it runs at 4."""
    for f in ("per_operation", "aggregate"):
        r = rdzv_sim.run(BASE, ["scheduler.hot_spares_unit=racks", f"fidelity={f}"])
        assert r.rounds["nnodes"].tolist() == [8, 8], (f, r.rounds)
        ev = r.events
        racks = ev.loc[ev.event == "fault_rack_failure"]
        assert len(racks) == 1
        near = rdzv_sim.run(BASE, [f"fidelity={f}"])
        assert near.rounds["nnodes"].tolist() == [8, 4], (f, near.rounds)


@pytest.mark.parametrize("change, words", [
    ({"cluster": {"nodes": 8, "nproc_per_node": 8}}, "need racks: cluster.topology.kind: racks"),
    ({"cluster": {"nodes": 9, "nproc_per_node": 8, "topology": {"kind": "racks", "racks": 2}}}, "do not fill 2 racks"),
])
def test_spare_racks_need_racks_of_one_size(change, words):
    with pytest.raises(ScenarioError, match=words):
        load(BASE | change | {"faults": []}, ["scheduler.hot_spares_unit=racks"])
