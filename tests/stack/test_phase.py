"""stack/phase.py: a lookup's argument waits for its step in a preview, not at `pulumi up`."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pulumi
import pytest

from stack import phase


@pytest.fixture
def at_up(monkeypatch):
    def set_(value):
        monkeypatch.setattr(phase, "AT_UP", value)

    return set_


def test_in_a_preview_the_argument_passes_through_the_steps_stdout(at_up):
    """Unknown while the step is created or replaced (its stdout unknown: the SDK then skips the invoke), the value
    once the stdout is known."""
    at_up(False)
    assert phase.previewing()

    async def check():
        pending = pulumi.Output(set(), asyncio.sleep(0, ""), asyncio.sleep(0, False))  # an unknown stdout
        waiting = phase.after(SimpleNamespace(stdout=pending), "pyroscope-pls")
        ran = phase.after(SimpleNamespace(stdout=pulumi.Output.from_input("done")), "pyroscope-pls")
        return await waiting.is_known(), await ran.future()

    assert asyncio.run(check()) == (False, "pyroscope-pls")


def test_at_up_the_argument_is_the_value(at_up):
    at_up(True)
    assert not phase.previewing()
    assert phase.after(SimpleNamespace(stdout=None), "pyroscope-pls") == "pyroscope-pls"


def test_a_secret_stdout_leaves_the_argument_as_secret_as_it_is_at_up(at_up):
    """With a secret in the config every step's stdout is secret (steps/command.py); passed through it, a plain PLS
    name made the lookup's result secret in a preview only, and the endpoint's plain PLS id in the state previewed as
    replaced on every re-run (seen under the real CLI: docs/real-engine-agreement.md, `secret-config`)."""
    at_up(False)

    async def check():
        step = SimpleNamespace(stdout=pulumi.Output.secret("done"))
        plain = phase.after(step, "pyroscope-pls")
        kept = phase.after(step, pulumi.Output.secret("pls-of-a-secret-cluster"))
        return await plain.is_secret(), await plain.future(), await kept.is_secret(), await kept.future()

    assert asyncio.run(check()) == (False, "pyroscope-pls", True, "pls-of-a-secret-cluster")


def test_a_stack_with_a_secret_in_its_config_previews_no_change_on_a_re_run(tmp_path, monkeypatch):
    """The offline diff of the same failing input: the plan at `pulumi up` as the base, a preview of the same config."""
    from offline import diff as plan_diff
    from offline import program

    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text((program.ROOT / "Pulumi.dev.yaml").read_text() + "  aks-gpu-observability:pyroscopeDatasourceName:"
                    "\n    secure: v1:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==\n")
    monkeypatch.setattr(program, "stack_file", lambda stack: path)
    base = program.run("dev", {}, preview=False).to_json()
    diff, _ = plan_diff.preview(base, lambda pending: program.run("dev", {}, pending=pending), [])
    assert [(s.urn.rsplit("::", 1)[-1], s.op) for s in diff.steps if s.op != "same"] == []
