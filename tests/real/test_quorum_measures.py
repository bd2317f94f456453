"""What `rdzv-sim validate` reads from torchft's step records (no torchft needed): with the
asynchronous quorum a heal shows only as the healer's first step, from the Lighthouse's answer,
outlasting a normal one."""
import math

from real_backend.quorum_validate import calibrated, measure_real, reused_ids
from real_backend.torchft_run import GroupFault, TorchftRun


ANSWER = 2 ** -7         # the Lighthouse answers this long after a step starts


def records(first_healed_step: float) -> list[dict]:
    """Three groups stepping every 0.25 s; group 1 dies at 1.0 s and is back at 2.125 s, its first
    step (healing) taking `first_healed_step`; the others wait for it in the
    all-reduce."""
    out = []
    for g in range(3):
        t, step, pid = 0.0, 0, 100 + g
        while t < 4.0:
            if g == 1 and 1.0 <= t < 2.0:
                t, pid = 2.125, 200
                continue
            back = g == 1 and pid == 200 and not any(r["group"] == 1 and r["pid"] == 200 for r in out)
            length = first_healed_step if (back or (g != 1 and 2.125 <= t < 2.375)) else 0.25
            members = ["g0", "g2"] if 1.0 <= t < 2.125 else ["g0", "g1", "g2"]
            out.append({"group": g, "pid": pid, "step": step, "t0": t, "q": t + ANSWER,
                        "answered": t + ANSWER, "t": t + length, "committed": True,
                        "heal": back, "healed": back, "replicas": members})
            t, step = t + length, step + 1
    return out


def config() -> TorchftRun:
    return TorchftRun(groups=3, step_time=0.25, async_quorum=True,
                      faults=[GroupFault(1, kill_at=1.0, restart_at=2.0)])


def test_an_async_heal_that_outlasts_its_step_is_that_step():
    m = measure_real(records(0.625), config())
    assert m["heal_s"] == 0.625 - ANSWER
    assert m["step_s"] == 0.25


def test_an_async_heal_hidden_in_its_step_is_not_measured_and_calibrates_nothing():
    m = measure_real(records(0.25), config())
    assert math.isnan(m["heal_s"])
    from rdzv_sim.scenario.load import load
    sc = load("validate-quorum-async")
    assert calibrated(sc, m["heal_s"]) == (sc, None)


def test_the_groups_a_restarted_lighthouse_gave_their_old_quorum_id():
    """The Lighthouse dies at 1.0 s and is back at 2.0 s. Group 2 gets quorum 1 from the new one
    alone, then all three get quorum 2: the id groups 0 and 1 last had from the old Lighthouse,
    so they (not group 2) keep their old process group."""
    def rec(g, q, qid):
        return {"group": g, "q": q, "quorum_id": qid}
    steps = [rec(g, 0.5, 2) for g in range(3)] + [rec(2, 2.1, 1), rec(2, 2.3, 2)]
    steps += [rec(g, 2.3, 2) for g in (0, 1)]
    assert reused_ids(steps, 3, GroupFault(None, 1.0, 2.0)) == [0, 1]
    fresh = [rec(g, 0.5, 2) for g in range(3)] + [rec(g, 2.1, 1) for g in range(3)]
    assert reused_ids(fresh, 3, GroupFault(None, 1.0, 2.0)) == []


def test_the_store_each_quorum_id_was_built_on_is_read_from_the_records():
    """Each record names its quorum's store and its own group's: id 2 was built on group 1's
    store (its first answer); a later answer of id 2 names group 0's, where nobody
    reconfigured. Records from before the runner kept stores give none."""
    from real_backend.quorum_validate import lighthouse_given

    def rec(g, q, qid, store, members):
        return {"group": g, "q": q, "quorum_id": qid, "replicas": members, "store": f"h:{store}",
                "own_store": f"h:{90 + g}"}
    steps = [rec(g, 0.2, 1, 90, ["g0"]) for g in (0,)] + [rec(g, 0.5, 2, 91, ["g0", "g1", "g2"]) for g in range(3)]
    steps += [rec(g, 0.7, 2, 90, ["g0", "g1", "g2"]) for g in range(3)] + [rec(2, 2.1, 1, 92, ["g2"])]
    assert lighthouse_given(steps, GroupFault(None, 1.0, 2.0)) == {"last_id": 2, "first_retry": 2,
                                                                   "stores": {1: 0, 2: 1}}
    old = [{k: v for k, v in r.items() if k not in ("store", "own_store")} for r in steps]
    assert lighthouse_given(old, GroupFault(None, 1.0, 2.0))["stores"] == {}
