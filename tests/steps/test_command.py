"""Secrets that reach the step scripts are never printed. SIMULATED: Azure (the stand-in az, tests/support/fake_az.py).

A cluster or Grafana name that came in secret (``pulumi config set --secret``, or a secret output of a referenced
stack) is inside what the steps log: the node resource group, ARM ids, the Grafana endpoint and the private endpoint's
name carry it. The engine masks only values it knows are secret in its own events, so the steps mask them
themselves: steps/command.py ``with_secret_mask`` hands them ``MASK_VALUES`` and logs only their stderr, which
steps/lib.sh ``log`` and steps/azcli.py ``Step.log`` print with each value as ``[secret]``.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from components.grafana_private_link import NONCE_COMMAND
from offline import canned, program
from offline import wire as wire_format
from steps import command as step_scripts
from tests.support import ROOT, scenarios
from tests.support.config_values import PLATFORM, SECRET_CLUSTER

COMMAND = "command:local:Command"
#: The names the scenarios' resources carry (tests/support/scenarios.py: NODE_RG, GRAFANA_ID, the endpoint, OURS), as
#: if secret.
SECRETS = ("aks-gpu-dev", "amg-gpu-dev")


def secret_plan(plan, monkeypatch):
    """The dev plan with the cluster name secret (from clusterStack) and the Grafana name secret (from grafanaStack),
    and each registration's additionalSecretOutputs by URN."""
    extra: dict = {}
    record = program.RecordingMonitor.RegisterResource

    def recording(self, request):
        extra[request.name] = list(request.additionalSecretOutputs)
        return record(self, request)

    monkeypatch.setattr(program.RecordingMonitor, "RegisterResource", recording)
    outputs = {**SECRET_CLUSTER, "obs": {**canned.stack_outputs("obs"), "grafanaName": "amg-secret-9"}}
    p = plan(clusterStack=PLATFORM, clusterName="", clusterResourceGroup="", grafanaStack="obs", grafanaName="",
             stack_outputs=outputs, secret_outputs={PLATFORM: ["clusterName"], "obs": ["grafanaName"]})
    return p, extra


def test_with_secret_config_every_step_masks_it_and_logs_only_stderr(plan, monkeypatch):
    p, extra = secret_plan(plan, monkeypatch)
    steps = [r for r in p.resources if r.type == COMMAND and "environment" in r.inputs
             and not r.name.endswith("approval-nonce")]  # the script steps
    assert len(steps) == 6, [r.name for r in steps]
    # The commands that run no script print nothing to mask: the PLS and claims identities (`true`), and the nonce,
    # which prints only the nonce and its endpoint, logs nothing (logging none) and keeps both outputs secret (the
    # endpoint holds the secret Grafana name here).
    others = {r.name: r for r in p.resources if r.type == COMMAND and r not in steps}
    assert sorted(r.inputs["create"] for r in others.values()) == sorted(["true", "true", NONCE_COMMAND])
    nonce = others["grafana-private-link-approval-nonce"]
    assert nonce.inputs["logging"] == "none" and {"stdout", "stderr"} <= set(extra[nonce.name])
    assert nonce.inputs["environment"]["ENDPOINT"] == "[secret]"
    for step in steps:
        assert step.inputs["environment"][step_scripts.MASK_VALUES] == "[secret]", step.name
        wire = step.wire["environment"][step_scripts.MASK_VALUES]
        assert wire.get(wire_format.SIG) == wire_format.SECRET_SIG, step.name
        assert wire["value"].splitlines() == ["amg-secret-9", "gpu-secret-7"], step.name  # longest, then by name
        assert step.inputs["logging"] == "stderr", step.name  # stdout holds the result whole: not logged
        assert {"stdout", "stderr"} <= set(extra[step.name]), step.name


def test_the_mask_is_no_credential_to_the_policy_pack(plan, monkeypatch):
    """The mandatory no-plaintext-secrets rule refuses an environment key that looks like a credential (``secret``,
    ``token``, ...): the mask's name must not, or every stack with secret config would fail its policy check."""
    from offline import policy_check
    from policy import rules

    p, _ = secret_plan(plan, monkeypatch)
    for mode in policy_check.MODES:
        assert policy_check.evaluate(p, mode=mode, policies=[rules.no_plaintext_secrets]) == [], mode


def test_without_secrets_the_steps_are_as_before(plan):
    for step in (r for r in plan().resources if r.type == COMMAND and "environment" in r.inputs
                 and not r.name.endswith("approval-nonce")):
        assert step_scripts.MASK_VALUES not in step.inputs["environment"], step.name
        assert step.inputs["logging"] == "stdoutAndStderr", step.name


def run_masked(scenario, workdir):
    env = {**scenario.env, step_scripts.MASK_VALUES: "\n".join(SECRETS)}
    return scenarios.run(scenarios.Scenario(**{**vars(scenario), "env": env}), workdir)


def test_no_script_prints_a_secret_value(tmp_path):
    """Every scenario of tests/support/scenarios.py again, with the names in it secret: the step still does what it did
    (same exit status), its stderr (what the engine logs) never holds a secret, and its stdout is at most its one result
    line (the step's output, kept secret and not logged)."""
    chosen = list(scenarios.SCENARIOS)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda item: run_masked(item[1], tmp_path / str(item[0])), enumerate(chosen)))
    masked = set()
    for scenario, result in zip(chosen, results):
        assert result.returncode == scenario.exit, (scenario.name, result.stderr)
        for name in SECRETS:
            assert name not in result.stderr, (scenario.name, result.stderr)
        assert len(result.stdout.splitlines()) <= 1, (scenario.name, result.stdout)
        if "[secret]" in result.stderr:
            masked.add(scenario.script)
    # ensure_role_assignment.sh logs the role and the workspace scope, which carry no cluster or Grafana name.
    assert masked == {s.script for s in chosen} - {"ensure_role_assignment.sh"}, ("each script logs a name that is "
                                                                                  "secret here, masked")


@pytest.mark.parametrize("values, text, expected", [
    (["aks-gpu-dev", "e"], "MC_rg_aks-gpu-dev_eastus2 [x] & e", "MC_rg_[secret]_[secret]astus2 [x] & [secret]"),
    (["grafana-amg-x", "amg-x"], "grafana-amg-x-mpe / amg-x", "[secret]-mpe / [secret]"),
    ([], "nothing secret", "nothing secret"),
])
def test_bash_and_python_mask_alike(values, text, expected):
    """One pass, longest value first: a mask is never masked again, a value inside a longer one goes with it."""

    from steps import azcli

    ordered = "\n".join(sorted(values, key=len, reverse=True))
    assert azcli.mask(text, {"MASK_VALUES": ordered}) == expected
    done = subprocess.run(["bash", "-c", 'source steps/lib.sh; STEP=s; log "$1"', "bash", text], cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "MASK_VALUES": ordered}, capture_output=True, text=True)
    assert done.stderr == f"s: {expected}\n"


@pytest.mark.parametrize("name", ["dashboard-sas-source-download-fails", "dashboard-sas-source-hash-mismatch"])
def test_a_sas_url_source_is_logged_without_its_query_string_or_userinfo(scenario_results, name):
    """DASHBOARD_SOURCE may be a SAS URL: only scheme://host/path of it is ever printed, and an az error line that
    quotes its query string (urllib3's "Max retries exceeded with url: ...", shortened for a retry line) is masked."""
    result = scenario_results[name]
    assert result.returncode == 1, result.stderr
    for secret in (scenarios.SAS_SECRET, "SECRETPASS", "sv=2022", "sig="):
        assert secret not in result.stdout + result.stderr, result.stderr


def test_a_secret_is_masked_before_a_log_line_is_shortened(monkeypatch, capsys):
    """A secret cut in half by a shortened error line would no longer match MASK_VALUES: mask first, then shorten
    (steps/azcli.py Step.retry's "retrying after" line, steps/lib.sh last_error | cut -c1-120)."""

    from steps import azcli

    secret = "s3cr3t-value-that-is-long"
    monkeypatch.setenv(azcli.MASK_VALUES, secret)
    line = "ERROR: " + "x" * 145 + secret
    calls = iter([azcli.AzError(["az"], line + " (Service Unavailable)"), None])

    def call():
        error = next(calls)
        if error:
            raise error

    monkeypatch.setenv("POLL_INITIAL_SECONDS", "0")
    azcli.Step("t").retry("reading", call, 5)
    assert "s3cr3t" not in capsys.readouterr().err
    done = subprocess.run(["bash", "-c", f'source steps/lib.sh; f=$(mktemp); echo "{"x" * 110}{secret}" > "$f"; '
                                         'log "retrying after: $(last_error "$f" | cut -c1-120)"'],
                          cwd=ROOT, env={"PATH": "/usr/bin:/bin", "MASK_VALUES": secret}, capture_output=True,
                          text=True)
    assert done.returncode == 0 and "retrying after: " in done.stderr, done.stderr
    assert "s3cr3t" not in done.stderr, done.stderr
