"""The soak, short form: the hrw torchrun plugin training through one fault of each kind
(seed 3: stop, kill, partition, terminate), then the soak's own checks; and those checks
against step logs that break them."""
import json

import pytest

from soak import KINDS, Soak, checkpoint_problems, generations, traces


def line(t, step, rank=0, world=3, resumed=0, ckpt=0, host="A", restart=0):
    return {"t": t, "step": step, "rank": rank, "world": world, "resumed_from": resumed,
            "ckpt": ckpt if rank == 0 else None, "host": host, "restart": restart}


def test_the_checkpoint_check_catches_a_resume_from_before_the_checkpoint_and_invented_steps():
    run = [line(i, i, ckpt=10 * (i // 10)) for i in range(1, 26)]          # checkpoints 10, 20
    good = run + [line(30 + i, 20 + i, world=2, resumed=20) for i in range(1, 4)]
    gens = generations(good)
    assert [(g["resumed_from"], g["lost"], g["past_checkpoint"]) for g in gens] == [(0, 0, 0), (20, 5, 0)]
    assert checkpoint_problems(gens) == []
    back = run + [line(30 + i, 10 + i, world=2, resumed=10) for i in range(1, 4)]   # the old one
    assert [p.split(",")[0] for p in checkpoint_problems(generations(back))] == [
        "generation at 31.0 resumed from step 10"]
    ahead = run + [line(30 + i, 30 + i, world=2, resumed=30) for i in range(1, 4)]  # never reached
    assert "steps invented" in checkpoint_problems(generations(ahead))[0]


def test_traces_are_the_events_table_in_wall_clock_order(tmp_path):
    (tmp_path / "trace-A.jsonl").write_text(
        json.dumps({"t": 5.0, "wall": 105.0, "node": "A", "event": "rank_assigned", "round": 0,
                    "rank": 0, "world_size": 2, "detail": {"nnodes": 2}}) + "\n{cut by a kill")
    (tmp_path / "trace-B.jsonl").write_text(
        json.dumps({"t": 1.0, "wall": 101.0, "node": "B", "event": "join", "round": 0,
                    "rank": None, "world_size": None, "detail": None}) + "\n")
    ev = traces(tmp_path)
    assert ev["node"].tolist() == ["B", "A"] and ev["t"].tolist() == [0.0, 4.0]
    assert json.loads(ev["detail"].iloc[1]) == {"nnodes": 2} and ev["detail"].iloc[0] == ""


@pytest.mark.real
def test_short_soak_one_fault_of_each_kind(tmp_path):
    pytest.importorskip("torch")
    r = Soak(tmp_path, minutes=5, seed=3, gap=(1.0, 3.0), duration=(1.0, 5.0), max_faults=4).run()
    assert r["faults"] == {k: 1 for k in KINDS}, r["fault_log"]
    assert r["problems"] == [], "\n".join(r["problems"])
    assert r["lost_past_checkpoint"] == 0 and r["hung"] == 0
    assert r["exit_codes"] == {"A": 0, "B": 0, "C": 0}
    assert r["rounds"] >= 3                 # a kill and a terminate each cost a new round at least
    assert all(f["recover_s"] is not None for f in r["fault_log"])
