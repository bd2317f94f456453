"""Words are types all the way down: no event, reason or exit reason is written as a string
literal outside the modules that define them (`rdzv_sim/events.py`, `rdzv_sim/reasons.py`).
Readers compare with `Event.JOIN`, sets are built from members, records take members; the
tables keep plain strings (the members are `str`).

Some strings are the same word with another meaning; each is listed here with what it is."""
import ast
from pathlib import Path

from rdzv_sim.events import NAMES
from rdzv_sim.reasons import ExitReason, Reason

ROOT = Path(__file__).resolve().parent.parent
WORDS = set(NAMES) | {r.value for r in Reason} | {r.value for r in ExitReason}
DEFINED_IN = {"rdzv_sim/events.py", "rdzv_sim/reasons.py"}

# (file, word): what the word is there, not an event or a reason
ALLOWED = {
    ("rdzv_sim/protocols/hrw/keys.py", "waiting"): "a key of an hrw round in the store (its waiters' counter)",
    ("rdzv_sim/protocols/hrw/protocol.py", "waiting"): "the same store key",
    ("rdzv_sim/sim/pg_init.py", "waiting"): "an attribute (__slots__)",
    ("rdzv_sim/protocols/quorum/lighthouse.py", "join"): "the Lighthouse's own action tag (a group joins a quorum)",
    ("rdzv_sim/protocols/quorum/protocol.py", "store_failover"): "a settings field's name",
    ("rdzv_sim/testing/known.py", "store_failover"): "a settings field's name",
    ("rdzv_sim/scenario/faults.py", "rendezvous_start"): "an anchor's name in a scenario (at: {after: ...})",
    ("rdzv_sim/scenario/faults.py", "workers_started"): "an anchor's name in a scenario",
    ("rdzv_sim/scenario/faults.py", "pg_ready"): "an anchor's name in a scenario",
}


def _not_words(tree) -> set[int]:
    """Nodes whose strings are not words of the vocabulary: an Enum's own body (its values),
    f-string parts, dict keys (a column or a field's name) and subscripts (a column read)."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == "Enum" for b in n.bases):
            out |= {id(s) for s in ast.walk(n)}
        elif isinstance(n, ast.JoinedStr):
            out |= {id(s) for s in ast.walk(n)}
        elif isinstance(n, ast.Dict):
            out |= {id(k) for k in n.keys if k is not None}
        elif isinstance(n, ast.Subscript):
            out.add(id(n.slice))
    return out


def literal_words(root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(file, line, word) of every string literal that is an event, reason or exit reason."""
    found = []
    for p in sorted([*(root / "rdzv_sim").rglob("*.py"), *(root / "real_backend").rglob("*.py")]):
        rel = str(p.relative_to(root))
        if rel in DEFINED_IN:
            continue
        tree = ast.parse(p.read_text())
        skip = _not_words(tree)
        found += [(rel, n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in WORDS
                  and id(n) not in skip]
    return sorted(found)


def test_no_event_or_reason_is_a_string_literal():
    bad = [f"{f}:{line}: {w!r}" for f, line, w in literal_words() if (f, w) not in ALLOWED]
    assert not bad, "write the member (Event.X, Reason.X, ExitReason.X):\n" + "\n".join(bad)


def test_every_allowance_is_still_needed():
    used = {(f, w) for f, _, w in literal_words()}
    assert not set(ALLOWED) - used, sorted(set(ALLOWED) - used)


def test_the_scan_sees_a_planted_literal_and_not_its_member(tmp_path):
    """The near miss: `== "join"`, `isin(("round_left",))` and `Watch(op, "poll")` are found;
    the members, a dict key and an f-string are not."""
    (tmp_path / "rdzv_sim").mkdir()
    (tmp_path / "real_backend").mkdir()
    (tmp_path / "rdzv_sim" / "planted.py").write_text(
        'a = ev["event"] == "join"\n'
        'b = ev["event"].isin(("round_left",))\n'
        'c = Watch(op, "poll")\n'
        'd = ev["event"] == Event.JOIN\n'
        'e = {"store_lost": 1}\n'
        'f = f"join {x}"\n')
    assert [(line, w) for _, line, w in literal_words(tmp_path)] == [(1, "join"), (2, "round_left"), (3, "poll")]
