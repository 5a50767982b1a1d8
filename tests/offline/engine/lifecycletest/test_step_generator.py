"""pulumi/pulumi v3.230.0 ``pkg/engine/lifecycletest/step_generator_test.go`` ported onto the offline engine
(:mod:`offline.engine`): the same programs, provider fakes, operations and assertions (tests/support/deploytest.py
says how the Go framework is translated).
"""

from __future__ import annotations

from offline.engine import Engine
from tests.support.deploytest import TYP, deploytest


def test_TestDuplicateURN():
    """pkg/engine/lifecycletest/step_generator_test.go, TestDuplicateURN, pulumi/pulumi v3.230.0 (ae2e2698). The
    ReadResource half is not modelled (the offline engine has no reads)."""
    engine = Engine({"pkgA": deploytest()})
    seen = []

    def program(monitor):
        monitor.register(TYP, "resA", True)
        try:
            monitor.register(TYP, "resA", True)
        except Exception as error:  # the monitor answers the second registration with an error
            seen.append(str(error))

    result = engine.update(program, [])
    assert seen and "Duplicate resource URN" in seen[0]
    assert result.error
