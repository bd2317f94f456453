"""A kit's part is checked by what its module binds at top level, read from its syntax tree:
a part defined, assigned (a tuple too) or imported (on several lines too) is accepted; a
misspelt one is refused by name, with the nearest name it does define."""
import sys

import pytest

from rdzv_sim.protocols.kit import missing, top_level_names

SOURCE = '''
from rdzv_sim.aggregate.hrw_round import (
    HrwRounds,
    HrwRounds as Renamed,
)
import os.path
A, (B, *C) = 1, (2, 3)
D: int = 4
E += 1
def part(): ...
class Part: ...
if True:
    IN_IF = 1
try:
    IN_TRY = 1
except ImportError:
    IN_EXCEPT = 1
def f():
    INSIDE = 1
'''


def test_every_way_a_module_binds_a_name_at_top_level():
    names = top_level_names(SOURCE)
    assert {"HrwRounds", "Renamed", "os", "A", "B", "C", "D", "E", "part", "Part", "IN_IF", "IN_TRY",
            "IN_EXCEPT", "f"} <= names
    assert "INSIDE" not in names                            # near miss: a function's own name


@pytest.fixture
def module(tmp_path, monkeypatch):
    (tmp_path / "kit_parts_probe.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "kit_parts_probe"
    sys.modules.pop("kit_parts_probe", None)


def test_a_part_imported_on_several_lines_or_by_a_tuple_is_accepted(module):
    assert missing(f"{module}:HrwRounds") is None           # a multi-line import
    assert missing(f"{module}:Renamed") is None
    assert missing(f"{module}:B") is None                   # tuple assignment
    assert module not in sys.modules                        # read, not imported


def test_a_misspelt_part_is_refused_by_name(module):
    why = missing(f"{module}:HrwRound")
    assert why == f"module {module!r} defines no 'HrwRound' at top level (did you mean 'HrwRounds'?)"
    assert missing(f"{module}:INSIDE").startswith(f"module {module!r} defines no 'INSIDE'")
    assert missing("no_such_module_here:X") == "there is no module 'no_such_module_here'"


# --- the boundaries mutation testing found unstated (reports/mutation.md) ------------------
@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package on the path, never imported: a module and a subpackage of it, each with X."""
    root = tmp_path / "kitprobe_pkg"
    (root / "subpkg").mkdir(parents=True)
    (root / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (root / "mod.py").write_text("X = 1\n")
    (root / "subpkg" / "__init__.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "kitprobe_pkg"
    for m in [m for m in sys.modules if m.startswith("kitprobe_pkg")]:
        del sys.modules[m]


def test_a_part_in_a_package_is_found_by_its_file_without_importing_the_package(package):
    assert missing(f"{package}.mod:X") is None
    assert missing(f"{package}.subpkg:X") is None                 # a subpackage: its __init__.py
    assert missing(f"{package}.mod:Y").startswith(f"module '{package}.mod' defines no 'Y'")
    assert package not in sys.modules                              # read, not imported


def test_a_module_already_imported_is_asked_for_its_attribute(monkeypatch):
    import types
    mod = types.ModuleType("kit_dynamic_probe")
    mod.X = 1                                                      # set at run time: in no source
    monkeypatch.setitem(sys.modules, "kit_dynamic_probe", mod)
    assert missing("kit_dynamic_probe:X") is None
    assert missing("kit_dynamic_probe:Y") == "module 'kit_dynamic_probe' defines no 'Y'"


def test_a_misspelling_with_no_near_name_is_said_plainly(module):
    assert missing(f"{module}:Zqxw") == f"module {module!r} defines no 'Zqxw' at top level"


@pytest.mark.parametrize("path", ["a.b:c:d", ":x", "mod:", "mod"])
def test_a_parts_path_is_module_colon_attribute(path):
    from rdzv_sim.protocols.kit import where
    with pytest.raises(ValueError, match="is not a part's path: write it 'package.module:attribute'"):
        where(path)
