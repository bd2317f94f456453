"""Published failure rates as they are published: a rate a GPU a day (`per_gpu_day`), and the
bundled fragments a scenario includes by name (`include: [bundled:rates/llama3.yaml]`)."""
import pytest

from rdzv_sim.scenario import load
from rdzv_sim.scenario.load import ScenarioError, fragments

BASE = {"name": "r", "duration": 86400, "cluster": {"nodes": 8, "nproc_per_node": 8},
        "store": {"host": None}, "protocol": {"name": "hrw", "min_nodes": 4, "max_nodes": 8}}


def one(**rf):
    return load(BASE | {"random_faults": [{"kind": "interruptions", "cause": "x", **rf}]})


def test_a_rate_a_gpu_a_day_is_the_runs_gpus_times_it():
    sc = one(per_gpu_day=1e-3)
    assert sc.random_faults[0].rate(sc) == pytest.approx(1e-3 * 64 / 86400)
    assert sc.random_faults[0].mean_gap(sc) == pytest.approx(86400 / (1e-3 * 64))
    same = one(count=1e-3 * 64, per=86400)                    # the count form of the same rate
    assert same.random_faults[0].rate(same) == pytest.approx(sc.random_faults[0].rate(sc))


@pytest.mark.parametrize("rf, words", [
    ({"count": 3, "per_gpu_day": 1e-3}, "either count"),
    ({}, "either count"),
    ({"per_gpu_day": 1e-3, "per": 100}, "per_gpu_day needs none"),
])
def test_one_rate_form_only(rf, words):
    with pytest.raises(ScenarioError, match=words):
        one(**rf)


def test_the_llama3_fragment_gives_llama3s_count_at_llama3s_size():
    sc = load(BASE | {"include": ["bundled:rates/llama3.yaml"], "duration": 54 * 86400,
                      "cluster": {"nodes": 2048, "nproc_per_node": 8, "topology": {"kind": "racks", "racks": 64}},
                      "protocol": {"name": "hrw", "min_nodes": 1920, "max_nodes": 2048}})
    expected = sum(rf.rate(sc) for rf in sc.random_faults) * sc.duration
    assert expected == pytest.approx(466, rel=2e-3)            # the paper's 466 (rates rounded to 4 digits)
    assert "rates/llama3.yaml" in fragments()


def test_an_unknown_fragment_is_refused_with_the_ones_there_are():
    with pytest.raises(ScenarioError, match="no such bundled fragment; there are: rates/llama3.yaml"):
        load(BASE | {"include": ["bundled:rates/rsc.yaml"]})
