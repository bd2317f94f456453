"""The layers of DESIGN.md ("layers and kits"), read from the source: every import statement,
those inside functions too, must point down (or stay in its own layer). torch only in
real_backend and hrw's GPU path; the library loads without torch in a fresh interpreter."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# hrw's optional GPU path is the one place outside real_backend that may import torch
TORCH_OK = {"hrw/torch_path.py", "hrw/gpu_check.py"}

# bottom to top; a module belongs to the longest prefix that names it (docs/layout.md)
LAYERS = [
    ("hrw",),
    ("rdzv_sim.errors", "rdzv_sim.ops", "rdzv_sim.events", "rdzv_sim.reasons"),
    ("rdzv_sim.protocols", "rdzv_sim.cluster"),
    ("rdzv_sim.scenario", "rdzv_sim.incidents"),
    ("rdzv_sim.trace",),
    ("rdzv_sim.sim", "rdzv_sim.aggregate", "rdzv_sim.models"),
    ("rdzv_sim.training", "rdzv_sim.placement"),
    ("rdzv_sim.result", "rdzv_sim.api", "rdzv_sim.estimate", "rdzv_sim.outputs"),
    ("rdzv_sim.report", "rdzv_sim.sweep", "rdzv_sim.advise", "rdzv_sim.comparison", "rdzv_sim.intervals",
     "rdzv_sim.replications",
     "rdzv_sim.progress",
     "rdzv_sim.cli", "rdzv_sim.__main__",
     "rdzv_sim"),
    ("rdzv_sim.testing",),
    ("real_backend",),
]


def layer_of(module: str) -> int | None:
    best = None
    for i, names in enumerate(LAYERS):
        for n in names:
            if (module == n or module.startswith(n + ".")) and (best is None or len(n) > best[1]):
                best = (i, len(n))
    return None if best is None else best[0]


def module_of(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path = ROOT) -> list[tuple[str, int]]:
    """(module, line) for every import in `path`, relative ones resolved, `from a import b`
    as `a.b` (b may be a module)."""
    me = module_of(path, root)
    here = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).strip(".") \
                if node.level else node.module
            out += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return out


def upward(paths, root: Path = ROOT) -> list[str]:
    bad = []
    for path in paths:
        me = module_of(path, root)
        mine = layer_of(me)
        for target, line in imported(path, root):
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                bad.append(f"{path.relative_to(root)}:{line}: {me} imports {target}, a layer above it")
    return bad


def sources(*pkgs):
    return sorted(p for pkg in pkgs for p in (ROOT / pkg).rglob("*.py"))


def test_every_import_points_down_the_layers():
    bad = upward(sources("hrw", "rdzv_sim", "real_backend"))
    assert not bad, "imports against DESIGN.md's layers:\n" + "\n".join(bad)


def test_torch_only_in_real_backend_and_hrws_gpu_path():
    bad = [f"{p.relative_to(ROOT)}:{line}" for p in sources("hrw", "rdzv_sim")
           for target, line in imported(p)
           if target.split(".")[0] == "torch" and p.relative_to(ROOT).as_posix() not in TORCH_OK]
    assert not bad


@pytest.mark.parametrize("where, source, target", [
    ("rdzv_sim/protocols/_layer_probe.py", "def f():\n    from ..testing import strategies\n",
     "rdzv_sim.testing.strategies"),
    ("rdzv_sim/sim/_layer_probe.py", "def f():\n    from ..training.spans import round_spans\n",
     "rdzv_sim.training.spans.round_spans"),
    ("rdzv_sim/scenario/_layer_probe.py", "def f():\n    import rdzv_sim.aggregate.job\n",
     "rdzv_sim.aggregate.job"),
    ("hrw/_layer_probe.py", "def f():\n    from real_backend import launcher\n", "real_backend.launcher"),
])
def test_the_checker_sees_a_planted_upward_import_inside_a_function(where, source, target, tmp_path):
    """The scan is not vacuous: a lazy upward import, relative or absolute, is reported (the
    probe is planted in a copy of the layout, never in the source tree)."""
    f = tmp_path / where
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(source)
    bad = upward([f], tmp_path)
    assert len(bad) == 1 and target in bad[0], bad


def test_a_downward_import_is_not_reported(tmp_path):
    f = tmp_path / "rdzv_sim" / "testing" / "_layer_probe.py"
    f.parent.mkdir(parents=True)
    f.write_text("def f():\n    from ..protocols import registry\n    from ..api import run\n")
    assert upward([f], tmp_path) == []


def test_the_library_and_its_cli_load_without_torch_or_real_backend():
    code = ("import sys, rdzv_sim, rdzv_sim.cli, rdzv_sim.api, rdzv_sim.testing, rdzv_sim.sim.simulation, "
            "rdzv_sim.aggregate.job, rdzv_sim.report, rdzv_sim.protocols.registry as r; r.specs(); "
            "bad = {'torch', 'real_backend', 'hypothesis'} & {m.split('.')[0] for m in sys.modules}; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_the_scenario_reference_in_docs_is_current():
    from rdzv_sim.scenario.reference import markdown
    assert (ROOT / "docs" / "scenarios.md").read_text() == markdown(builtin_only=True), \
        "regenerate it: python -m rdzv_sim.scenario.reference > docs/scenarios.md"


def test_layout_names_every_module_and_the_index_every_page():
    """docs/layout.md names every module of rdzv_sim/ (its file name, or its package's folder
    for an __init__), and docs/README.md every page of docs/."""
    layout = (ROOT / "docs" / "layout.md").read_text()
    missing = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "rdzv_sim").rglob("*.py"))
               if p.name != "__init__.py" and f"`{p.name}`" not in layout and f"{p.name}" not in layout]
    assert not missing, f"docs/layout.md does not name: {missing}"
    index = (ROOT / "docs" / "README.md").read_text()
    pages = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "README.md" and p.name not in index]
    assert not pages, f"docs/README.md does not index: {pages}"


def test_every_scenario_field_says_what_it_means():
    """docs/scenarios.md has no empty meaning cell: every field's comment (beside it or right
    above it), or the shared fault fields' meaning (scenario/reference.py's SHARED)."""
    from rdzv_sim.scenario.reference import markdown
    empty = [line for line in markdown().splitlines()
             if line.startswith("| `") and line.rstrip().endswith("|  |")]
    assert not empty, empty


def test_readme_is_a_door_and_every_link_resolves():
    import re
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 100
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            assert "://" not in target, f"{page.name} links outside the repository: {target}"
            assert (page.parent / target).resolve().exists(), f"{page.name}: {target} does not exist"


# where "hrw" names the placement policy or rank order, not the protocol
POLICY_FILES = {"rdzv_sim/placement.py"}


def test_no_table_outside_the_registry_names_a_protocol():
    """No dict key and no comparison names a protocol outside the protocols' own modules (in
    protocols/, or a module named after it in another layer: training/quorum.py): whatever
    differs by protocol is a part of its kit (docs/protocols.md)."""
    from rdzv_sim.protocols.registry import specs
    names = set(specs())
    bad = []
    for path in sources("rdzv_sim", "real_backend"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("rdzv_sim/protocols/", "real_backend/tools/")) or rel in POLICY_FILES \
                or path.stem.split("_")[0] in names:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            consts = []
            if isinstance(node, ast.Dict):
                consts = [k for k in node.keys if k is not None]
            elif isinstance(node, ast.Compare):
                consts = [node.left, *node.comparators]
                consts += [e for c in node.comparators if isinstance(c, (ast.Tuple, ast.List, ast.Set))
                           for e in c.elts]
            hits = [c.value for c in consts if isinstance(c, ast.Constant) and c.value in names]
            if hits:
                bad.append(f"{rel}:{node.lineno}: {hits}")
    assert not bad, "tables keyed by protocol name:\n" + "\n".join(bad)


def import_graph(root: Path = ROOT):
    """module -> the project modules it imports (inside functions too), as a networkx graph."""
    import networkx as nx
    mods = {module_of(p, root): p for p in sorted(p for pkg in ("hrw", "rdzv_sim", "real_backend")
                                                   for p in (root / pkg).rglob("*.py"))}

    def resolve(target):
        while target and target not in mods:
            target = target.rpartition(".")[0]
        return target or None
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for m, p in mods.items():
        for target, _ in imported(p, root):
            t = resolve(target)
            if t is not None and t != m:
                g.add_edge(m, t)
    return g


def test_no_import_circle_even_inside_one_layer():
    import networkx as nx
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, f"import circles: {cycles[:3]}"


def test_the_circle_check_sees_a_planted_circle(tmp_path):
    """The near miss: two modules of one layer importing each other, one inside a function."""
    import networkx as nx
    for pkg in ("hrw", "real_backend"):
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "rdzv_sim").mkdir()
    (tmp_path / "rdzv_sim" / "__init__.py").write_text("")
    (tmp_path / "rdzv_sim" / "a.py").write_text("from . import b\n")
    (tmp_path / "rdzv_sim" / "b.py").write_text("def f():\n    from .a import x\n")
    assert list(nx.simple_cycles(import_graph(tmp_path))) != []
    (tmp_path / "rdzv_sim" / "b.py").write_text("def f():\n    return 1\n")
    assert list(nx.simple_cycles(import_graph(tmp_path))) == []
