"""`rdzv-sim validate --torchrun`: the real side is torchrun's own agents with this project's
handler, for any protocol it serves (a user's too); members and ranks must match the simulator's."""
import json
import subprocess
import sys

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.real

CRASH_AND_BACK = """\
name: torchrun-crash
seed: 1
duration: 600
cluster: {nodes: 3, nproc_per_node: 1, start_spread: 0}
store: {host: null, op_timeout: 10}
protocol: {name: PROTOCOL, run_id: torchrun-PROTOCOL, min_nodes: 2, max_nodes: 3, last_call_timeout: 2, confirm_timeout: 10}
agent: {collective_timeout: 10, monitor_interval: 0.5, worker_start: 0, peer_crash_detection: 0.3}
shards: {count: 0}
faults:
  - {kind: crash, node: 1, at: {after: round_complete, round: 0, plus: 3}}
  - {kind: restart, node: 1, at: {after: round_complete, round: 1, plus: 3}}
"""


@pytest.mark.parametrize("protocol", ["hrw", "sorted"])
def test_validate_through_torchrun_agents_matches_the_simulator(protocol, tmp_path):
    from userproto import sorted_hrw  # noqa: F401 - registers "sorted" here; the agents import it
    from real_backend.validate import validate
    scenario = tmp_path / "sc.yaml"
    scenario.write_text(CRASH_AND_BACK.replace("PROTOCOL", protocol))
    verdict = validate(str(scenario), tmp_path / "out", torchrun=True,
                       until={"after": "round_complete", "round": 2, "plus": 1})
    assert verdict["real_side"].startswith("torchrun's agents"), verdict
    assert verdict["rounds_real"] == 3 and verdict["same_members_and_ranks"], verdict
    assert verdict["passed"]
    assert "--torchrun" in (tmp_path / "out" / "validation.md").read_text()


def test_validate_torchrun_refuses_what_it_cannot_do(tmp_path):
    scenario = tmp_path / "sc.yaml"
    scenario.write_text(CRASH_AND_BACK.replace("PROTOCOL", "hrw")
                        + "  - {kind: pause, node: 2, at: {after: round_complete, round: 0, plus: 1}, duration: 2}\n")
    r = subprocess.run([sys.executable, "-m", "rdzv_sim", "validate", str(scenario), "--torchrun",
                        "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "does not do pause" in r.stdout + r.stderr
    assert not (tmp_path / "out").exists()
