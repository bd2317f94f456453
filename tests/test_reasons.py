"""Why an agent leaves a round is a `Reason`: the protocols' watches, the runtimes' signals and
the agent's rules read members, never strings."""
import ast
from pathlib import Path

from rdzv_sim.protocols.agent import uses_a_restart
from rdzv_sim.protocols.base import RoundResult
from rdzv_sim.protocols.hrw import HrwProtocol, HrwSettings
from rdzv_sim.reasons import ExitReason, Reason

ROOT = Path(__file__).resolve().parent.parent


def test_a_failure_uses_a_restart_and_a_round_ended_by_others_does_not():
    assert uses_a_restart(Reason.WORKERS_FAILED) and uses_a_restart(Reason.PEER_FAILED)
    assert not uses_a_restart(Reason.NODES_WAITING) and not uses_a_restart(Reason.ROUND_ENDED)


def test_hrws_watches_name_their_reasons():
    p = HrwProtocol(HrwSettings(name="hrw", min_nodes=2, max_nodes=3).resolved(3))
    result = RoundResult(round=0, rank=0, nnodes=2, world_size=2, first_rank=0, master="a", digest="d")
    assert [w.reason for w in p.watch(result)] == [Reason.ROUND_ENDED, Reason.PROBE, Reason.NODES_WAITING]
    assert f"{Reason.PROBE}" == "probe"


def words_in_calls(callees: tuple, words: set, root: Path = ROOT) -> list[str]:
    """file:line of every call to one of `callees` given one of `words` as a string literal,
    in rdzv_sim/ and real_backend/."""
    found = []
    for p in [*(root / "rdzv_sim").rglob("*.py"), *(root / "real_backend").rglob("*.py")]:
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn in callees:
                found += [f"{p.relative_to(root)}:{node.lineno}" for a in node.args
                          if isinstance(a, ast.Constant) and a.value in words]
    return found


def test_no_reason_is_written_as_a_string():
    """`Watch(op, "round_ended")` or `signal("peer_failed")` would be a word nothing checks
    (tests/test_words.py holds every literal; this holds the calls that take a reason)."""
    found = words_in_calls(("Watch", "signal", "take", "Local", "leave"), {r.value for r in Reason})
    assert not found, found


def test_no_exit_reason_is_written_as_a_string():
    """`Exit("store_lost")`, `gave_up(t, names, "rendezvous_timeout", ...)`: an agent's exit is
    an `ExitReason` where it is decided, in the agent, the round models and the real agents."""
    found = words_in_calls(("Exit", "_exit", "_shut_down", "gave_up", "exit_"), {r.value for r in ExitReason})
    assert not found, found


def test_the_scan_sees_a_word_written_as_a_string(tmp_path):
    """The near miss: a planted `Exit("store_lost")` is found, `Exit(ExitReason.STORE_LOST)` not."""
    (tmp_path / "rdzv_sim").mkdir()
    (tmp_path / "real_backend").mkdir()
    (tmp_path / "rdzv_sim" / "planted.py").write_text('Exit("store_lost")\nExit(ExitReason.STORE_LOST)\n')
    assert words_in_calls(("Exit",), {r.value for r in ExitReason}, tmp_path) == ["rdzv_sim/planted.py:1"]


def test_an_exit_reason_is_its_word_in_the_tables():
    assert f"{ExitReason.MAX_RESTARTS}" == "max_restarts" and ExitReason.STORE_LOST == "store_lost"
