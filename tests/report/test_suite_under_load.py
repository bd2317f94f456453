"""benchmarks/suite_under_load.py reads pytest's own JUnit XML: counts and the failing ids."""
from suite_under_load import counts, markdown


def test_counts_from_pytests_junit_xml(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text(
        '<testsuites><testsuite name="pytest" tests="5" failures="1" errors="1" skipped="1">'
        '<testcase classname="tests.a" name="test_ok"/>'
        '<testcase classname="tests.a" name="test_bad"><failure message="x"/></testcase>'
        '<testcase classname="tests.b" name="test_err"><error message="y"/></testcase>'
        '<testcase classname="tests.b" name="test_skip"><skipped/></testcase>'
        '<testcase classname="tests.b" name="test_ok2"/>'
        '</testsuite></testsuites>')
    assert counts(xml) == {"passed": 2, "failed": 1, "errors": 1, "skipped": 1,
                           "failures": ["tests.a::test_bad", "tests.b::test_err"]}


def test_the_report_says_green_only_when_every_run_is():
    env = {"machine": "m", "date": "d", "python": "3.11", "commit": "abc"}
    ok = {"rc": 0, "wall_s": 600.0, "passed": 10, "failed": 0, "errors": 0, "skipped": 1, "failures": []}
    bad = {**ok, "rc": 1, "failed": 1, "failures": ["tests.a::test_bad"]}
    assert "**All green.**" in markdown(env, [ok, ok, ok], [])
    text = markdown(env, [ok, bad, ok], [])
    assert "**Not green.**" in text and "- run 2: `tests.a::test_bad`" in text
