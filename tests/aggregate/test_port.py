"""A round model sees one rendezvous through a narrow port (`Rendezvous`), not the job: every
name it reads off `job` / `self.job` is one of the port's, and a cell has them all."""
import ast
from pathlib import Path

import pytest

import rdzv_sim.aggregate as aggregate
from rdzv_sim.aggregate.round_model import Rendezvous

PORT = set(Rendezvous.__annotations__) | {n for n, v in vars(Rendezvous).items() if callable(v)
                                           and not n.startswith("_")}
MODELS = sorted(p for p in Path(aggregate.__file__).parent.glob("*.py")
                if p.name not in ("__init__.py", "job.py", "cell.py", "round_model.py"))


def read_off_the_job(source: str) -> set[str]:
    """The attributes read off `job` or `self.job` in `source`."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            v = node.value
            if (isinstance(v, ast.Name) and v.id == "job") or (
                    isinstance(v, ast.Attribute) and v.attr == "job"
                    and isinstance(v.value, ast.Name) and v.value.id == "self"):
                out.add(node.attr)
    return out - {"job"}


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_a_round_model_reads_only_the_port(path):
    extra = read_off_the_job(path.read_text()) - PORT
    assert not extra, f"{path.name} reads {sorted(extra)} off its job: not in the Rendezvous port"


def test_the_scan_sees_a_read_past_the_port():
    """The near miss: a model reaching for the job's runtime is seen."""
    src = "class M:\n    def f(self, job):\n        self.job.runtime.x = job.scheduler\n"
    assert read_off_the_job(src) - PORT == {"runtime", "scheduler"}


def test_a_cell_has_every_name_of_the_port():
    from rdzv_sim.aggregate import AggregateJob
    from rdzv_sim.scenario.load import load
    for name in ("quickstart", "validate-quorum"):
        job = AggregateJob(load(name, ["fidelity=aggregate"]))
        for cell in job.cells:
            missing = [n for n in PORT if not hasattr(cell, n)]
            assert not missing, f"{name}: a cell lacks {missing}"
