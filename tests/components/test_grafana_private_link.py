"""components/grafana_private_link.py: MPE inputs, the command steps, the dependency chain and the teardown order."""

from __future__ import annotations

import hashlib
import json

import pytest

from components.grafana_private_link import (
    NONCE_COMMAND,
    REQUEST_MESSAGE_LIMIT,
    EmptyPrivateIpError,
    approval_marker,
    request_message,
)
from offline import canned
from steps.command import SCRIPTS, script_hash
from tests.support import RELEASE

MPE = "azure-native:dashboard:ManagedPrivateEndpoint"


#: The stack's Service AKS makes the PLS for (components/pyroscope.py), by its Pulumi name.
SERVICE = "pyroscope-private-link"


#: The no-op command whose triggers are the PLS's name, group and owner Service (components/pyroscope.py).
IDENTITY = "pyroscope-private-link-identity"


COMMAND = "command:local:Command"


NODE_RG = "MC_rg-aks-gpu-dev_aks-gpu-dev_eastus2"


PLS_ID = (f"/subscriptions/{canned.SUBSCRIPTION_ID}/resourceGroups/{NODE_RG}"
          "/providers/Microsoft.Network/privateLinkServices/pyroscope-pls")


GRAFANA_ID = canned.grafana_id("rg-observability-dev", "amg-gpu-dev")


def command(plan, suffix):
    return next(r for r in plan.by_type(COMMAND) if r.name == f"grafana-private-link-{suffix}")


def invoke(plan, token):
    return next(i for i in plan.invokes if i.token == token)


def test_managed_private_endpoint_inputs(plan):
    p = plan()
    mpe = p.one(MPE)
    assert mpe.options["deleteBeforeReplace"] is True  # a fixed name: --replace and replaceWith must delete first
    # A new Service or a new PLS identity (its name, group or owner Service): a new endpoint. Not a new wait (an edit
    # of its script), nor a reinstalled release.
    assert mpe.options["replaceWith"] == sorted([p.named(SERVICE).urn, p.named(IDENTITY).urn])
    assert p.one(RELEASE).urn not in mpe.options["replaceWith"]
    assert mpe.inputs == {
        "managedPrivateEndpointName": "pyroscope-mpe",
        "workspaceName": "amg-gpu-dev",
        "resourceGroupName": "rg-observability-dev",
        "location": "eastus2",
        "privateLinkResourceId": PLS_ID,
        "privateLinkResourceRegion": "eastus2",
        # it carries the approval nonce (test_the_request_message_carries_the_nonce_the_approval_expects)
        "requestMessage": "[secret]",
        "tags": {"managed-by": "aks-gpu-observability"},
    }


def test_tags_config_reaches_the_endpoint(plan):
    mpe = plan(paths={"tags[0]": "costCenter=1234", "tags[1]": "owner=ml-platform"}).one(MPE)  # config set --path
    assert mpe.inputs["tags"] == {"costCenter": "1234", "managed-by": "aks-gpu-observability", "owner": "ml-platform"}


def test_wait_for_pls_command(plan):
    wait = command(plan(), "wait-for-pls")
    assert wait.inputs["create"] == "bash steps/wait_private_link_service.sh"
    assert wait.inputs["environment"] == {
        "PLS_NAME": "pyroscope-pls", "PLS_RESOURCE_GROUP": NODE_RG, "TIMEOUT_SECONDS": "900",
        # Only this cluster's PLS is accepted: a frontend on its node resource group's load balancers, for its Service.
        "LOAD_BALANCER_SCOPE": (f"/subscriptions/{canned.SUBSCRIPTION_ID}/resourceGroups/{NODE_RG}"
                                "/providers/Microsoft.Network/loadBalancers/"),
        "OWNER_SERVICE": "gadget/pyroscope-private-link",
        # The NAT IP configurations the annotations ask for: a change of either runs the wait again (an update).
        "IP_CONFIGURATION_COUNT": "1", "PLS_SUBNET": ""}
    changed = command(plan(privateLinkIpAddressCount="2", privateLinkSubnet="snet-pls"), "wait-for-pls")
    assert (changed.inputs["environment"]["IP_CONFIGURATION_COUNT"], changed.inputs["environment"]["PLS_SUBNET"]) == (
        "2", "snet-pls")
    # The PLS's name and group are triggers: a changed PLS makes a new wait, so a preview's PLS lookup is unknown
    # instead of querying a PLS that does not exist yet (the engine's invoke gate; offline/program.py). Its owner
    # Service is not: a PLS made anew for another Service replaces the wait through the identity (replace_with).
    assert wait.inputs["triggers"] == [script_hash("wait_private_link_service.sh"), "pyroscope-pls", NODE_RG]
    assert wait.inputs["logging"] == "stdoutAndStderr"
    assert wait.inputs["addPreviousOutputInEnv"] is False
    assert "delete" not in wait.inputs
    assert wait.options["deleteBeforeReplace"] is False  # an action: replacing it just re-runs it
    assert "addPreviousOutputInEnv" in wait.inputs and wait.inputs["addPreviousOutputInEnv"] is False


def test_approval_command_targets_exactly_our_endpoint(plan):
    p = plan()
    approval, mpe = command(p, "approve-connection"), p.one(MPE)
    assert approval.inputs["create"] == "bash steps/approve_private_endpoint_connection.sh"
    assert approval.inputs["environment"] == {
        "APPROVAL_MARKER": approval_marker(canned.approval_nonce("grafana-private-link-approval-nonce")),
        "APPROVAL_NONCE": "[secret]",
        "DESCRIPTION": "Approved for Azure Managed Grafana amg-gpu-dev by aks-gpu-observability",
        "PLS_NAME": "pyroscope-pls",
        "PLS_RESOURCE_GROUP": NODE_RG,
        "PRIVATE_ENDPOINT_NAME": "grafana-amg-gpu-dev-pyroscope-mpe",
        "TIMEOUT_SECONDS": "600",
    }
    # The MPE's creation time: an MPE created anew under the same name (same id) is a new approval.
    assert approval.inputs["triggers"] == [script_hash("approve_private_endpoint_connection.sh"), PLS_ID,
                                           canned.CREATED_AT]
    assert mpe.outputs["systemData"]["createdAt"] == canned.CREATED_AT
    assert mpe.urn in approval.dependencies


def test_the_request_message_carries_the_nonce_the_approval_expects(plan):
    """One nonce per stack, made once (a command with no triggers: a re-run changes nothing), kept secret: in the MPE's
    requestMessage (the PLS owner sees it) and in the approval's environment; the marker, an HMAC of it, is plain."""
    from offline.wire import reveal

    p = plan()
    nonce_step, approval, mpe = command(p, "approval-nonce"), command(p, "approve-connection"), p.one(MPE)
    assert nonce_step.inputs["create"] == NONCE_COMMAND and "triggers" not in nonce_step.inputs
    assert nonce_step.inputs["logging"] == "none" and "delete" not in nonce_step.inputs
    nonce = canned.approval_nonce("grafana-private-link-approval-nonce")
    message = reveal(mpe.wire["requestMessage"])
    assert message == ("Azure Managed Grafana amg-gpu-dev to Pyroscope on AKS cluster aks-gpu-dev "
                       f"(aks-gpu-observability {nonce})")
    assert reveal(approval.wire["environment"])["APPROVAL_NONCE"] == nonce
    assert "requestMessage" in mpe.secret_fingerprints and nonce not in json.dumps(p.to_json())


def test_the_request_message_stays_within_the_private_endpoint_limit():
    nonce = "0" * 32
    long = request_message("Azure Managed Grafana " + "g" * 30 + " to Pyroscope on AKS cluster " + "c" * 63, nonce)
    assert len(long) == REQUEST_MESSAGE_LIMIT and long.endswith(f"(aks-gpu-observability {nonce})")
    assert approval_marker(nonce) != approval_marker("1" * 32) and nonce not in approval_marker(nonce)


def test_refresh_command(plan):
    p = plan(managedPrivateEndpointTimeoutSeconds=1200)
    refresh = command(p, "refresh")
    assert refresh.inputs["create"] == "bash steps/refresh_managed_private_endpoints.sh"
    assert refresh.inputs["environment"] == {
        "API_VERSION": "2024-10-01", "GRAFANA_ID": GRAFANA_ID, "MPE_NAME": "pyroscope-mpe", "TIMEOUT_SECONDS": "1200"}
    assert command(p, "approve-connection").urn in refresh.dependencies
    # The MPE's creation time, as the approval's: the fleet approves in one pulumi up (pass 1, --target) and refreshes
    # in the next, where the approval's replacement is past, so only a trigger of its own re-runs the refresh.
    assert refresh.inputs["triggers"] == [script_hash("refresh_managed_private_endpoints.sh"), PLS_ID,
                                          canned.CREATED_AT]


def test_dependency_chain_after_the_private_link_service(plan):
    """The wait depends on the private link Service alone (GrafanaPrivateLink's depends_on), which comes after the
    release; nothing else of the Pyroscope component delays it."""
    p = plan()
    release, service, wait, mpe = p.one(RELEASE), p.named(SERVICE), command(p, "wait-for-pls"), p.one(MPE)
    approval, refresh = command(p, "approve-connection"), command(p, "refresh")
    assert wait.dependencies == [service.urn]
    assert release.urn in service.dependencies
    assert invoke(p, "azure-native:network:getPrivateLinkService").dependencies == [wait.urn]
    assert wait.urn in mpe.dependencies
    assert mpe.urn in approval.dependencies
    assert approval.urn in refresh.dependencies
    assert invoke(p, "azure-native:dashboard:getManagedPrivateEndpoint").dependencies == [refresh.urn]
    order = [p.create_order.index(r.urn) for r in (release, service, wait, mpe, approval, refresh)]
    assert order == sorted(order)


def test_teardown_removes_the_endpoint_before_the_service_and_the_release(plan):
    p = plan()
    destroy = p.destroy_order
    release, service, mpe = p.one(RELEASE), p.named(SERVICE), p.one(MPE)
    assert destroy.index(mpe.urn) < destroy.index(service.urn) < destroy.index(release.urn)
    for step in ("approve-connection", "refresh", "wait-for-pls"):
        assert destroy.index(command(p, step).urn) < destroy.index(service.urn)
    assert destroy.index(command(p, "refresh").urn) < destroy.index(mpe.urn)


def test_outputs(plan):
    outputs = plan().outputs
    assert outputs["pyroscopePrivateUrl"] == f"http://{canned.MPE_PRIVATE_IP}:4040"
    assert outputs["managedPrivateEndpointState"] == "Approved"
    assert outputs["privateLinkServiceId"] == PLS_ID
    assert outputs["managedPrivateEndpointId"] == f"{GRAFANA_ID}/managedPrivateEndpoints/pyroscope-mpe"


def test_pls_resource_group_override_reaches_annotation_and_steps(plan):
    p = plan(privateLinkServiceResourceGroup="rg-network")
    assert command(p, "wait-for-pls").inputs["environment"]["PLS_RESOURCE_GROUP"] == "rg-network"
    assert command(p, "approve-connection").inputs["environment"]["PLS_RESOURCE_GROUP"] == "rg-network"
    # A group other clusters may share: the PLS name is derived per cluster (stack_config/names.py).
    name = p.outputs["privateLinkServiceName"]
    assert name.startswith("pyroscope-pls-") and command(p, "wait-for-pls").inputs["environment"]["PLS_NAME"] == name
    assert invoke(p, "azure-native:network:getPrivateLinkService").args == {"resourceGroupName": "rg-network",
                                                                            "serviceName": name}
    annotations = p.named(SERVICE).inputs["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/azure-pls-resource-group"] == "rg-network"
    assert annotations["service.beta.kubernetes.io/azure-pls-name"] == name
    assert "annotations" not in p.one(RELEASE).inputs["values"]["pyroscope"]["service"]


def test_names_follow_config(plan):
    p = plan(managedPrivateEndpointName="gpu-mpe", privateLinkServiceName="gpu-pls")
    assert p.one(MPE).inputs["managedPrivateEndpointName"] == "gpu-mpe"
    approval_env = command(p, "approve-connection").inputs["environment"]
    assert approval_env["PRIVATE_ENDPOINT_NAME"] == "grafana-amg-gpu-dev-gpu-mpe"
    assert command(p, "wait-for-pls").inputs["environment"]["PLS_NAME"] == "gpu-pls"


def test_empty_private_ip_is_an_error_not_a_datasource(plan):
    def no_ip(args, location):
        answer = canned.managed_private_endpoint(args, location)
        answer.update({"privateLinkServicePrivateIP": "", "connectionState": {"status": "Pending"}})
        return answer

    with pytest.raises(EmptyPrivateIpError,
                       match="^managedPrivateEndpointName: managed private endpoint 'pyroscope-mpe' has no "
                             "privateLinkServicePrivateIP.*connection state Pending"):
        plan(invoke_overrides={"azure-native:dashboard:getManagedPrivateEndpoint": no_ip})


def test_script_hash_covers_the_script_and_the_shared_library():
    expected = hashlib.sha256((SCRIPTS / "lib.sh").read_bytes()
                              + (SCRIPTS / "refresh_managed_private_endpoints.sh").read_bytes()).hexdigest()
    assert script_hash("refresh_managed_private_endpoints.sh") == expected
    assert len({script_hash(s) for s in ("wait_private_link_service.sh", "approve_private_endpoint_connection.sh",
                                         "refresh_managed_private_endpoints.sh")}) == 3


@pytest.mark.parametrize("mode", ["single-binary", "microservices"])
def test_replacements_cascade_from_the_private_link_service(plan, mode):
    """A replaced private link Service or PLS identity means a new PLS: the wait and the MPE are replaced with either,
    the approval with the MPE (whose id, its name, would not change), the refresh with the approval. The MPE is not
    replaced with the wait (an edit of the wait's script must keep Grafana's endpoint), and the release is in none of
    them: a reinstalled release keeps the PLS."""
    p = plan(pyroscopeMode=mode)
    service, identity, wait, mpe = p.named(SERVICE), p.named(IDENTITY), command(p, "wait-for-pls"), p.one(MPE)
    approval, refresh = command(p, "approve-connection"), command(p, "refresh")
    assert identity.inputs["triggers"] == ["pyroscope-pls", "", "gadget/pyroscope-private-link"]
    assert wait.replace_with == mpe.replace_with == sorted([service.urn, identity.urn])  # the wait is not in it
    assert approval.replace_with == [mpe.urn]
    assert refresh.replace_with == [approval.urn]
    release = p.one(RELEASE).urn
    assert not [r.name for r in (wait, mpe, approval, refresh) if release in r.replace_with]


def _preview_from(changed_name: str, change):
    """The offline preview from the dev plan with ``change`` applied to the base's resource ``changed_name``."""
    from offline import diff as plan_diff
    from offline.program import run

    base = run("dev").to_json()
    change(next(r for r in base["resources"] if r["name"] == changed_name)["inputs"])
    diff, _ = plan_diff.preview(base, lambda pending: run("dev", pending=pending))
    return diff


ENDPOINT_CHAIN = {"grafana-private-link-mpe", "grafana-private-link-approve-connection", "grafana-private-link-refresh"}


def test_a_new_owner_service_makes_a_new_wait_and_a_new_endpoint():
    """A stack deployed while the chart's Service had the PLS (owner ``gadget/pyroscope``): the PLS of the same name is
    made anew for the stack's Service, so the identity's triggers change (a replacement) and the wait, the nonce and
    the MPE, replaced with it, make a new connection, approved and refreshed; at ``pulumi up`` too, not only in the
    preview."""
    def before_the_owner_was_a_trigger(inputs):
        assert inputs["triggers"][-1] == "gadget/pyroscope-private-link"
        inputs["triggers"] = inputs["triggers"][:-1]

    diff = _preview_from(IDENTITY, before_the_owner_was_a_trigger)
    replaced = {s.name for s in diff.steps if s.op == "replace"}
    # The nonce with them: a new endpoint gets a nonce of its own.
    assert replaced == {IDENTITY, "grafana-private-link-wait-for-pls", "grafana-private-link-approval-nonce",
                        *ENDPOINT_CHAIN}
    assert not diff.preview_only  # `pulumi up` replaces them too
    up = {(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order}
    assert {("create-replacement", name) for name in replaced} <= up
    assert "pyroscope-private-link" not in {name for _, name in up}  # the Service and its PLS stay


def test_a_new_wait_alone_keeps_the_endpoint_at_up():
    """An edit of the wait's script (its hash is a trigger) replaces the wait, and the PLS lookup after it is unknown in
    the preview; the preview keys the MPE chain on the PLS id the deployed stack already has, so it shows the wait
    alone replaced, as ``pulumi up``, which reads the same PLS id, does: Grafana's endpoint, its approval and refresh
    stay."""
    def an_older_script(inputs):
        assert inputs["triggers"][0] == script_hash("wait_private_link_service.sh")
        inputs["triggers"][0] = "0" * 64

    diff = _preview_from("grafana-private-link-wait-for-pls", an_older_script)
    assert {s.name for s in diff.steps if s.op == "replace"} == {"grafana-private-link-wait-for-pls"}
    assert not diff.preview_only
    assert [(a.kind, a.urn.rsplit("::", 1)[-1]) for a in diff.order] == [
        ("create-replacement", "grafana-private-link-wait-for-pls"), ("delete", "grafana-private-link-wait-for-pls")]


WAIT = "grafana-private-link-wait-for-pls"
OWN_FRONTEND = (f"/subscriptions/{canned.SUBSCRIPTION_ID}/resourceGroups/{NODE_RG}/providers/Microsoft.Network/"
                "loadBalancers/kubernetes-internal/frontendIPConfigurations/d4e5f6")


def _endpoint_ids(p) -> tuple:
    """What the preview diffs the endpoint chain on: the MPE's privateLinkResourceId (a replace-on-change input) and the
    PLS id in the approval's and the refresh's triggers."""
    return (p.one(MPE).inputs["privateLinkResourceId"], command(p, "approve-connection").inputs["triggers"][1],
            command(p, "refresh").inputs["triggers"][1])


def test_a_preview_keys_the_endpoint_chain_on_the_pls_id_read_before_anything(plan, monkeypatch):
    """A new privateLinkSubnet (or IP count) updates the wait; a preview answers an updated command's stdout unknown,
    so the PLS lookup behind it too, and the endpoint's privateLinkResourceId was unknown: every preview showed the
    endpoint, its approval and refresh replaced, which `pulumi up` (the same PLS, the same id) never did. In a preview
    the id the program read before registering anything (existing/taken.py) is used as ARM spelled it, still depending
    on the wait as the lookup's does; with no PLS there yet, or an id naming another PLS, the inputs stay unknown. At
    `pulumi up` they come from the lookup after the wait, whatever was read before."""
    from offline import program
    from offline.wire import UNKNOWN

    wait = plan().named(WAIT).urn
    change = {"privateLinkSubnet": "snet-pls"}
    assert _endpoint_ids(program.run("dev", change, pending={wait})) == (UNKNOWN,) * 3  # no PLS there before

    answers = {"pyroscope-pls": PLS_ID.upper(), "other-pls": PLS_ID.replace("pyroscope-pls", "another-pls")}
    monkeypatch.setattr(canned, "private_link_service_owner", lambda group, name: (
        (OWN_FRONTEND, "gadget/pyroscope-private-link", answers[name]) if name in answers else None))
    previewed = program.run("dev", change, pending={wait})
    assert _endpoint_ids(previewed) == (PLS_ID.upper(),) * 3
    assert wait in previewed.one(MPE).property_dependencies["privateLinkResourceId"]
    other = program.run("dev", {**change, "privateLinkServiceName": "other-pls"}, pending={wait})
    assert _endpoint_ids(other) == (UNKNOWN,) * 3  # the id read names another PLS than the one the wait waits for
    assert _endpoint_ids(program.run("dev", change, pending=program.AtUp({wait}))) == (PLS_ID,) * 3


def test_approval_and_refresh_rerun_when_the_pls_changes(plan):
    """Keyed on the PLS id (keyed on the MPE id once, the refresh did not re-run when
    privateLinkServiceName changed, leaving Grafana unsynced)."""
    before, after = plan(), plan(privateLinkServiceName="other-pls")
    for step in ("approve-connection", "refresh"):
        assert command(before, step).inputs["triggers"] != command(after, step).inputs["triggers"], step
        assert PLS_ID in command(before, step).inputs["triggers"]


def test_an_update_of_the_nonce_step_keeps_the_nonce(plan):
    """L12: with no ``update``, pulumi-command runs ``create`` again on any change of the step's inputs
    (pulumi/pulumi-command v1.2.1 provider/pkg/provider/local/commandController.go ``Update``: "Use Create command if
    Update is unspecified"; schema.json ``update``: "If empty, the create command will be executed instead"), e.g. an
    edit of NONCE_COMMAND or ``logging``, or a provider upgrade that adds an input (pulumi/pulumi-command#912:
    ``addPreviousOutputInEnv`` showed as a change on every Command). A new nonce changes the create-only requestMessage
    and replaces the managed private endpoint (L11). An update must print the nonce it had (PULUMI_COMMAND_STDOUT, which
    v1.2.1 puts in the environment of an update: schema.json ``addPreviousOutputInEnv``, default true)."""
    import subprocess

    nonce_step = command(plan(), "approval-nonce")
    update = nonce_step.inputs.get("update")
    assert update, "no update command: an input change re-runs create and makes a new nonce"
    old = "5f1c0e9a7b3d4c2e8f6a1b0c9d8e7f6a"
    done = subprocess.run(["/bin/sh", "-c", update], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PULUMI_COMMAND_STDOUT": old}, timeout=10)
    assert done.returncode == 0 and done.stdout == old


def test_a_pls_without_nat_address_stops_the_run_in_one_line():
    """An empty ipConfigurations (an ARM answer without addresses) would make a policy admitting nothing from the PLS:
    Grafana shut out without a word. The lookup's read raises a one-line error instead."""
    from types import SimpleNamespace

    from components.grafana_private_link import MissingNatAddressError, require_nat_addresses

    configs = [SimpleNamespace(private_ip_address="10.224.0.9"), SimpleNamespace(private_ip_address="10.224.0.7"),
               SimpleNamespace(private_ip_address="10.224.0.9")]
    assert require_nat_addresses("pls", configs) == ["10.224.0.7", "10.224.0.9"]
    for empty in (None, [], [SimpleNamespace(private_ip_address=None)]):
        with pytest.raises(MissingNatAddressError) as caught:
            require_nat_addresses("pyroscope-pls", empty)
        assert "\n" not in str(caught.value) and str(caught.value).startswith(
            "privateLinkServiceName: private link service 'pyroscope-pls' has no NAT IP address")


@pytest.mark.parametrize("overrides", [{"privateLinkIpAddressCount": "2"}, {"privateLinkSubnet": "snet-pls"}],
                         ids=["ip-address-count", "pls-subnet"])
def test_the_wait_runs_again_when_the_pls_ip_configurations_change(overrides):
    """kubernetes-sigs/cloud-provider-azure ``pkg/provider/azure_privatelinkservice.go`` @7b31c76c
    ``reconcilePLSIpConfigs`` rebuilds every IP configuration (new dynamic addresses) when their number or subnet no
    longer matches the Service's annotations, some time after Helm updates the Service. The NAT NetworkPolicy reads the
    addresses after the wait, so the wait must be a new step whenever those annotations change."""
    from offline import program

    base = program.run("dev", {}).named("grafana-private-link-wait-for-pls").inputs
    changed = program.run("dev", overrides).named("grafana-private-link-wait-for-pls").inputs
    assert changed != base


def _nonce_step_run(step, command_text: str, endpoint: str, stdout: str = "", stderr: str = ""):
    """Run one of the nonce step's commands as pulumi-command v1.2.1 runs it: ``interpreter + [command]``, the
    previous outputs in the environment only when non-empty."""
    import subprocess

    env = {"PATH": "/usr/bin:/bin", "ENDPOINT": endpoint}
    env.update({k: v for k, v in (("PULUMI_COMMAND_STDOUT", stdout), ("PULUMI_COMMAND_STDERR", stderr)) if v})
    argv = [*step.inputs.get("interpreter", ["/bin/sh", "-c"]), command_text]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=10)


def test_the_nonce_rotates_with_the_endpoint_and_only_with_it(plan):
    """A nonce read from the state (the drift identity reads production's) stays valid only for the endpoint it was
    made for: an update whose ENDPOINT moved prints a new nonce; an update for the same endpoint (an edit of the
    step) and the first update of a state from before rotation (no stderr) keep it; each run records its endpoint.
    The create and update texts are those of the stacks deployed before the rotation, byte for byte: an input such a
    state had that changed would make a preview of the update answer the nonce unknown, and show the endpoint replaced
    (pulumi-go-provider's markComputed), which `pulumi up` would not do."""
    from components.grafana_private_link import NONCE_UPDATE_COMMAND

    assert NONCE_COMMAND == "od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'"
    assert NONCE_UPDATE_COMMAND.startswith('printf %s "${PULUMI_COMMAND_STDOUT:?the approval nonce step has no ')
    import re

    nonce_step = command(plan(), "approval-nonce")
    old, here = "5f1c0e9a7b3d4c2e8f6a1b0c9d8e7f6a", "rg|amg|pyroscope-mpe|eastus2|mc-rg|pyroscope-pls|eastus2|text"
    made = _nonce_step_run(nonce_step, nonce_step.inputs["create"], here)
    assert re.fullmatch(r"[0-9a-f]{32}", made.stdout) and made.stderr == here
    update = nonce_step.inputs["update"]
    kept = _nonce_step_run(nonce_step, update, here, old, here)
    assert (kept.returncode, kept.stdout, kept.stderr) == (0, old, here)
    moved = _nonce_step_run(nonce_step, update, here.replace("pyroscope-mpe", "pyroscope-mpe-2"), old, here)
    assert moved.returncode == 0 and re.fullmatch(r"[0-9a-f]{32}", moved.stdout) and moved.stdout != old
    assert moved.stderr == here.replace("pyroscope-mpe", "pyroscope-mpe-2")
    upgraded = _nonce_step_run(nonce_step, update, here, old)
    assert (upgraded.returncode, upgraded.stdout, upgraded.stderr) == (0, old, here)
    lost = _nonce_step_run(nonce_step, update, here, "", here)
    assert lost.returncode != 0 and lost.stdout == "" and "pulumi up --replace" in lost.stderr


@pytest.mark.parametrize("overrides", [{"managedPrivateEndpointName": "pyroscope-mpe-2"},
                                       {"privateLinkServiceName": "other-pls"},
                                       {"grafanaName": "amg-other"}],
                         ids=["mpe-name", "pls-name", "grafana"])
def test_what_replaces_the_endpoint_moves_the_nonce_steps_endpoint(plan, overrides):
    """Each input whose change replaces the MPE is in the nonce step's ENDPOINT; the step's replace_with names what
    the MPE's does (a new PLS); a change that keeps the MPE keeps ENDPOINT."""
    base = command(plan(), "approval-nonce")
    assert command(plan(**overrides), "approval-nonce").inputs["environment"] != base.inputs["environment"]
    assert command(plan(pyroscopeRetention="7d"), "approval-nonce").inputs["environment"] == base.inputs[
        "environment"]
    mpe = plan().one(MPE)
    assert set(base.options.get("replaceWith") or []) == set(mpe.options.get("replaceWith") or []) != set()
