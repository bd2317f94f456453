"""The README's property-test snippet, pasted into an empty folder with the package installed,
passes under plain `pytest`: no conftest of ours, no profile, Hypothesis's own defaults."""
import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    found = [b for b in blocks if "@given" in b]
    assert len(found) == 1, "the README has one property-test snippet"
    # the lines before it (rdzv_sim.run ...) are the tour's; the test is from `from hypothesis` on
    return found[0][found[0].index("from hypothesis"):]


def test_the_readme_snippet_passes_under_plain_pytest(tmp_path):
    (tmp_path / "test_mine.py").write_text(snippet())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPOTHESIS", "PYTEST", "RDZV"))}
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "test_mine.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 passed" in r.stdout
