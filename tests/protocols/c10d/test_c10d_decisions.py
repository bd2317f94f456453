"""Decision tables of the c10d model, written from torch 2.13's dynamic_rendezvous.py.

Each row: a hand-built state, the clock, and the action torch's operation returns.
"""
import pytest

from rdzv_sim.protocols.c10d import decisions as D
from rdzv_sim.protocols.c10d.state import State, desc

A = D.Action
ME, P1, P2 = desc("hostA", 10), desc("hostB", 11), desc("hostC", 12)
S = D.Settings(min_nodes=2, max_nodes=3, last_call=30.0, keep_alive_interval=5.0,
               keep_alive_max_attempt=3)
WALL = 1000.0


def st(**kw):
    s = State()
    for k, v in kw.items():
        setattr(s, k, v)
    return s


JOIN_ROWS = [
    # (id, state, now, deadline, expected)
    ("closed", st(closed=True), 0, 10, A.ERROR_CLOSED),
    ("closed, redundant: graceful exit", st(closed=True, redundancy_list={ME}), 0, 10, A.GRACEFUL_EXIT),
    ("redundant, round still full, beat due",
     st(redundancy_list={ME}, participants={P1: 0, P2: 1, desc("hostD", 1): 2},
        last_heartbeats={ME: WALL - 6}), 0, 10, A.KEEP_ALIVE),
    ("redundant, round still full, beat fresh",
     st(redundancy_list={ME}, participants={P1: 0, P2: 1, desc("hostD", 1): 2},
        last_heartbeats={ME: WALL - 1}), 0, 10, A.SYNC),
    ("redundant, a seat freed", st(redundancy_list={ME}, participants={P1: 0}), 0, 10,
     A.REMOVE_FROM_REDUNDANCY_LIST),
    ("complete and in it", st(complete=True, participants={ME: 0, P1: 1}), 0, 10, A.FINISH),
    ("deadline passed, participant, within rollback", st(participants={ME: 0}), 12, 10,
     A.REMOVE_FROM_PARTICIPANTS),
    ("deadline passed, waiting, within rollback", st(wait_list={ME}, complete=True,
                                                     participants={P1: 0}), 12, 10,
     A.REMOVE_FROM_WAIT_LIST),
    ("deadline passed, rollback over", st(participants={ME: 0}), 16, 10, A.ERROR_TIMEOUT),
    ("deadline passed, nobody", st(), 12, 10, A.ERROR_TIMEOUT),
    ("complete, room left: wait list", st(complete=True, participants={P1: 0}), 0, 10,
     A.ADD_TO_WAIT_LIST),
    ("complete, room left, already waiting, beat fresh",
     st(complete=True, participants={P1: 0}, wait_list={ME}, last_heartbeats={ME: WALL}),
     0, 10, A.SYNC),
    ("complete, full: redundancy list",
     st(complete=True, participants={P1: 0, P2: 1, desc("hostD", 1): 2}), 0, 10,
     A.ADD_TO_REDUNDANCY_LIST),
    ("participant, quorum, last call over",
     st(participants={ME: 0, P1: 0}, deadline=WALL - 1), 0, 10, A.MARK_RENDEZVOUS_COMPLETE),
    ("participant, quorum, last call running",
     st(participants={ME: 0, P1: 0}, deadline=WALL + 5, last_heartbeats={ME: WALL}), 0, 10, A.SYNC),
    ("participant, below quorum", st(participants={ME: 0}, last_heartbeats={ME: WALL - 9}),
     0, 10, A.KEEP_ALIVE),
    ("new node, round open", st(participants={P1: 0}), 0, 10, A.ADD_TO_PARTICIPANTS),
]


@pytest.mark.parametrize("state, now, deadline, expected", [r[1:] for r in JOIN_ROWS],
                         ids=[r[0] for r in JOIN_ROWS])
def test_join_table(state, now, deadline, expected):
    assert D.join(state, ME, S, now, deadline, WALL) is expected


@pytest.mark.parametrize("state, now, expected", [
    (st(participants={ME: 0}), 0, A.REMOVE_FROM_PARTICIPANTS),
    (st(participants={ME: 0}), 11, A.ERROR_TIMEOUT),
    (st(participants={P1: 0}), 0, A.FINISH),
])
def test_exit_table(state, now, expected):
    assert D.exit_(state, ME, now, 10) is expected


@pytest.mark.parametrize("state, now, expected", [
    (st(closed=True), 11, A.FINISH),
    (st(), 11, A.ERROR_TIMEOUT),
    (st(), 0, A.MARK_RENDEZVOUS_CLOSED),
])
def test_close_table(state, now, expected):
    assert D.close(state, now, 10) is expected


@pytest.mark.parametrize("last, now, expected", [
    (WALL - 6, 0, A.KEEP_ALIVE), (WALL - 6, 11, A.ERROR_TIMEOUT), (WALL - 1, 0, A.FINISH),
    (None, 0, A.FINISH),
])
def test_keep_alive_table(last, now, expected):
    state = st(last_heartbeats={} if last is None else {ME: last})
    assert D.keep_alive(state, ME, S, now, 10, WALL) is expected


def test_add_to_participants_sets_last_call_at_min_and_completes_at_max():
    s = st(participants={P1: 0})
    D.apply(A.ADD_TO_PARTICIPANTS, s, ME, S, WALL)
    assert s.deadline == WALL + 30.0 and not s.complete           # exactly min_nodes
    D.apply(A.ADD_TO_PARTICIPANTS, s, P2, S, WALL)
    assert s.complete and s.deadline is None                      # max_nodes: at once
    # ranks: enumerate(sorted(participants)) over (addr, pid, local_id)
    assert [s.participants[d] for d in (ME, P1, P2)] == [0, 1, 2]


def test_ranks_sort_by_addr_then_pid_numerically():
    s = st(participants={desc("h", 10): 0, desc("h", 9): 0, desc("g", 99): 0})
    D.mark_complete(s)
    assert s.participants == {desc("g", 99): 0, desc("h", 9): 1, desc("h", 10): 2}


def test_round_grows_only_when_a_complete_round_empties():
    s = st(complete=True, round=4, participants={ME: 0, P1: 1}, last_heartbeats={ME: 1, P1: 1})
    D.apply(A.REMOVE_FROM_PARTICIPANTS, s, ME, S, WALL)
    assert s.round == 4 and s.complete
    D.apply(A.REMOVE_FROM_PARTICIPANTS, s, P1, S, WALL)
    assert s.round == 5 and not s.complete


def test_sanitize_removes_dead_after_three_missed_beats_lazily():
    s = st(complete=True, participants={ME: 0, P1: 1},
           last_heartbeats={ME: WALL - 1, P1: WALL - 15.5})
    assert D.sanitize(s, S, WALL) == [P1]
    assert P1 not in s.participants and s.complete                # still complete: ME is in it
    s2 = st(complete=True, participants={P1: 0}, last_heartbeats={P1: WALL - 16})
    D.sanitize(s2, S, WALL)
    assert s2.round == 1 and not s2.complete                      # emptied: next round
    # background beats the blob has not seen keep a node alive
    s3 = st(participants={P1: 0}, last_heartbeats={P1: WALL - 100})
    assert D.sanitize(s3, S, WALL, {P1: WALL - 2}) == []


def test_incomplete_round_below_min_loses_its_deadline():
    s = st(participants={ME: 0, P1: 0}, deadline=WALL + 3, last_heartbeats={ME: 0, P1: WALL})
    D.sanitize(s, S, WALL)
    assert s.deadline is None


def test_state_encoding_is_json_base64_and_grows_like_torch():
    import base64
    import json
    s = st(participants={desc(f"10.0.{i // 256}.{i % 256}", 40000 + i): i for i in range(512)},
           last_heartbeats={desc(f"10.0.{i // 256}.{i % 256}", 40000 + i): WALL for i in range(512)})
    text = s.encode()
    json.loads(base64.b64decode(text))                             # never pickle
    assert State.decode(text) == s
    # torch 2.13 (pickle + base64): 51 KB at 512 nodes; ours is the same order of size
    assert 35_000 < len(text) < 80_000
