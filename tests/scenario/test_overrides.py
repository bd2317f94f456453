"""A value `--set` gave is refused naming the `--set`, not a line of the YAML file it never was on."""
import pytest

from rdzv_sim.scenario import load
from rdzv_sim.scenario.load import ScenarioError


@pytest.mark.parametrize("item, words", [
    ("agent.recovry=shrink", "--set agent.recovry=shrink: agent.recovry: Extra inputs are not permitted"),
    ("agent.recovery=shrnk", "--set agent.recovery=shrnk: agent.recovery: Input should be"),
    ("faults.0.at=-3", "--set faults.0.at=-3: faults[0].at:"),
])
def test_a_bad_override_names_its_set(item, words):
    with pytest.raises(ScenarioError) as e:
        load("quickstart", [item])
    assert e.value.messages[0].startswith(words), e.value.messages


def test_a_bad_value_of_the_file_still_names_its_line(tmp_path):
    """The near miss: an override beside it does not take the blame for the file's own error."""
    p = tmp_path / "s.yaml"
    p.write_text("name: s\nduration: 10\ncluster: {nodes: 2}\nagent: {recovery: shrnk}\n")
    with pytest.raises(ScenarioError) as e:
        load(str(p), ["agent.max_restarts=2"])
    assert e.value.messages[0].startswith(f"{p}:4: agent.recovery"), e.value.messages


def test_the_overrides_are_kept_and_the_description_is_marked_with_them():
    from rdzv_sim.report.document import described
    sc = load("byterobust-9600", ["agent.recovery=in_process"])
    assert sc.overridden == ["agent.recovery=in_process"]
    d = described(sc.model_dump(mode="json"))
    assert d.endswith("[Overridden since it was written: agent.recovery=in_process. Where the description "
                      "says otherwise, the overrides ran.]")
    again = load(sc, ["agent.recovery=shrink"])                     # a second override adds to the first
    assert again.overridden == ["agent.recovery=in_process", "agent.recovery=shrink"]
    plain = load("byterobust-9600")                                  # near miss: none, none said
    assert plain.overridden == [] and "Overridden" not in described(plain.model_dump(mode="json"))
