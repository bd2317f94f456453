"""One module names every event (`rdzv_sim.events`): the trace refuses any other name, and
every event name written in the code is one of them."""
import ast
from pathlib import Path

import pytest

from rdzv_sim.events import DETAIL, NAMES, Event, UnknownEvent, check
from rdzv_sim.trace import Tracer, events_table

ROOT = Path(__file__).resolve().parent.parent


def test_the_trace_refuses_an_event_it_does_not_know():
    tr = Tracer()
    tr.record(0.0, "n0", "join", detail={"slot": 1})
    tr.record(0.1, "n0", Event.ROUND_CLOSED)
    with pytest.raises(UnknownEvent, match="'joined' is not one of rdzv_sim.events.Event"):
        tr.record(0.2, "n0", "joined")
    with pytest.raises(UnknownEvent):
        events_table([(0.0, "n0", "rank_asigned", None, None, None, "")], "x", 0)
    assert list(events_table(tr, "x", 0)["event"]) == ["join", "round_closed"]


def test_a_protocol_registers_its_own_events():
    import uuid
    from rdzv_sim.events import register_event
    tr = Tracer()
    name = f"my_probe_sent_{uuid.uuid4().hex[:8]}"     # a name of its own: the registry is global
    with pytest.raises(UnknownEvent, match="register_event"):
        tr.record(0.0, "n0", name)
    register_event(name, ("probe",))
    tr.record(0.0, "n0", name, detail={"probe": 1})
    with pytest.raises(ValueError):
        register_event("Not An Event")


def test_an_event_is_its_string():
    assert Event.JOIN == "join" and check(Event.JOIN) == "join" and set(DETAIL) <= set(Event)
    assert f"{Event.JOIN}" == str(Event.JOIN) == "join"             # as text, its value


# that no event name is written as a string literal (outside this module's own): tests/test_words.py


def test_details_follow_their_rows_into_time_order():
    """Blocks written ahead, with a detail a row, one detail for all, or none, and single
    events between them: each row keeps its own detail once the table is in time order."""
    import numpy as np
    tr = Tracer()
    tr.record_many([5.0, 1.0, 3.0], ["a", "b", "c"], "join", 0, fields={"slot": np.array([1, 2, 3])})
    tr.record(2.0, "a", "node_start", detail={"why": "start"})
    tr.record_many(4.0, ["a", "b"], "round_left", 0, fields={"reason": "peer_failed"})
    tr.record_many([0.5, 6.0], ["b", "c"], "workers_started", 0)
    tr.record_many(2.5, ["c"], "round_left", 0, fields={"reason": "peer_failed"})
    ev = events_table(tr, "s", 0)
    assert ev["t"].tolist() == [0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 4.0, 5.0, 6.0]
    assert ev["detail"].tolist() == ['', '{"slot":2}', '{"why":"start"}', '{"reason":"peer_failed"}',
                                     '{"slot":3}', '{"reason":"peer_failed"}', '{"reason":"peer_failed"}',
                                     '{"slot":1}', '']


def test_the_trace_refuses_a_detail_its_event_does_not_carry():
    tr = Tracer()
    tr.record(0.0, "n0", Event.JOIN, detail={"slot": 1})                   # its field
    with pytest.raises(UnknownEvent, match=r"'join' carries no detail 'slots'.*\['slot'\]"):
        tr.record(0.1, "n0", Event.JOIN, detail={"slots": 1})
    with pytest.raises(UnknownEvent, match="carries no detail 'why'"):
        tr.record(0.2, "n0", Event.ROUND_STALE, detail={"why": "x"})       # it carries none
    with pytest.raises(UnknownEvent, match="carries no detail 'slots'"):
        tr.record_many(0.3, ["n0", "n1"], Event.JOIN, fields={"slots": [1, 2]})
    tr.record_many(0.3, ["n0", "n1"], Event.JOIN, fields={"slot": [1, 2]})
    assert list(events_table(tr, "x", 0)["event"]) == ["join", "join", "join"]


def test_protocols_and_runtimes_emit_events_by_type():
    """`Emit(Event.JOIN, ...)`, never `Emit("join", ...)`: a name is checked where it is written."""
    found = []
    for p in [*(ROOT / "rdzv_sim").rglob("*.py"), *(ROOT / "real_backend").rglob("*.py")]:
        for node in ast.walk(ast.parse(p.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("Emit", "emit") and node.args
                    and isinstance(node.args[0], ast.Constant)):
                found.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


# --- the boundaries mutation testing found unstated (reports/mutation.md) ------------------
def test_a_detail_with_every_field_its_event_carries_is_taken_one_more_is_refused():
    from rdzv_sim.events import check_detail, fields
    every = {f: 1 for f in fields("round_left")}
    check_detail("round_left", every)                                  # all of them: fine
    with pytest.raises(UnknownEvent) as e:
        check_detail("round_left", {**every, "slots": 1, "why": 2})
    assert str(e.value) == (f"event 'round_left' carries no detail 'slots', 'why': its fields are "
                            f"{sorted(fields('round_left'))} (rdzv_sim/events.py, DETAIL; or "
                            "register_event for a protocol's own)")
    with pytest.raises(UnknownEvent, match=r"its fields are none \(rdzv_sim/events.py"):
        check_detail("round_stale", {"x": 1})


@pytest.mark.parametrize("name", ["Not An Event", "has-hyphen", "UPPER", 5])
def test_an_event_name_is_lower_case_with_underscores(name):
    from rdzv_sim.events import register_event
    with pytest.raises(ValueError) as e:
        register_event(name)
    assert str(e.value) == f"register_event({name!r}): an event name is lower_case_with_underscores"


def test_an_unknown_event_says_where_to_add_it():
    from rdzv_sim.events import check
    with pytest.raises(UnknownEvent) as e:
        check("joined")
    assert str(e.value) == ("event 'joined' is not one of rdzv_sim.events.Event: add it there (with its "
                            "detail fields), or register your protocol's own with "
                            "rdzv_sim.events.register_event, before a runtime records it")
