"""--rdzv-conf's rules, read without a store: torch's liveness keys set hrw's probe."""
import pytest

pytest.importorskip("torch")
from torch.distributed.elastic.rendezvous import RendezvousParameters  # noqa: E402

from real_backend.torchrun_conf import parse  # noqa: E402


def settings(**conf):
    params = RendezvousParameters("hrw", "127.0.0.1:29400", "job", 2, 2, **conf)
    return parse(params, "hrw", "hrw")[1]


def test_torchs_default_liveness_gives_c10ds_bound():
    """No keys: torch's 5 s x 3; a dead member is found within 15 s, as c10d finds it."""
    s = settings()
    assert (s.probe_interval, s.probe_timeout) == (5.0, 10.0)
    assert s.probe_interval + s.probe_timeout == 5.0 * 3


@pytest.mark.parametrize("interval, attempts, probe", [
    ("2", "3", (2.0, 4.0)), ("2", "4", (2.0, 6.0)),      # one attempt more, one interval more
    ("1", "1", (1.0, 1.0)),                              # at least an interval to answer
])
def test_the_keep_alive_keys_set_the_probe(interval, attempts, probe):
    s = settings(keep_alive_interval=interval, keep_alive_max_attempt=attempts)
    assert (s.probe_interval, s.probe_timeout) == probe


def test_the_protocols_own_probe_keys_win():
    s = settings(keep_alive_interval="2", probe_interval="7", probe_timeout="9")
    assert (s.probe_interval, s.probe_timeout) == (7.0, 9.0)


@pytest.mark.parametrize("key, value", [("keep_alive_interval", "0"), ("keep_alive_max_attempt", "x")])
def test_a_bad_liveness_key_is_named(key, value):
    with pytest.raises(ValueError, match=f"--rdzv-conf {key}="):
        settings(**{key: value})


def test_a_protocol_that_does_not_probe_ignores_them():
    params = RendezvousParameters("rdzv-sim", "127.0.0.1:29400", "job", 2, 2, protocol="static",
                                  rank="0", keep_alive_interval="2")
    s = parse(params, "rdzv-sim")[1]
    assert not hasattr(s, "probe_interval")
