"""torchft for real (an optional extra): its Lighthouse and one Manager per replica group,
gloo on CPU. One group is SIGKILLed mid-training and restarted; skips, saying why, where
torchft is not installed."""
import pytest

from real_backend.torchft_run import GroupFault, TorchftRun, available, run_torchft

pytestmark = [pytest.mark.real, pytest.mark.skipif(available() is not None, reason=str(available()))]


def test_survivors_train_on_and_the_killed_group_heals_back(tmp_path):
    from real_backend.quorum_validate import measure_real
    # group 1 is killed 1 s after every group has committed 10 steps, back 3 s later; the run
    # ends once every group has committed 10 more (the duration is only the limit)
    cfg = TorchftRun(groups=3, duration=240.0, step_time=0.2, state_mb=8.0, join_timeout=1.0,
                     heartbeat_timeout=1.0, settle_steps=10, workdir=tmp_path,
                     faults=[GroupFault(1, kill_at=1.0, restart_at=4.0, after_steps=10)])
    steps, events = run_torchft(cfg)
    m = measure_real(steps, cfg)
    # the survivors never restart: their step counter never goes back, and they train on
    # without the dead group, then with it again once it healed
    assert not m["survivor_step_went_back"]
    assert m["windows"] == ["0,1,2", "0,2", "0,1,2"]
    for g in (0, 2):
        mine = [r for r in steps if r["group"] == g]
        assert len({r["pid"] for r in mine}) == 1
        assert any(r["committed"] and r["replicas"] == ["g0", "g2"] for r in mine)
    # the restarted group healed from a live peer before it committed a step with them
    back = [r for r in steps if r["group"] == 1 and r["t0"] > cfg.faults[0].restarted]
    assert back and back[0]["heal"] and back[0]["step"] > 10
    assert all(r["replicas"] == ["g0", "g1", "g2"] for r in back if r["committed"])
