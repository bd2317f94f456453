"""hrw's round as the store requests it makes when nothing fails: the one statement of them.

The protocol's generator (`protocol.py`) sends these, with what it does when something fails;
the aggregate round model (`rdzv_sim.aggregate.hrw_round`) times and prices them for every
joiner at once, reading them from here; a test runs the generator per operation and holds its
requests to this script (`tests/protocols/hrw/test_script.py`).

A key is under the round's prefix (`r<round>/`), or the run's (`P/`); `{slot}` is the
joiner's slot, `n*`/`a*` every member's.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Request:
    op: str                 # the store operation (`rdzv_sim.ops`): Check, CompareSet, Add, Set, ...
    key: str
    carries: int | str = 0  # bytes it carries beyond its key: a number, or what the round model
                            # sizes ("desc": a descriptor, "assign": an assignment, "key": a token)
    each: bool = False      # one key per member, in one request (a batch)
    reply: bool = True      # False: fire and forget (TCPStore's set)
    watch: bool = False     # a wait on the key beside others (a FirstOf branch), not a call of its own


# every joiner: still open? the round, a slot, its descriptor
JOIN = (Request("Check", "P/closed"), Request("CompareSet", "P/round", 1), Request("Add", "seq"),
        Request("Set", "n{slot}", "desc", reply=False))
# every joiner waits for the round to close; one below min_nodes for the min_nodes-th too
WAIT = (Request("Get", "closed", watch=True),)
BELOW_MIN = (Request("Get", "n{min}", watch=True), Request("Get", "P/closed", watch=True),
             Request("Get", "end", watch=True))
# the closer (the max_nodes-th joiner, else the min_nodes-th after last call)
CLOSE = (Request("Add", "seq"), Request("CompareSet", "closed", "key"), Request("Check", "n*", each=True),
         Request("MultiGet", "n*", each=True), Request("MultiSet", "a*", "assign", each=True))
# every member: its assignment, its ack; the last to ack says the round is ready
CONFIRM = (Request("Get", "a{slot}", watch=True), Request("Add", "ack"))
READY = (Request("CompareSet", "ready", "key2"),)
AWAIT_READY = (Request("Get", "ready", watch=True),)
# a member leaving a running round: the next round, then the end of this one
END = (Request("CompareSet", "P/round", 4), Request("Set", "end", 8, reply=False))


def nbytes(req: Request, key: int, desc: int = 0, assign: int = 0, count: int = 1) -> int:
    """The bytes of `req` as the round model prices it: its key (`key` bytes a key) and what it
    carries, times `count` members for a batch."""
    extra = {"desc": desc, "assign": assign, "key": key, "key2": key + 2}.get(req.carries, req.carries)
    return count * (key + extra) if req.each else key + extra
