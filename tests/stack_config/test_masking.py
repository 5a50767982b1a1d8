"""stack_config/masking.py: a line the stack prints shows every secret value it knows as [secret]."""

from __future__ import annotations

import pytest

from stack_config import masking
from stack_config.schema import ConfigError


@pytest.fixture(autouse=True)
def known():
    """The values known to this test only."""
    masking.forget()
    yield masking.know
    masking.forget()


def test_each_value_is_masked_longest_first_in_any_case_and_json_escaped(known):
    known(["aks-prod", "aks-prod-eu", 'rg "quoted"\\x'])
    assert masking.masked("cluster aks-prod-eu in MC_rg_AKS-PROD_eastus2") == \
        "cluster [secret] in MC_rg_[secret]_eastus2"
    assert masking.masked('{"group": "rg \\"quoted\\"\\\\x"}') == '{"group": "[secret]"}'


def test_trivial_values_are_left_alone(known):
    """Shorter than 3 characters, or a boolean: the engine's own filter leaves them too."""
    known(["", "a", "ab", "true", "False", 42])
    assert masking.masked("a tab is true, not false; 42") == "a tab is true, not false; 42"
    known(["abc"])
    assert masking.masked("a tab is abc") == "a tab is [secret]"


def test_forget_starts_over(known):
    known(["aks-prod"])
    masking.forget()
    assert masking.masked("aks-prod") == "aks-prod"


def test_a_config_error_masks_its_line_wherever_it_is_built(known):
    known(["aks-prod"])
    error = ConfigError("clusterName", "cluster 'aks-prod' has local accounts disabled")
    assert str(error) == "clusterName: cluster '[secret]' has local accounts disabled"
    assert error.message == "cluster '[secret]' has local accounts disabled" and error.key == "clusterName"


def test_log_lines_are_masked(known, monkeypatch):
    said = []
    monkeypatch.setattr(masking.pulumi.log, "warn", lambda text: said.append(("warn", text)))
    monkeypatch.setattr(masking.pulumi.log, "info", lambda text: said.append(("info", text)))
    known(["aks-prod"])
    masking.warn("could not read aks-prod")
    masking.info("aks-prod: left as it is")
    assert said == [("warn", "could not read [secret]"), ("info", "[secret]: left as it is")]


def test_a_structured_value_masks_what_is_in_it(known):
    """A secret list or map config value reaches the program as JSON text: its items are masked where a line shows
    them one by one."""
    known(['["costCenter=secret-42", "team=gpu"]', '{"owner": "alice-xyz"}'])
    assert masking.masked("tag costCenter=secret-42, team=gpu, owner alice-xyz") == \
        "tag [secret], [secret], owner [secret]"
