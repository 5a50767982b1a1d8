"""stack/recovery.py: the one line azure-native's refusal of a resource Azure already has gets after a killed run."""

from __future__ import annotations

import pulumi

from stack import recovery

REFUSAL = ('cannot create already existing resource azure-native:dashboard:ManagedPrivateEndpoint '
           '{"managedPrivateEndpointName": "pyroscope-mpe"} (azure-native Create)')


def test_the_refusal_of_what_azure_has_names_the_recovery_command_with_the_stack():
    line = recovery.already_exists_recovery([REFUSAL], "grafana-private-link-mpe", "prod-eu")
    assert line is not None and "\n" not in line
    assert line.startswith("grafana-private-link-mpe: Azure has it")
    assert "`.venv/bin/python -m ops.recover --stack prod-eu --run`" in line and "then `pulumi up` again" in line


def test_another_error_gets_no_line():
    assert recovery.already_exists_recovery(["AuthorizationFailed: no access"], "x", "dev") is None


def test_the_hook_logs_the_line_and_never_asks_for_a_retry(monkeypatch):
    logged = []
    monkeypatch.setattr(pulumi.log, "error", lambda text, *a, **k: logged.append(text))
    monkeypatch.setattr(pulumi, "get_stack", lambda: "dev")
    args = pulumi.ErrorHookArgs(urn="urn", id="", name="inspektor-gadget-extension",
                                type="azure-native:kubernetesconfiguration:Extension", failed_operation="create",
                                errors=[REFUSAL])
    assert recovery.explain_already_exists(args) is False
    assert len(logged) == 1 and "`.venv/bin/python -m ops.recover --stack dev --run`" in logged[0]


def test_the_kubernetes_providers_refusal_of_an_object_the_cluster_has_names_the_recovery_command():
    """pulumi/pulumi-kubernetes#2926 (4.29.0): a create of an object the cluster has is refused; after a killed run
    the stack's NetworkPolicy is such an object, and the line names the same recovery."""
    refusal = ('networkpolicies.networking.k8s.io "pyroscope" already exists\n\nThe resource already exists in the '
               'cluster. This can happen when:\n\n  - Renaming a Pulumi resource: use an alias')
    line = recovery.already_exists_recovery([refusal], "pyroscope-network-policy", "dev")
    assert line is not None and "\n" not in line
    assert line.startswith("pyroscope-network-policy: the cluster has it")
    assert "`.venv/bin/python -m ops.recover --stack dev --run`" in line and "docs/existing-objects.md" in line
