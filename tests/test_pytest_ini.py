"""pytest.ini's distribution: ``--dist loadgroup`` keeps an ``xdist_group`` on one worker, so a module fixture that
plays minutes of real-engine work (the agreement rows, tests/e2e/test_agreement.py) runs once, not once per worker.
pytest-dev/pytest-xdist#1386: with pytest 9.2's structured node ids xdist's group suffix is lost and the group is
spread over the workers, each playing the fixture again (requirements-dev.txt keeps pytest below 9.2)."""

from __future__ import annotations

import subprocess
import sys

GROUPED = '''
import os, pytest

@pytest.fixture(scope="module")
def worker():
    return os.environ["PYTEST_XDIST_WORKER"]

@pytest.mark.xdist_group("agreement")
@pytest.mark.parametrize("case", range(4))
def test_row(case, worker):
    pass

@pytest.mark.parametrize("case", range(8))
def test_other(case):
    pass
'''


def test_an_xdist_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-n", "3", "--dist", "loadgroup", "-p",
                           "no:cacheprovider", "-c", "/dev/null", "--rootdir", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    # "[gw1] [ 25%] PASSED test_grouped.py::test_row[0]@agreement"
    workers = {line.split()[0] for line in done.stdout.splitlines() if "PASSED" in line and "::test_row[" in line}
    assert len([line for line in done.stdout.splitlines() if "PASSED" in line and "::test_row[" in line]) == 4
    assert len(workers) == 1, f"the group ran on {sorted(workers)}"
