"""The resume of an in-guest suite after the emulator ended its guest (tests/guest/run-suite,
COS_SUITE_DONE), and what tests/vm/summarize.py makes of the reports such a guest leaves.

Runs on the host (make test runs it in the build tree, with pytest), with stand-ins for the
Catch2 binaries: shell scripts that write a JUnit report where `-r junit::out=PATH` says and
exit with a given status.  A binary counts as finished in the attempt before only if its exit
status was recorded there (junit-X.exit, written after it ended); a report alone, cut off or
whole, proves nothing, because Catch2 writes a report's head when the binary starts.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
RUN_SUITE = TESTS / "guest" / "run-suite"
sys.path.insert(0, str(TESTS / "vm"))
import summarize  # noqa: E402

# What an interrupted binary leaves: Catch2's JUnit reporter writes this when the binary starts.
CUT_OFF = '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites'


def report(name, failed):
    case = (f'<testcase name="a case of {name}"><failure message="x == 1">x is 2</failure></testcase>'
            if failed else f'<testcase name="a case of {name}"/>')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n'
            f'<testsuite name="{name}" tests="1" failures="{int(failed)}">{case}</testsuite>\n'
            '</testsuites>\n')


class Suite:
    """A build directory of stand-in binaries, a run directory, and the attempt before."""

    def __init__(self, tmp):
        self.build = tmp / "build"
        self.run_dir = tmp / "run"
        self.before = tmp / "before"
        self.ran = tmp / "ran"
        for d in (self.build / "tests", self.run_dir, self.before):
            d.mkdir(parents=True)

    def binary(self, name, failed=False, status=None):
        """A stand-in for a Catch2 binary: logs that it ran, writes its report, exits."""
        status = (1 if failed else 0) if status is None else status
        path = self.build / "tests" / name
        path.write_text(
            "#!/bin/bash\n"
            f'echo {name} >>"{self.ran}"\n'
            'for a; do case $a in junit::out=*) out=${a#junit::out=} ;; esac; done\n'
            f"cat >\"$out\" <<'XML'\n{report(name, failed)}XML\n"
            f"exit {status}\n")
        path.chmod(0o755)

    def before_left(self, name, text=None, status=None):
        """What the attempt before left of NAME: its report's text and its exit status."""
        if text is not None:
            (self.before / f"junit-{name}.xml").write_text(text)
        if status is not None:
            (self.before / f"junit-{name}.exit").write_text(f"{status}\n")

    def run(self, resume=True, **env):
        env = dict(os.environ, COS_BUILD=str(self.build), COS_RUN_DIR=str(self.run_dir), **env)
        env.pop("COS_SUITE_DONE", None)
        if resume:
            env["COS_SUITE_DONE"] = str(self.before)
        r = subprocess.run(["bash", str(RUN_SUITE)], env=env, capture_output=True, text=True)
        self.output = r.stdout + r.stderr
        return r.returncode

    def ran_binaries(self):
        return self.ran.read_text().split() if self.ran.exists() else []

    def left(self, name, suffix):
        return (self.run_dir / f"junit-{name}{suffix}").read_text()

    def summary(self):
        return summarize.count(str(self.run_dir))


@pytest.fixture
def suite(tmp_path):
    return Suite(tmp_path)


def test_a_cut_off_report_runs_again(suite):
    """The failure of issue 49: a binary the guest died in left its report's head only."""
    suite.binary("test_a")
    suite.before_left("test_a", CUT_OFF)
    assert suite.run() == 0, suite.output
    assert suite.ran_binaries() == ["test_a"]
    assert "runs again" in suite.output
    assert suite.left("test_a", ".exit") == "0\n"
    assert suite.summary()[:3] == (1, 0, 0)


def test_a_whole_passing_report_with_its_status_is_kept(suite):
    suite.binary("test_a", failed=True)	# would fail if it ran again
    suite.before_left("test_a", report("test_a", failed=False), status=0)
    assert suite.run() == 0, suite.output
    assert suite.ran_binaries() == []
    assert suite.left("test_a", ".xml") == report("test_a", failed=False)
    assert suite.left("test_a", ".exit") == "0\n"
    assert suite.summary()[:3] == (1, 0, 0)


def test_a_whole_failing_report_with_its_status_is_kept(suite):
    """No re-roll: a binary that failed in the attempt before stays failed."""
    suite.binary("test_a")	# would pass if it ran again
    suite.before_left("test_a", report("test_a", failed=True), status=1)
    assert suite.run() == 1, suite.output
    assert suite.ran_binaries() == []
    passed, failed, _, failures = suite.summary()
    assert (passed, failed) == (0, 1)
    assert failures[0].startswith("a case of test_a")


def test_a_binary_that_crashed_stays_crashed(suite):
    """It ended (its status is recorded), with a cut-off report: a result, not a death."""
    suite.binary("test_a")
    suite.before_left("test_a", CUT_OFF, status=134)
    assert suite.run() == 1, suite.output
    assert suite.ran_binaries() == []
    passed, failed, _, failures = suite.summary()
    assert (passed, failed) == (0, 1)
    assert "ended with status 134" in failures[0]


def test_a_whole_report_without_a_status_runs_again(suite):
    """Only the recorded status says the binary ended: its report may be whole by chance."""
    suite.binary("test_a")
    suite.before_left("test_a", report("test_a", failed=True))
    assert suite.run() == 0, suite.output
    assert suite.ran_binaries() == ["test_a"]


def test_a_status_that_is_no_number_runs_again(suite):
    suite.binary("test_a")
    suite.before_left("test_a", report("test_a", failed=False), status="")
    assert suite.run() == 0, suite.output
    assert suite.ran_binaries() == ["test_a"]


def test_the_resume_goes_on_from_the_binary_that_died(suite):
    """The ones before keep their results, the one that died and the rest run."""
    for name in ("test_a", "test_b", "test_c"):
        suite.binary(name)
    suite.before_left("test_a", report("test_a", failed=True), status=1)
    suite.before_left("test_b", CUT_OFF)
    assert suite.run() == 1, suite.output
    assert suite.ran_binaries() == ["test_b", "test_c"]
    passed, failed, _, _ = suite.summary()
    assert (passed, failed) == (2, 1)


def test_a_first_attempt_records_each_status_after_the_binary_ended(suite):
    suite.binary("test_a")
    suite.binary("test_b", failed=True)
    suite.binary("test_c", status=139)	# died after a whole report
    assert suite.run(resume=False) == 1, suite.output
    assert suite.ran_binaries() == ["test_a", "test_b", "test_c"]
    assert [suite.left(n, ".exit") for n in ("test_a", "test_b", "test_c")] == ["0\n", "1\n", "139\n"]
    assert not list(suite.run_dir.glob("*.tmp"))
    passed, failed, _, failures = suite.summary()
    assert (passed, failed) == (2, 2)
    assert any("test_c.xml: its binary exited with status 139" in f for f in failures)


def test_a_chain_of_attempts_keeps_what_ended_in_the_first(suite):
    """Attempt 3 reads attempt 2's directory, which holds what attempt 1 left."""
    suite.binary("test_a", failed=True)
    suite.binary("test_b")
    suite.before_left("test_a", report("test_a", failed=False), status=0)
    suite.before_left("test_b", CUT_OFF)
    suite.run()
    second = suite.run_dir.rename(suite.before.parent / "second")
    suite.run_dir.mkdir()
    suite.ran.unlink()
    env = dict(os.environ, COS_BUILD=str(suite.build), COS_RUN_DIR=str(suite.run_dir),
               COS_SUITE_DONE=str(second))
    assert subprocess.run(["bash", str(RUN_SUITE)], env=env, capture_output=True).returncode == 0
    assert suite.ran_binaries() == []
    assert suite.summary()[:3] == (2, 0, 0)


def test_only_the_binaries_named(suite):
    for name in ("test_a", "test_b"):
        suite.binary(name)
    assert suite.run(resume=False, COS_SUITE_TESTS="test_b") == 0, suite.output
    assert suite.ran_binaries() == ["test_b"]
    assert suite.run(resume=False, COS_SUITE_TESTS="test_nope") != 0
    assert "no test_nope" in suite.output


def test_summary_of_a_guest_that_died_in_a_binary(suite):
    """The last attempt's directory of a guest that never completed: the binary it died in is
    named as one that never ended, not as a test that failed on its own."""
    (suite.run_dir / "junit-test_a.xml").write_text(report("test_a", failed=False))
    (suite.run_dir / "junit-test_a.exit").write_text("0\n")
    (suite.run_dir / "junit-test_b.xml").write_text(CUT_OFF)
    passed, failed, _, failures = suite.summary()
    assert (passed, failed) == (1, 1)
    assert "test_b.xml: cut off" in failures[0] and "never ended" in failures[0]


def test_summary_of_reports_that_record_no_status(suite):
    """Host unit tests and the harness's own reports record no exit status: a whole report
    stands as it is, a cut-off one is unreadable."""
    (suite.run_dir / "junit-unit.xml").write_text(report("unit", failed=False))
    assert suite.summary()[:2] == (1, 0)
    (suite.run_dir / "junit-other.xml").write_text(CUT_OFF)
    passed, failed, _, failures = suite.summary()
    assert (passed, failed) == (1, 1)
    assert "unreadable report" in failures[0]
