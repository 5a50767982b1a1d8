"""A costly fixture value made once per test run, not once per xdist worker.

``once_per_run(tmp_path_factory, name, make)``: the first worker to ask runs ``make()`` under an exclusive lock on
``<common base folder>/<name>.lock`` and pickles the value to ``<name>.pickle`` beside it; the others wait on the lock
and load the pickle. Without xdist the base folder is the session's own. The value must pickle (plain data, paths);
files it names stay in the maker's temporary folder, which lives as long as the run. If ``make()`` raises, nothing is
written and the next worker tries again, failing the same way.
"""

from __future__ import annotations

import fcntl
import os
import pickle
from typing import Callable, TypeVar

T = TypeVar("T")


def shared_folder(tmp_path_factory):
    """The base folder every worker of this run shares (the session's own without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory, name: str, make: Callable[[], T]) -> T:
    folder = shared_folder(tmp_path_factory)
    cache = folder / f"{name}.pickle"
    with (folder / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cache.exists():
            value = make()
            partial = folder / f"{name}.pickle.partial"
            partial.write_bytes(pickle.dumps(value))
            partial.replace(cache)
            return value
    return pickle.loads(cache.read_bytes())
