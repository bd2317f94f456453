"""A protocol from outside rdzv_sim is a first-class citizen: scenario, CLI, schema, errors,
property tests and the real runtime, with no edit inside rdzv_sim."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from rdzv_sim.scenario import ScenarioError, load
from rdzv_sim.testing import check_run, fault_schedules, scenarios

from userproto import sorted_hrw  # noqa: F401 - registers "sorted"

HERE = Path(__file__).parent
SCENARIO = """\
name: sorted-demo
seed: 3
duration: 120
cluster: {nodes: 4, nproc_per_node: 2, start_spread: 0}
store: {host: null}
protocol:
  name: sorted
  order: reverse
  min_nodes: 2
  last_call_timeout: 1
agent: {collective_timeout: 10, worker_start: 1}
shards: {count: 64}
faults:
  - {kind: crash, node: 1, at: 40}
"""


def cli(*args, cwd):
    env = {**os.environ, "RDZV_SIM_PROTOCOLS": "userproto.sorted_hrw",
           "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), str(HERE.parent),
                                          os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "rdzv_sim", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_yaml_scenario_naming_it_runs_from_the_cli(tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    r = cli("run", "s.yaml", "--out", "out", "--no-report", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    import pandas as pd
    ev = pd.read_parquet(tmp_path / "out" / "events.parquet")
    ra = ev[ev.event == "rank_assigned"]
    first = ra[ra["round"] == 0].sort_values("rank")["node"].tolist()
    assert first == ["node3", "node2", "node1", "node0"]          # reverse name order
    last = ra[ra["round"] == ra["round"].max()].sort_values("rank")["node"].tolist()
    assert last == ["node3", "node2", "node0"]                      # node1 crashed


def test_schema_shows_its_settings(tmp_path):
    r = cli("schema", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    defs = json.loads(r.stdout)["$defs"]
    assert defs["SortedSettings"]["properties"]["order"]["enum"] == ["name", "reverse"]
    assert "sorted" in cli("list", cwd=tmp_path).stdout


def test_a_bad_setting_is_refused_with_its_yaml_path(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SCENARIO.replace("order: reverse", "order: random"))
    with pytest.raises(ScenarioError) as e:
        load(bad)
    assert e.value.messages == [f"{bad}:8: protocol.order: Input should be 'name' or 'reverse'"]
    r = cli("run", "bad.yaml", cwd=tmp_path)
    assert r.returncode == 2 and "protocol.order" in r.stderr and "Traceback" not in r.stderr


def test_switching_a_scenario_to_it_keeps_its_settings_apart():
    sc = load(SCENARIO, ["protocol.name=c10d"])
    assert "order" not in type(sc.protocol).model_fields and sc.protocol.last_call_timeout == 1
    with pytest.raises(ScenarioError, match="protocol.order"):
        load(SCENARIO.replace("name: sorted", "name: hrw"))


@settings(max_examples=25)
@given(scenarios(protocol="sorted", nodes=__import__("hypothesis").strategies.integers(1, 5),
                 faults=lambda n: fault_schedules(n, kinds=("crash", "restart", "worker_failure"))))
def test_check_run_property_tests_it(sc):
    _, report = check_run(sc)
    assert not report.unexpected


def test_its_own_invariant_catches_a_wrong_order():
    import pandas as pd
    from userproto.sorted_hrw import ranks_follow_names
    sc = load(SCENARIO)
    ev = pd.DataFrame({"event": ["rank_assigned"] * 2, "round": [0, 0], "node": ["node0", "node1"],
                       "rank": [0, 1]})
    assert [v.invariant for v in ranks_follow_names({"events": ev}, sc)] == ["ranks_follow_names"]


@pytest.mark.real
def test_it_runs_on_the_real_runtime_with_real_processes():
    pytest.importorskip("torch")
    from real_backend.launcher import run_real
    sc = load(SCENARIO.replace("duration: 120", "duration: 14").replace(
        "faults:\n  - {kind: crash, node: 1, at: 40}\n", "").replace("nodes: 4", "nodes: 3")
        .replace("store: {host: null}", "store: {host: null, op_timeout: 4}"))
    r = run_real(sc, until={"after": "pg_ready", "plus": 0.5})
    ra = r.events[r.events.event == "rank_assigned"]
    assert ra.sort_values("rank")["node"].tolist() == ["node2", "node1", "node0"], \
        r.events[["t", "node", "event"]].to_string()


def test_a_replay_file_keeps_the_protocol_it_failed_with():
    from rdzv_sim.testing import to_yaml
    for name in ("sorted", "c10d", "static"):
        text = SCENARIO.replace("name: sorted", f"name: {name}").replace("  order: reverse\n", "")
        if name == "static":
            text = text.replace("  min_nodes: 2\n  last_call_timeout: 1\n", "")
        if name == "c10d":
            pass
        sc = load(text)
        assert load(to_yaml(sc)).protocol.name == name


def test_it_runs_at_the_aggregate_fidelity_with_the_same_ranks():
    """Its aggregate job (registered from outside) honours its rank order, as per-operation does."""
    import rdzv_sim

    def ranks(r):
        ra = r.events[r.events.event == "rank_assigned"]
        return {int(k): g.sort_values("rank")["node"].tolist() for k, g in ra.groupby("round")}
    per_op = rdzv_sim.run(SCENARIO)
    agg = rdzv_sim.run(SCENARIO, ["fidelity=aggregate"])
    assert list(ranks(agg).values()) == list(ranks(per_op).values())
    assert list(ranks(agg).values())[0] == ["node3", "node2", "node1", "node0"]


def test_its_cost_estimate_is_its_own():
    from rdzv_sim.estimate import OVERHEAD_S, estimate, placement_s
    sc = load(SCENARIO)
    hrw = load(SCENARIO.replace("name: sorted", "name: hrw").replace("  order: reverse\n", ""))
    fixed = OVERHEAD_S + placement_s(sc)
    assert estimate(sc).seconds - fixed == pytest.approx((estimate(hrw).seconds - fixed) * 1e-3 / 3.8e-4)
    assert "fidelity=aggregate" in estimate(sc).faster      # it registered no aggregate cost: hrw's


def test_a_fidelity_it_does_not_declare_is_refused():
    import userproto.sorted_hrw  # noqa: F401  (registers it)
    from rdzv_sim.protocols.registry import get
    assert get("sorted").caps.fidelities == ("per_operation", "aggregate")
    with pytest.raises(ScenarioError, match=r"fidelity: aggregate models the c10d and hrw and .*sorted.* protocols, not 'static'"):
        load(SCENARIO.replace("name: sorted", "name: static").replace("  order: reverse\n", "")
             .replace("  min_nodes: 2\n  last_call_timeout: 1\n", ""), ["fidelity=aggregate"])


@settings(max_examples=15)
@given(scenarios(protocol="sorted", nodes=__import__("hypothesis").strategies.integers(2, 5)))
def test_the_property_tests_draw_its_settings_with_its_own_strategy(sc):
    assert sc.protocol.order in ("name", "reverse") and sc.protocol.max_nodes == sc.cluster.nodes
