"""torchrun's rendezvous operations as pure decision functions: state in, action out.

Written from torch 2.13's dynamic_rendezvous.py (`_RendezvousJoinOp`, `_RendezvousExitOp`,
`_RendezvousCloseOp`, `_RendezvousKeepAliveOp`, and the executor's state mutations). Times are
passed in (monotonic `now`, wall-clock `wall`), so every branch is a table row a test can hit.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .state import State, desc_key

ROLLBACK_PERIOD = 5.0         # dynamic_rendezvous.py: `rollback_period = 5  # 5 seconds`


class Action(Enum):
    KEEP_ALIVE = 1
    ADD_TO_PARTICIPANTS = 2
    ADD_TO_WAIT_LIST = 3
    ADD_TO_REDUNDANCY_LIST = 4
    REMOVE_FROM_PARTICIPANTS = 5
    REMOVE_FROM_WAIT_LIST = 6
    REMOVE_FROM_REDUNDANCY_LIST = 7
    MARK_RENDEZVOUS_COMPLETE = 8
    MARK_RENDEZVOUS_CLOSED = 9
    SYNC = 10
    ERROR_CLOSED = 11
    ERROR_TIMEOUT = 12
    FINISH = 13
    GRACEFUL_EXIT = 14        # torch raises RendezvousGracefulExitError


@dataclass(frozen=True)
class Settings:
    min_nodes: int
    max_nodes: int
    last_call: float = 30.0
    keep_alive_interval: float = 5.0
    keep_alive_max_attempt: int = 3


def keep_alive_due(state: State, node: str, s: Settings, beat: float | None = None) -> float | None:
    """The wall time from which `node` should send a keep-alive (None: it has no heartbeat).
    `beat`: its latest background beat, which the blob may not show yet."""
    last = state.last_heartbeats.get(node)
    if last is None:
        return None
    return (last if beat is None or beat < last else beat) + s.keep_alive_interval


def flips(state: State, node: str, s: Settings, beat: float | None = None) -> list[float]:
    """Wall times at which a node that syncs (waits) may decide otherwise with no write in
    between: the last-call deadline of an open round, and its own keep-alive falling due (in
    an open round by the blob's heartbeat; in a complete one only given its background `beat`)."""
    out = []
    if state.deadline is not None and not state.complete:
        out.append(state.deadline)
    if not state.complete or beat is not None:
        due = keep_alive_due(state, node, s, beat)
        if due is not None:
            out.append(due)
    return out


def should_keep_alive(state: State, node: str, s: Settings, wall: float, beat: float | None = None) -> bool:
    due = keep_alive_due(state, node, s, beat)
    return due is not None and due <= wall


def join(state: State, node: str, s: Settings, now: float, deadline: float, wall: float,
         beat: float | None = None) -> Action:
    """`_RendezvousJoinOp.__call__`, branch for branch (`beat` as in `keep_alive_due`)."""
    if state.closed:
        return Action.GRACEFUL_EXIT if node in state.redundancy_list else Action.ERROR_CLOSED
    if node in state.redundancy_list:
        if len(state.participants) == s.max_nodes:
            return Action.KEEP_ALIVE if should_keep_alive(state, node, s, wall, beat) else Action.SYNC
        return Action.REMOVE_FROM_REDUNDANCY_LIST
    is_participant = node in state.participants
    if state.complete and is_participant:
        return Action.FINISH
    if now > deadline:
        if now <= deadline + ROLLBACK_PERIOD:
            if is_participant:
                return Action.REMOVE_FROM_PARTICIPANTS
            if node in state.wait_list:
                return Action.REMOVE_FROM_WAIT_LIST
        return Action.ERROR_TIMEOUT
    if state.complete:
        if len(state.participants) < s.max_nodes:
            if node not in state.wait_list:
                return Action.ADD_TO_WAIT_LIST
        elif node not in state.redundancy_list and node not in state.wait_list:
            return Action.ADD_TO_REDUNDANCY_LIST
    elif is_participant:
        if (s.min_nodes <= len(state.participants) <= s.max_nodes and state.deadline is not None
                and state.deadline < wall):
            return Action.MARK_RENDEZVOUS_COMPLETE
    else:
        return Action.ADD_TO_PARTICIPANTS
    return Action.KEEP_ALIVE if should_keep_alive(state, node, s, wall, beat) else Action.SYNC


def exit_(state: State, node: str, now: float, deadline: float) -> Action:
    """`_RendezvousExitOp`: leave the participants before joining again."""
    if node in state.participants:
        return Action.ERROR_TIMEOUT if now > deadline else Action.REMOVE_FROM_PARTICIPANTS
    return Action.FINISH


def close(state: State, now: float, deadline: float) -> Action:
    """`_RendezvousCloseOp`."""
    if state.closed:
        return Action.FINISH
    return Action.ERROR_TIMEOUT if now > deadline else Action.MARK_RENDEZVOUS_CLOSED


def keep_alive(state: State, node: str, s: Settings, now: float, deadline: float, wall: float) -> Action:
    """`_RendezvousKeepAliveOp`."""
    if should_keep_alive(state, node, s, wall):
        return Action.ERROR_TIMEOUT if now > deadline else Action.KEEP_ALIVE
    return Action.FINISH


# --- what each action does to the local state (the executor's _add_to_... methods) ------------
def _remove_participant_epilogue(state: State, s: Settings) -> None:
    if state.complete:
        if not state.participants:             # the round grows only when it empties
            state.complete = False
            state.round += 1
    elif len(state.participants) < s.min_nodes:
        state.deadline = None


def apply(action: Action, state: State, node: str, s: Settings, wall: float) -> None:
    if action is Action.KEEP_ALIVE:
        state.last_heartbeats[node] = wall
    elif action is Action.ADD_TO_PARTICIPANTS:
        state.wait_list.discard(node)
        state.participants[node] = 0
        state.last_heartbeats[node] = wall
        if len(state.participants) == s.min_nodes:
            state.deadline = wall + s.last_call
        if len(state.participants) == s.max_nodes:
            mark_complete(state)
    elif action is Action.ADD_TO_WAIT_LIST:
        state.redundancy_list.discard(node)
        state.wait_list.add(node)
        state.last_heartbeats[node] = wall
    elif action is Action.ADD_TO_REDUNDANCY_LIST:
        state.redundancy_list.add(node)
        state.last_heartbeats[node] = wall
    elif action is Action.REMOVE_FROM_PARTICIPANTS:
        del state.participants[node]
        state.last_heartbeats.pop(node, None)
        _remove_participant_epilogue(state, s)
    elif action is Action.REMOVE_FROM_WAIT_LIST:
        state.wait_list.discard(node)
        state.last_heartbeats.pop(node, None)
    elif action is Action.REMOVE_FROM_REDUNDANCY_LIST:
        state.redundancy_list.discard(node)
        state.last_heartbeats.pop(node, None)
    elif action is Action.MARK_RENDEZVOUS_COMPLETE:
        mark_complete(state)
    elif action is Action.MARK_RENDEZVOUS_CLOSED:
        state.closed = True
    else:
        raise ValueError(f"{action} changes no state")


def mark_complete(state: State) -> None:
    state.complete = True
    state.deadline = None
    for rank, n in enumerate(sorted(state.participants, key=desc_key)):
        state.participants[n] = rank


def expired(state: State, s: Settings, wall: float, beats: dict | None = None) -> list[str]:
    """The nodes whose heartbeat expired. `beats` are background beats the blob does not show
    yet (the simulator's heartbeats are not ticked); a node's heartbeat is the later of the two."""
    expire = wall - s.keep_alive_interval * s.keep_alive_max_attempt
    beats = beats or {}
    return [n for n, last in state.last_heartbeats.items() if max(last, beats.get(n) or last) < expire]


def expired_among(state: State, s: Settings, wall: float, stopped: dict, floor: float) -> list[str] | None:
    """`expired` knowing only the beats that stopped (`stopped`) and that every other node beat
    at or after `floor`: O(stopped) instead of O(N). None when `floor` is too old to tell."""
    expire = wall - s.keep_alive_interval * s.keep_alive_max_attempt
    if floor < expire:
        return None
    return [n for n, beat in stopped_in(state, stopped) if beat < expire]


def stopped_in(state: State, stopped: dict):
    """(node, latest beat) of the blob's nodes whose background beats stopped, walking the
    smaller of the two."""
    hb = state.last_heartbeats
    if len(stopped) < len(hb):
        return [(n, max(hb[n], t)) for n, t in stopped.items() if n in hb]
    return [(n, max(last, stopped[n])) for n, last in hb.items() if n in stopped]


def sanitize(state: State, s: Settings, wall: float, beats: dict | None = None) -> list[str]:
    """`_BackendRendezvousStateHolder._sanitize`: drop nodes whose heartbeat expired."""
    dead = expired(state, s, wall, beats)
    remove_dead(state, dead, s)
    return dead


def remove_dead(state: State, dead: list[str], s: Settings) -> None:
    removed = False
    for n in dead:
        del state.last_heartbeats[n]
        if state.participants.pop(n, None) is not None:
            removed = True
        state.wait_list.discard(n)
        state.redundancy_list.discard(n)
    if removed:
        _remove_participant_epilogue(state, s)
