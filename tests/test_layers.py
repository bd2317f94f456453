"""The direction of imports (DESIGN.md): hrw <- rdzv_sim <- real_backend, and torch only in
real_backend and hrw's GPU path. Read from the source (every import statement, lazy ones too)
and checked in a fresh interpreter."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# hrw's optional GPU path is the one place outside real_backend that may import torch
TORCH_OK = {"hrw/torch_path.py", "hrw/gpu_check.py"}


def imports(path: Path) -> set[str]:
    """Top-level names of every module `path` imports (relative imports resolved)."""
    pkg = path.relative_to(ROOT).parts[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add(pkg if node.level else (node.module or "").split(".")[0])
    return out


def sources(pkg: str):
    return sorted((ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("pkg, forbidden", [("hrw", {"rdzv_sim", "real_backend"}),
                                            ("rdzv_sim", {"real_backend", "torch"})])
def test_no_import_points_the_wrong_way(pkg, forbidden):
    bad = {}
    for path in sources(pkg):
        rel = path.relative_to(ROOT).as_posix()
        found = imports(path) & (forbidden - ({"torch"} if rel in TORCH_OK else set()))
        if found:
            bad[rel] = sorted(found)
    assert not bad, f"imports against DESIGN.md's direction: {bad}"


def test_hrw_imports_torch_only_on_its_gpu_path():
    bad = [p.relative_to(ROOT).as_posix() for p in sources("hrw")
           if "torch" in imports(p) and p.relative_to(ROOT).as_posix() not in TORCH_OK]
    assert not bad


def test_the_checker_sees_a_wrong_import(tmp_path):
    """The scan is not vacuous: a lazy import inside a function is found."""
    f = ROOT / "rdzv_sim" / "_layer_probe.py"
    f.write_text("def f():\n    from real_backend import launcher\n    import torch.distributed\n")
    try:
        assert {"real_backend", "torch"} <= imports(f)
    finally:
        f.unlink()


def test_the_library_and_its_cli_load_without_torch_or_real_backend():
    code = ("import sys, rdzv_sim, rdzv_sim.cli, rdzv_sim.api, rdzv_sim.testing, rdzv_sim.sim.simulation, "
            "rdzv_sim.aggregate.job, rdzv_sim.report, rdzv_sim.protocols.registry as r; r.specs(); "
            "bad = {'torch', 'real_backend'} & {m.split('.')[0] for m in sys.modules}; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_the_scenario_reference_in_docs_is_current():
    from rdzv_sim.scenario.reference import markdown
    assert (ROOT / "docs" / "scenarios.md").read_text() == markdown(builtin_only=True), \
        "regenerate it: python -m rdzv_sim.scenario.reference > docs/scenarios.md"


def test_readme_is_a_door_and_every_link_resolves():
    import re
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 100
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            assert "://" not in target, f"{page.name} links outside the repository: {target}"
            assert (page.parent / target).resolve().exists(), f"{page.name}: {target} does not exist"
