"""hrw's script (`protocols/hrw/script.py`) is the one statement of a fault-free round's store
requests: the per-operation generator sends exactly its calls, role by role, and the aggregate
round model times and prices exactly its requests (watches included)."""
import re
from collections import defaultdict

import numpy as np
import pytest

from rdzv_sim.aggregate.hrw_round import Sizes, hrw_round
from rdzv_sim.aggregate.queue import Fifo
from rdzv_sim.protocols.hrw.script import (AWAIT_READY, BELOW_MIN, CLOSE, CONFIRM, JOIN, READY, WAIT,
                                           Request, nbytes)
from rdzv_sim.scenario.load import load
from rdzv_sim.sim import runtime as R
from rdzv_sim.sim.simulation import Simulation


def calls(reqs) -> list[tuple[str, str]]:
    """(op, key) of a script's calls (its watches are FirstOf branches, not calls)."""
    return [(r.op, r.key) for r in reqs if not r.watch]


def as_script(op) -> tuple[str, str]:
    """A generator's request in the script's words: its key under the round or the run."""
    keys = op.keys if hasattr(op, "keys") else [k for k, _ in op.items] if hasattr(op, "items") else [op.key]

    def word(k):
        k = k.removeprefix("rdzv/job/")
        m = re.fullmatch(r"r\d+/(.*)", k)
        return re.sub(r"^([na])\d+$", r"\1{slot}", m.group(1)) if m else "P/" + k
    words = [word(k) for k in keys]
    return type(op).__name__, (words[0] if len(words) == 1 else words[0].replace("{slot}", "*"))


def recorded_round(monkeypatch, nodes=3, min_nodes=2):
    sc = load({"name": "script", "seed": 1, "duration": 60, "cluster": {"nodes": nodes, "start_spread": 0},
               "shards": {"count": 0},
               "protocol": {"name": "hrw", "min_nodes": min_nodes, "max_nodes": nodes, "last_call_timeout": 1}})
    sim = Simulation(sc)
    log = defaultdict(list)
    real = R.SimRuntime.store_call

    def store_call(self, node, op):
        log[node.name].append(as_script(op))
        return (yield from real(self, node, op))
    monkeypatch.setattr(R.SimRuntime, "store_call", store_call)
    sim.run()
    return sim, dict(log)


def test_the_generator_calls_the_store_as_the_script_says(monkeypatch):
    """Every joiner joins and acks; the closer (the max_nodes-th) closes between; the last to
    ack says ready. Nothing else is called in a round where nothing fails."""
    sim, log = recorded_round(monkeypatch)
    closers = [n for n, ops in log.items() if ("MultiSet", "a*") in ops]
    readies = [n for n, ops in log.items() if ("CompareSet", "ready") in ops]
    assert len(closers) == 1 and len(readies) == 1
    for name, ops in log.items():
        want = calls(JOIN) + (calls(CLOSE) if name in closers else []) + calls(CONFIRM)
        want += calls(READY) if name in readies else []
        assert ops == want, name


def test_a_request_not_in_the_script_is_seen():
    """The near miss: a generator that also read its slot back would not match."""
    class Get:
        key = "rdzv/job/r0/n2"
    assert as_script(Get()) == ("Get", "n{slot}")
    assert calls(JOIN) + [("Get", "n{slot}")] != calls(JOIN)


@pytest.mark.parametrize("n, lo", [(3, 2), (8, 8), (64, 48)])
def test_the_round_model_times_and_prices_the_scripts_requests(n, lo):
    """Per joiner its join and its wait for `closed`; below min_nodes the three watches and
    `closed` again; the close once; per member its assignment, ack and `ready`; ready once."""
    sc = load("quickstart")
    fifo, sizes = Fifo(sc.store), Sizes(key=17, desc=70, assign=130)
    t = hrw_round(fifo, np.linspace(0, 1, n), np.full(n, 1e-4), lo, n, 5.0, sizes)
    assert t is not None and len(t.members) == n

    def size(reqs, times=1, count=1):
        return times * sum(nbytes(r, sizes.key, sizes.desc, sizes.assign, count) for r in reqs)
    assert fifo.ops == (n * (len(JOIN) + len(WAIT)) + (lo - 1) * (len(BELOW_MIN) + len(WAIT))
                        + len(CLOSE) + n * (len(CONFIRM) + len(AWAIT_READY)) + len(READY))
    assert fifo.bytes == (size(JOIN + WAIT, n) + size(BELOW_MIN + WAIT, lo - 1) + size(CLOSE, count=n)
                          + size(CONFIRM + AWAIT_READY, n) + size(READY))


def test_a_batch_is_priced_per_member():
    req = Request("MultiGet", "n*", each=True)
    assert nbytes(req, 17, count=4) == 4 * 17 and nbytes(Request("Check", "P/closed"), 17, count=4) == 17
