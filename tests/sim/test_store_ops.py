"""The simulated store keeps TCPStore's semantics; errors reach the protocol as exceptions."""
import pytest

from rdzv_sim.ops import (Add, Check, CompareSet, Delete, FirstOf, Get, Local, MultiGet, MultiSet,
                          Now, Set, Sleep, StoreError, StoreTimeout, Wait, WallClock)
from rdzv_sim.scenario.schema import Store
from rdzv_sim.sim.sandbox import Sandbox


def one(gen_fn, **kw):
    sb = Sandbox(nodes=1, **kw)
    return sb.run(lambda node: gen_fn())[0], sb


def test_compare_set_semantics():
    def g():
        r1 = yield CompareSet("k", "", "a")          # missing + expected "" -> sets
        r2 = yield CompareSet("k", "x", "b")          # mismatch -> returns current
        r3 = yield CompareSet("k", "a", "c")          # match -> returns desired
        r4 = yield CompareSet("missing", "e", "d")    # missing + non-empty expected -> expected
        exists = yield Check(("missing",))
        return r1, r2, r3, r4, exists
    assert one(g)[0] == ("a", "a", "c", "e", False)


def test_add_set_get_multi_delete():
    def g():
        a = yield Add("c", 5)
        b = yield Add("c", -2)
        yield Set("s", "v")
        v = yield Get("s")
        yield MultiSet((("x", "1"), ("y", "2")))
        mv = yield MultiGet(("x", "y", "c"))
        d1 = yield Delete("x")
        d2 = yield Delete("x")
        return a, b, v, mv, d1, d2
    assert one(g)[0] == (5, 3, "v", ["1", "2", "3"], True, False)


def test_get_blocks_until_set_by_another_node():
    sb = Sandbox(nodes=2)

    def reader():
        v = yield Get("late")
        return v, (yield Now())

    def writer():
        yield Sleep(5.0)
        yield Set("late", "here")
    sb.spawn(sb.nodes[0], reader())
    p = sb.spawn(sb.nodes[1], writer())
    r = sb.spawn(sb.nodes[0], reader())
    sb.env.run()
    v, t = r.value
    assert v == "here" and 5.0 < t < 5.01


def test_get_times_out_with_store_timeout():
    def g():
        try:
            yield Get("never", timeout=2.0)
        except StoreTimeout:
            return "timeout", (yield Now())
    (what, t), _ = one(g)
    assert what == "timeout" and 2.0 <= t < 2.01


def test_wait_times_out_on_missing_key_only():
    def g():
        yield Set("a", "1")
        yield Wait(("a",), timeout=1.0)
        try:
            yield Wait(("a", "b"), timeout=1.0)
        except StoreTimeout:
            return "partial wait timed out"
    assert one(g)[0] == "partial wait timed out"


def test_first_of_returns_first_and_cancels_rest():
    def g():
        first = yield FirstOf(Get("never"), Sleep(3.0), Local("sig"))
        yield Set("never", "x")                     # the cancelled Get must not linger
        return first, (yield Now())
    ((idx, val), t), sb = one(g)
    assert idx == 1 and 3.0 <= t < 3.01
    assert not sb.store.waiters


def test_first_of_named_branches_give_the_winners_name():
    def g():
        first = yield FirstOf(key=Get("never"), timer=Sleep(3.0))
        return first
    assert one(g)[0] == ("timer", None)
    assert FirstOf(Get("k"), Sleep(1.0)).result(1, None) == (1, None)      # near miss: by index
    with pytest.raises(TypeError, match="by position or by name"):
        FirstOf(Get("k"), timer=Sleep(1.0))


def test_first_of_local_signal():
    sb = Sandbox(nodes=1)
    node = sb.nodes[0]

    def g():
        return (yield FirstOf(Sleep(100.0), Local("workers_failed")))
    p = sb.spawn(node, g())

    def poke():
        yield sb.env.timeout(4.0)
        node.signal("workers_failed")
    sb.env.process(poke())
    sb.env.run()
    assert p.value == (1, None) and sb.env.now >= 4.0


def test_dead_store_fails_fast_and_paused_store_hangs_until_deadline():
    store = Store(op_timeout=7.0)

    def g():
        try:
            yield Add("c", 1)
        except (StoreError, StoreTimeout) as e:
            return type(e).__name__, (yield Now())
    sb = Sandbox(nodes=1, store=store)
    sb.store.crash()
    (name, t) = sb.run(lambda n: g())[0]
    assert name == "StoreError" and t < 0.01
    sb = Sandbox(nodes=1, store=store)
    sb.store.pause()
    (name, t) = sb.run(lambda n: g())[0]
    assert name == "StoreTimeout" and t == pytest.approx(7.0)


def test_store_death_wakes_blocked_waiters_with_error():
    sb = Sandbox(nodes=1)

    def g():
        try:
            yield Get("never", timeout=1000.0)
        except StoreError:
            return "lost", (yield Now())
    p = sb.spawn(sb.nodes[0], g())

    def kill():
        yield sb.env.timeout(10.0)
        sb.store.crash()
    sb.env.process(kill())
    sb.env.run()
    assert p.value[0] == "lost" and 10.0 <= p.value[1] < 10.01


def test_wall_clock_follows_skew():
    sb = Sandbox(nodes=1)
    sb.nodes[0].clock_skew = 5.0

    def g():
        return (yield WallClock()) - (yield Now())
    assert sb.run(lambda n: g())[0] == pytest.approx(1.7e9 + 5.0)


def test_non_operation_is_a_clear_error():
    def g():
        yield "not an op"
    with pytest.raises(TypeError, match="not an operation"):
        one(g)
