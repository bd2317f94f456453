"""The one writer every benchmark uses: results beside where, when and with what they ran."""
from __future__ import annotations

import json

import bench_io


def test_a_report_carries_its_machine_date_and_versions(tmp_path):
    path = bench_io.write("demo", bench_io.environment(rows=[1, 2]), "# demo", folder=tmp_path)
    got = json.loads(path.read_text())
    assert {"machine", "date", "python", "numpy", "pandas", "simpy"} <= set(got)
    assert got["rows"] == [1, 2] and got["date"].endswith("UTC")
    assert (tmp_path / "demo.md").read_text() == "# demo\n"
    assert bench_io.read("demo", tmp_path) == got


def test_a_write_replaces_the_files_whole(tmp_path):
    bench_io.write("demo", {"n": 1}, "old", folder=tmp_path)
    bench_io.write("demo", {"n": 2}, folder=tmp_path)          # JSON only: the report stays
    assert bench_io.read("demo", tmp_path) == {"n": 2}
    assert (tmp_path / "demo.md").read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.json", "demo.md"]   # no temp left
