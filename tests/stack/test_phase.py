"""stack/phase.py: a lookup's argument waits for its step in a preview, not at `pulumi up`."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from stack import phase


class Stdout:
    """A step's stdout as far as :func:`phase.after` uses it: ``apply``."""

    def apply(self, callback):
        return ("held until the step's stdout is known", callback(""))


@pytest.fixture
def at_up(monkeypatch):
    def set_(value):
        monkeypatch.setattr(phase, "AT_UP", value)

    return set_


def test_in_a_preview_the_argument_passes_through_the_steps_stdout(at_up):
    at_up(False)
    assert phase.previewing()
    assert phase.after(SimpleNamespace(stdout=Stdout()), "pyroscope-pls") == (
        "held until the step's stdout is known", "pyroscope-pls")


def test_at_up_the_argument_is_the_value(at_up):
    at_up(True)
    assert not phase.previewing()
    assert phase.after(SimpleNamespace(stdout=Stdout()), "pyroscope-pls") == "pyroscope-pls"
