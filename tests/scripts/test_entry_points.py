"""The owner steps' command lines that stacks deployed before the steps package stored in their state: a
``pulumi destroy`` of such a stack runs the stored delete (pulumi-command runs the inputs of the last create or
update), so ``python3 scripts/<step>.py delete`` must still delete what the step owns."""

from __future__ import annotations

import json

import pytest

from tests.support import ROOT, scenarios

OLD_PLAN = ROOT / "tests" / "data" / "plan-dev-before-microservices.json"


def stored_commands() -> dict[str, dict]:
    """name -> the ``create``/``delete`` command lines an owner step of the older release stored."""
    plan = json.loads(OLD_PLAN.read_text())
    return {r["name"]: {k: r["inputs"][k] for k in ("create", "delete")} for r in plan["resources"]
            if r["type"] == "command:local:Command"
            and str(r["inputs"].get("create", "")).startswith("python3 scripts/")}


def test_the_older_release_stored_three_owner_steps_under_scripts():
    assert sorted(stored_commands()) == ["gpu-dashboard-upload", "grafana-datasources-prometheus",
                                         "grafana-datasources-pyroscope"]


@pytest.mark.parametrize("step,scenario", [("grafana-datasources-pyroscope", "datasource-delete"),
                                           ("gpu-dashboard-upload", "dashboard-delete-own")])
def test_a_stored_delete_still_deletes_what_the_step_owns(step, scenario, tmp_path):
    wanted = next(s for s in scenarios.SCENARIOS if s.name == scenario)
    result = scenarios.run(wanted, tmp_path, command=stored_commands()[step]["delete"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == wanted.stdout, result.stderr
    for text in wanted.stderr_has:
        assert text in result.stderr, result.stderr
    for rule, expected in wanted.calls.items():
        assert result.count(rule) == expected, (rule, result.calls)


def test_a_stored_create_runs_the_step_too(tmp_path):
    wanted = next(s for s in scenarios.SCENARIOS if s.name == "datasource-rerun-no-change")
    result = scenarios.run(wanted, tmp_path, command=stored_commands()["grafana-datasources-pyroscope"]["create"])
    assert result.returncode == 0 and result.stdout == wanted.stdout, result.stderr
