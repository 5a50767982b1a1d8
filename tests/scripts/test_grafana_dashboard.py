"""scripts/grafana_dashboard.py runs the dashboard step for stacks deployed before the steps package:
a ``pulumi destroy`` of such a stack runs the delete its state stored (pulumi-command runs the inputs of the last create
or update), ``python3 scripts/grafana_dashboard.py delete``, which must still delete what the step owns."""

from __future__ import annotations

from tests.support import scenarios
from tests.support.scenarios import stored_owner_commands as stored_commands


def test_a_stored_delete_still_deletes_the_dashboard(tmp_path):
    wanted = next(s for s in scenarios.SCENARIOS if s.name == "dashboard-delete-own")
    result = scenarios.run(wanted, tmp_path, command=stored_commands()["gpu-dashboard-upload"]["delete"])
    assert result.returncode == 0 and result.stdout == wanted.stdout, result.stderr
    assert all(text in result.stderr for text in wanted.stderr_has), result.stderr
    assert {rule: result.count(rule) for rule in wanted.calls} == wanted.calls, result.calls
