"""Real torchrun agents, real training: three join, one is killed, two carry on from the
checkpoint, a new agent joins and the job grows back to three. Once with `hrw` (this project's
handler through the `torchrun.handlers` entry point), once with torch's own `c10d` as the
baseline, with the same --rdzv-conf (c10d needs TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 to grow
back; the demo sets it)."""
import itertools
import time

import pytest

pytest.importorskip("torch")

from elastic_demo import run_demo  # noqa: E402

pytestmark = pytest.mark.real


@pytest.mark.parametrize("backend", ["hrw", "c10d"])
def test_kill_one_continue_at_two_grow_back_to_three(backend, tmp_path):
    r = run_demo(backend, tmp_path, timeout=90)
    assert r["exit_codes"] == {"A": 0, "B": 0, "D": 0}, r["exit_codes"]
    segs = r["segments"]
    worlds = [w for w, _ in itertools.groupby(s["world"] for s in segs)]
    assert worlds == [3, 2, 3], segs
    for s in segs[1:]:            # every restart resumes from a checkpoint, none from scratch
        assert s["resumed_from"] > 0 and s["resumed_from"] % 10 == 0, segs
        assert s["first"] == s["resumed_from"] + 1, segs
    before = [s for s in segs if s["t0"] < r["t_kill"]]
    after = [s for s in segs if s["t0"] > r["t_kill"]]
    assert after[0]["resumed_from"] <= before[-1]["last"]     # no step invented across the kill
    # every rank trained at the same world size at every step and stopped at one step
    steps = r["steps"]
    by_step = {}
    for x in steps:
        by_step.setdefault((x["t"] > r["t_kill"], x["resumed_from"], x["step"]), set()).add(x["world"])
    assert all(len(w) == 1 for w in by_step.values())
    grown = [x for x in steps if x["t"] > r["t_join"] and x["world"] == 3]
    last = max(x["step"] for x in grown)                       # the final generation stopped together
    assert sorted(x["rank"] for x in grown if x["step"] == last) == [0, 1, 2]
    assert r["recover_s"] > 0 and r["grow_s"] > 0


def test_three_agents_on_one_host_without_local_addr_reach_world_three(tmp_path):
    """As people test elastic jobs locally: three agents, one endpoint, no --local-addr. Each
    takes the host's name; the live duplicates become host#2 and host#3 instead of replacing
    each other's slot (#22: they restarted their workers every few seconds, forever)."""
    import json
    import subprocess

    from elastic_demo import Demo, _steps
    d = Demo("hrw", tmp_path, timeout=90)
    t0 = time.monotonic()
    d.nnodes, d.max_restarts, d.steps = "3", 0, 20          # a slot replaced is a failure
    d.cpp_log_level = "WARNING"                              # torch's default: count its warnings
    try:
        d.start_store()
        for name in "ABC":
            d.start_agent(name, None)
        rcs = {}
        for name, p in d.agents.items():
            try:
                rcs[name] = p.wait(timeout=90)
            except subprocess.TimeoutExpired:
                rcs[name] = None
        assert rcs == {"A": 0, "B": 0, "C": 0}, d.tails()
    finally:
        d.close()
    took = time.monotonic() - t0
    steps = _steps(d.log)
    assert {x["world"] for x in steps} == {3} and {x["rank"] for x in steps} == {0, 1, 2}
    names = set()
    for f in tmp_path.glob("trace-*.jsonl"):
        names |= {json.loads(x)["node"] for x in f.read_text().splitlines() if x.strip()}
    host = min(names, key=len)
    assert names == {host, f"{host}#2", f"{host}#3"}, names
    # quiet: the plugin's own waits wait until their timer or 5 s, so TCPStore's "timed out"
    # warnings (two lines each) come at most once per 5 s per watch (the round's watcher has
    # two); with 1 s slices a one-node run printed 14 of them in 10 s
    for name in "ABC":
        log = (tmp_path / f"agent-{name}.log").read_text(errors="replace")
        assert log.count("waitForInput") <= 2 * 2 * (took / 5 + 2), (took, log[-2000:])


def test_two_workers_per_agent_and_a_worker_failure_restarts_the_group(tmp_path):
    """--nproc-per-node=2 on two agents: global ranks tile 0..3 with each host's two ranks
    side by side, LOCAL_RANK and LOCAL_WORLD_SIZE right; one worker SIGKILLed: its agent
    restarts the group, the job re-forms at world 4 and resumes from the checkpoint."""
    import os
    import signal

    from elastic_demo import ADDRS, Demo, _steps, _tree
    d = Demo("hrw", tmp_path, timeout=90)
    d.nnodes, d.nproc = "2", 2
    try:
        d.start_store()
        for name, addr in zip("AB", ADDRS):
            d.start_agent(name, addr)
        d.until("10 steps at world 4", lambda s: sum(x["world"] == 4 and x["rank"] == 0 for x in s) >= 10)
        worker = [p for p in _tree(d.agents["B"].pid) if p != d.agents["B"].pid][-1]
        os.kill(worker, signal.SIGKILL)
        d.until("5 steps after B's restart", lambda s: sum(
            x["host"] == "B" and x["restart"] >= 1 and x["local_rank"] == 0 for x in s) >= 5)
        d.stop.touch()
        rcs = {n: p.wait(timeout=60) for n, p in d.agents.items()}
        assert rcs == {"A": 0, "B": 0}, d.tails()
    finally:
        d.close()
    steps = _steps(d.log)
    assert {x["world"] for x in steps} == {4} and {x["rank"] for x in steps} == {0, 1, 2, 3}
    by_host = {}
    for x in steps:
        assert x["local_world"] == 2 and x["local_rank"] in (0, 1)
        by_host.setdefault((x["host"], x["restart"], x["resumed_from"]), set()).add((x["rank"], x["local_rank"]))
    for ranks in by_host.values():          # a host's two ranks sit side by side, local 0 first
        (r0, l0), (r1, l1) = sorted(ranks)
        assert (l0, l1) == (0, 1) and r1 == r0 + 1 and r0 % 2 == 0, by_host
    restarted = [x for x in steps if x["host"] == "B" and x["restart"] >= 1]
    assert restarted and min(x["resumed_from"] for x in restarted) > 0      # from the checkpoint


def etcd_demo(backend, tmp_path):
    from real_backend.etcd.cluster import available
    if available():
        pytest.skip(available())
    from elastic_demo import EtcdDemo
    d = EtcdDemo(backend, tmp_path, timeout=90)
    d.start_job()
    t = time.time()
    d.kill("A")                        # A's host dies, and the etcd leader it hosted
    d.kill_store()
    return d, t


def test_hrw_on_etcd_survives_the_store_hosts_death_and_grows_back(tmp_path):
    """The store on a local 3-member etcd cluster (--rdzv-conf store=etcd): agent A and the
    leader are killed together; B and C train on at world 2 from a checkpoint, a new agent on
    A's address grows the job back to 3, and all exit 0."""
    from elastic_demo import ADDRS, _steps
    d, t = etcd_demo("hrw", tmp_path)
    try:
        d.until("world 2", lambda s: sum(x["world"] == 2 and x["rank"] == 0 and x["t"] > t for x in s) >= 5)
        t_join = d.start_agent("D", ADDRS[0])
        d.until("world 3 again", lambda s: sum(x["world"] == 3 and x["rank"] == 0 and x["t"] > t_join
                                               for x in s) >= 5)
        assert d.finish("BCD", timeout=90) == {"B": 0, "C": 0, "D": 0}, d.tails()
        after = [x for x in _steps(d.log) if x["world"] == 2 and x["rank"] == 0]   # new generations
        assert after and min(x["resumed_from"] for x in after) > 0   # from a checkpoint, not scratch
    finally:
        d.close()


def test_torch_etcd_v2_re_forms_or_dies_of_the_election(tmp_path):
    """torch's own etcd-v2 backend, the same story: it re-forms at world 2, unless a survivor's
    rendezvous call meets etcd's "request timed out, possibly due to previous leader failure"
    during the election, which it takes for a lost connection: that agent exits, and the job
    with it (most runs here; reports/store_failure.md), and the other survivor exits of the
    rendezvous that agent's shutdown closed. Either way, nothing else."""
    pytest.importorskip("etcd", reason="torch's etcd-v2 backend needs python-etcd")
    from elastic_demo import _steps
    d, t = etcd_demo("etcd-v2", tmp_path)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            if sum(x["world"] == 2 and x["rank"] == 0 and x["t"] > t for x in _steps(d.log)) >= 5:
                assert d.finish("BC", timeout=90) == {"B": 0, "C": 0}, d.tails()
                return
            dead = [n for n in "BC" if d.agents[n].poll() is not None]
            if dead:
                # the first to die met the election; its launcher's shutdown() then closes the
                # rendezvous (torch's contract), so another survivor may already be dead of that
                logs = [(d.dir / f"agent-{n}.log").read_text(errors="replace") for n in dead]
                election = ["RendezvousConnectionError" in x and "request timed out" in x for x in logs]
                assert any(election), d.tails()
                assert all(e or "RendezvousClosedError" in x for e, x in zip(election, logs)), d.tails()
                return
            time.sleep(0.2)
        pytest.fail(f"neither re-formed nor exited in 90 s\n{d.tails()}")
    finally:
        d.close()


@pytest.mark.parametrize("backend, extra, closes", [("hrw", "", True), ("c10d", "", True),
                                                    ("hrw", ",close_on_shutdown=false", False)],
                         ids=["hrw", "c10d", "hrw-close_on_shutdown=false"])
def test_an_agent_leaving_by_an_error_closes_the_rendezvous_unless_told_not_to(backend, extra, closes, tmp_path):
    """Agent C, with --max-restarts=0, loses its worker and leaves by an error: torch's
    launcher then calls the handler's shutdown(), which closes the rendezvous (torch's contract,
    c10d's and hrw's), so A and B exit with RendezvousClosedError at their next rendezvous; with
    hrw's close_on_shutdown=false they re-form at world 2 instead (reports/sigterm.md; the
    simulated `sigterm-one-agent` with an agent_failure)."""
    from elastic_demo import CONF, Demo, _steps
    d = Demo(backend, tmp_path, timeout=90, conf=CONF + extra)
    d.restarts_of["C"] = 0
    try:
        d.start_job(steps=5)
        t = time.time()
        d.kill_workers("C")
        assert d.agents.pop("C").wait(timeout=60) != 0            # gone on purpose
        if closes:
            assert d.agents["A"].wait(timeout=60) != 0 and d.agents["B"].wait(timeout=60) != 0
            logs = [(d.dir / f"agent-{n}.log").read_text(errors="replace") for n in "AB"]
            assert all("RendezvousClosedError" in x for x in logs), d.tails()
        else:
            d.until("world 2", lambda s: sum(x["world"] == 2 and x["rank"] == 0 and x["t"] > t
                                             for x in s) >= 5)
            assert d.finish("AB") == {"A": 0, "B": 0}, d.tails()
            assert not any(x["world"] == 3 and x["t"] > t + 30 for x in _steps(d.log))
    finally:
        d.close()


def test_hrw_store_failover_survives_the_store_hosts_sigkill(tmp_path):
    """The store in agent A's process (is_host) with store_failover=true: A is SIGKILLed,
    store and all; B and C elect one successor by HRW, train on at world 2 from a
    checkpoint, and exit 0."""
    from elastic_demo import FailoverDemo, _steps
    from rdzv_sim.testing.invariants import one_store_per_epoch
    d = FailoverDemo("hrw", tmp_path, timeout=90)
    try:
        d.start_job()
        t = time.time()
        d.kill_store()
        d.until("world 2", lambda s: sum(x["world"] == 2 and x["rank"] == 0 and x["t"] > t for x in s) >= 5)
        assert d.finish("BC", timeout=90) == {"B": 0, "C": 0}, d.tails()
        after = [x for x in _steps(d.log) if x["world"] == 2 and x["rank"] == 0]   # new generations
        assert after and min(x["resumed_from"] for x in after) > 0   # from a checkpoint, not scratch
        import pandas as pd
        import json as _json
        rows = [_json.loads(line) for n in "BC" for line in (tmp_path / f"trace-{n}.jsonl").read_text().splitlines()]
        ev = pd.DataFrame(rows).assign(detail=lambda f: f["detail"].map(_json.dumps))
        moved = ev[ev.event == "store_failover"]
        assert len(moved) == 2 and moved.node.nunique() == 2, moved     # each moved once
        assert one_store_per_epoch(ev) == []
    finally:
        d.close()


def test_a_users_protocol_trains_under_torchrun_killed_and_resumed(tmp_path):
    """tests/userproto's `sorted` (hrw with ranks by name, here reversed), never installed:
    RDZV_SIM_PROTOCOLS imports it in every agent, `--rdzv-backend=rdzv-sim --rdzv-conf
    protocol=sorted,order=reverse` runs it. Three train, C is killed, A and B go on from the
    checkpoint, D joins and the job grows back to three (docs/torchrun.md)."""
    import os
    from pathlib import Path
    from elastic_demo import CONF, Demo
    tests = str(Path(__file__).resolve().parent.parent)
    d = Demo("rdzv-sim", tmp_path, timeout=90, conf=CONF + ",protocol=sorted,order=reverse")
    d.env = {"RDZV_SIM_PROTOCOLS": "userproto.sorted_hrw",
             "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    r = d.run()
    assert r["exit_codes"] == {"A": 0, "B": 0, "D": 0}, r["exit_codes"]
    segs = r["segments"]
    assert [w for w, _ in itertools.groupby(s["world"] for s in segs)] == [3, 2, 3], segs
    assert all(s["resumed_from"] > 0 for s in segs[1:]), segs
    # the user's rank order: by node name (its address), reversed
    steps = r["steps"]
    first = {x["host"]: x["rank"] for x in steps if x["world"] == 3 and x["t"] < r["t_kill"]}
    assert first == {"C": 0, "B": 1, "A": 2}, first
    two = {x["host"]: x["rank"] for x in steps if x["world"] == 2 and x["t"] > r["t_kill"]}
    assert two == {"B": 0, "A": 1}, two
