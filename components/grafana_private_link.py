"""Component GrafanaPrivateLink: Azure Managed Grafana's private path to Pyroscope.

    wait for the PLS (command) -> PLS lookup (invoke) -> managed private endpoint (MPE)
                                                   `-> NetworkPolicy admitting the PLS's NAT IPs to Pyroscope
      -> approval of exactly its connection on the PLS (command) -> refresh of Grafana's MPEs (command)
      -> read-back of the MPE's private IP and connection state (invoke)

Inputs: :class:`GrafanaPrivateLinkArgs` (the Grafana, the PLS, the Service it is replaced with). Outputs:
``private_link_service_id``, ``managed_private_endpoint_id``, ``connection_state``, ``pyroscope_url``. Errors:
:class:`MissingNatAddressError`, :class:`EmptyPrivateIpError`. Upstream: ``Microsoft.Dashboard/grafana/
managedPrivateEndpoints`` (API 2024-10-01); facts, teardown and replacements: docs/decisions/private-link.md.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import dashboard, network
from pulumi_command import local

from stack import grafana_lock
from stack.phase import after, previewing
from stack.recovery import already_exists_hooks
from stack.specs import NAMESPACE, PATCH_FORCE, PRIVATE_LINK_POLICY, private_link_policy_spec
from steps.command import DASHBOARD_API_VERSION, forwarded_depends_on, script_command

TYPE = "aks-gpu-observability:index:GrafanaPrivateLink"
PYROSCOPE_PORT = 4040


#: The approval nonce: 16 random bytes as 32 hex digits, made by a local command whose stdout Pulumi keeps in the
#: state (as a secret), one per endpoint: it rotates with every endpoint it approves, so a nonce read from the state
#: (a stolen drift token reads production's) is spent once its endpoint is approved. ``create`` makes one; ``update``
#: (pulumi-command runs it on any change of the step's inputs: pulumi/pulumi-command
#: ``provider/pkg/provider/local/commandController.go`` @ 7f3eb6f3 (v1.2.1), ``Update``) prints the one it had, from
#: PULUMI_COMMAND_STDOUT (``run`` puts the previous stdout and stderr there when non-empty unless
#: ``addPreviousOutputInEnv`` is false: same commit, ``provider/pkg/provider/local/commandOutputs.go``), or fails
#: naming the way to a new nonce when the state lost it. Both run under :data:`NONCE_INTERPRETER`, which records the
#: endpoint the nonce belongs to on stderr (``ENDPOINT``: every input whose change replaces the managed private
#: endpoint) and makes a new nonce instead when ``ENDPOINT`` moved. A state from before the rotation has no stderr:
#: its first update keeps the nonce. The rotation lives in the interpreter, an input such a state does not have, and
#: not in new command texts: pulumi-go-provider answers a preview of an update with unknown outputs when an input the
#: old state had changed, which would show every upgraded stack's endpoint replaced in its preview, and ``up`` would
#: not replace it (docs/decisions/approval-nonce.md). A new PLS replaces the step (``replace_with``): a new nonce.
NONCE_COMMAND = "od -An -N16 -tx1 /dev/urandom | tr -d ' \\n'"
NONCE_UPDATE_COMMAND = (
    'printf %s "${PULUMI_COMMAND_STDOUT:?the approval nonce step has no previous stdout to keep (its state lost it); '
    'to make a new nonce, which replaces the managed private endpoint, run pulumi up --replace with the URN of the '
    'approval-nonce step (pulumi stack --show-urns)}"'
)
#: pulumi-command runs ``interpreter + [command]``: ``sh -c ROTATE approval-nonce <command>``, the command as ``$1``.
NONCE_INTERPRETER = [
    "/bin/sh", "-c",
    'if [ -n "${PULUMI_COMMAND_STDERR:-}" ] && [ "$PULUMI_COMMAND_STDERR" != "$ENDPOINT" ]; then '
    f'{NONCE_COMMAND}; else eval "$1"; fi; printf %s "$ENDPOINT" >&2',
    "approval-nonce",
]
#: The Network REST spec restricts a private endpoint's requestMessage to 140 characters (Azure/azure-rest-api-specs
#: specification/network/resource-manager/Microsoft.Network/stable/2024-05-01/privateEndpoint.json
#: ``PrivateLinkServiceConnectionProperties.requestMessage``); Grafana's MPE passes its own on (not verified: its spec,
#: dashboard 2024-10-01 grafana.json, gives no limit), so the message is kept within it.
REQUEST_MESSAGE_LIMIT = 140


def endpoint_key(args: "GrafanaPrivateLinkArgs") -> pulumi.Output[str]:
    """What names one managed private endpoint for the nonce: each of its inputs whose change replaces it (the
    dashboard REST spec's create-only properties and path parameters, docs/decisions/approval-nonce.md) but the nonce,
    joined by ``|``."""
    return pulumi.Output.all(args.grafana_resource_group, args.grafana_name, args.managed_private_endpoint_name,
                             args.grafana_location, args.private_link_service_resource_group,
                             args.private_link_service_name, args.private_link_service_region,
                             args.request_message).apply(lambda parts: "|".join(str(p or "") for p in parts))


def approval_marker(nonce: str) -> str:
    """What the approval writes into its description so a re-run knows the connection it approved: an HMAC-SHA256 of a
    fixed text under the nonce, 16 hex digits. It tells nothing of the nonce, so it need not be secret. ``None`` (a
    targeted `pulumi up` that leaves the nonce step out before it exists) is taken as empty: nothing approves then."""
    key = (nonce or "").encode()
    return hmac.new(key, b"aks-gpu-observability approved connection", hashlib.sha256).hexdigest()[:16]


def request_message(text: str, nonce: str) -> str:
    """The MPE's requestMessage: ``text`` (shortened if need be) and the nonce, within :data:`REQUEST_MESSAGE_LIMIT`."""
    tail = f" (aks-gpu-observability {nonce})"
    return text[: REQUEST_MESSAGE_LIMIT - len(tail)] + tail


def require_nat_addresses(pls_name: str, ip_configurations) -> list[str]:
    """The private link service's NAT IP addresses (``ipConfigurations[].privateIPAddress``, sorted, distinct).

    All traffic a private endpoint sends through the PLS "will appear to originate from this pool of private IP
    addresses" (Microsoft Learn, "What is Azure Private Link service?", private-link-service-overview): the PLS's IP
    configurations, which the AKS cloud provider creates in the PLS subnet, dynamic unless
    ``azure-pls-ip-configuration-ip-address`` names static ones (kubernetes-sigs/cloud-provider-azure
    ``pkg/provider/azure_privatelinkservice.go``@7b31c76c ``reconcilePLSIpConfigs``), and whose GET carries each
    configuration's ``privateIPAddress`` (Azure/azure-rest-api-specs ``specification/network/resource-manager/
    Microsoft.Network/stable/2024-05-01/privateLinkService.json`` ``PrivateLinkServiceIpConfigurationProperties``;
    example
    ``PrivateLinkServiceGet.json``@132b90d1). Raises :class:`MissingNatAddressError` when none has an address: a
    NetworkPolicy admitting nothing would shut Grafana out without a word."""
    addresses = sorted({config.private_ip_address for config in (ip_configurations or []) if config.private_ip_address})
    if not addresses:
        raise MissingNatAddressError(
            f"privateLinkServiceName: private link service '{pls_name}' has no NAT IP address "
            "(no ipConfigurations with a "
            "privateIPAddress), so Pyroscope's NetworkPolicy cannot admit Grafana's connections; check "
            f"`az network private-link-service show -n {pls_name} -g <its resource group> --query ipConfigurations`, "
            "then "
            "run `pulumi up` again"
        )
    return addresses


class MissingNatAddressError(pulumi.RunError):
    """The private link service reports no NAT IP address (:func:`require_nat_addresses`)."""


class EmptyPrivateIpError(pulumi.RunError):
    """The MPE has no private IP after approval and refresh; a datasource URL would be ``http://:4040``."""


def require_private_ip(mpe_name: str, ip: Optional[str], status: Optional[str]) -> str:
    """``ip`` if non-empty; else raises EmptyPrivateIpError with one line saying what to check."""
    if ip:
        return ip
    raise EmptyPrivateIpError(
        f"managedPrivateEndpointName: managed private endpoint '{mpe_name}' has no privateLinkServicePrivateIP "
        f"after approval and refresh (connection state {status or 'unknown'}); check its connection on the "
        "private link service is Approved, then run `pulumi up` again"
    )


def created_at(system_data) -> str:
    """``systemData.createdAt`` of an ARM resource (azure-native ``SystemDataResponse``), or ``""`` when ARM sent
    none."""
    return (getattr(system_data, "created_at", None) if system_data is not None else None) or ""


def names_private_link_service(resource_id: Optional[str], resource_group, name: str) -> bool:
    """True if ``resource_id`` is the ARM id of private link service ``name`` in ``resource_group`` (a string; ARM
    compares ids case-insensitively: ``/subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.Network/
    privateLinkServices/<name>``)."""
    if not resource_id or not isinstance(resource_group, str):
        return False
    parts = resource_id.lower().split("/")
    return (len(parts) == 9 and parts[0] == "" and parts[1] == "subscriptions" and parts[3] == "resourcegroups"
            and parts[5:7] == ["providers", "microsoft.network"] and parts[7] == "privatelinkservices"
            and parts[4] == resource_group.lower() and parts[8] == name.lower())


def preview_pls_id(args: "GrafanaPrivateLinkArgs", wait: pulumi.Resource, looked_up: pulumi.Output) -> pulumi.Output:
    """The PLS id the MPE, its approval and refresh get: ``looked_up`` (the lookup after the wait), except in a preview
    where :attr:`GrafanaPrivateLinkArgs.known_private_link_service_id` names the PLS this component waits for (its
    group and name): then that id, read before anything was registered, with the wait as its dependency, as the
    lookup's has.

    A preview answers an updated command's outputs unknown (pulumi-go-provider's markComputed), so the lookup behind
    the wait too; the MPE's privateLinkResourceId (create-only) would be unknown and the preview would show the MPE,
    approval and refresh replaced, which `pulumi up` does not do: an ARM id is its subscription, group and name, so
    the lookup answers the id read before for as long as that PLS is there. A renamed PLS, or one in another group, is
    not there yet (no id: unknown, replaced); a new PLS for a new Service replaces the chain through ``replace_with``.
    docs/decisions/preview-private-link.md."""
    known = args.known_private_link_service_id
    if not previewing() or not names_private_link_service(known, args.private_link_service_resource_group,
                                                          args.private_link_service_name):
        return looked_up
    return wait.urn.apply(lambda _: known)  # a URN is known in a preview: the id, depending on the wait


@dataclass(frozen=True)
class GrafanaPrivateLinkArgs:
    """Inputs of :class:`GrafanaPrivateLink`.

    ``grafana_id``/``grafana_name``/``grafana_resource_group``/``grafana_location``: the existing Standard
    Grafana. ``private_link_service_name``/``private_link_service_resource_group``: the PLS AKS creates.
    ``tags``: Azure tags for the MPE.
    ``private_link_service_region``: the cluster's location. Timeouts in seconds bound each command.
    ``replace_with``: what a new PLS comes with, the Kubernetes Service AKS makes it for and the PLS's identity (its
    name, group and owner Service); when one is replaced the wait and the MPE are replaced with it (Pulumi
    ``replace_with``), and the approval and refresh with the MPE, so the new PLS gets a new endpoint, approved and
    refreshed.
    """

    grafana_id: pulumi.Input[str]
    grafana_name: str
    grafana_resource_group: str
    grafana_location: pulumi.Input[str]
    private_link_service_name: str
    private_link_service_resource_group: pulumi.Input[str]
    private_link_service_region: pulumi.Input[str]
    managed_private_endpoint_name: str
    request_message: str
    private_link_service_timeout_seconds: int
    approval_timeout_seconds: int
    refresh_timeout_seconds: int
    #: The Service's ``azure-pls-ip-configuration-ip-address-count`` and ``azure-pls-ip-configuration-subnet`` (empty:
    #: the cloud provider's subnet): what the wait checks the PLS's NAT IP configurations against.
    private_link_ip_address_count: int
    private_link_subnet: str
    #: Pyroscope's NetworkPolicy is on (``pyroscopeNetworkPolicy``): register ``pyroscope-private-link`` admitting the
    #: PLS's NAT IPs (docs/decisions/private-link.md), in ``pyroscope_namespace`` (the stack's Namespace resource;
    #: None: the plain name ``gadget``), with the Kubernetes provider in ``opts.providers``.
    admit_nat_addresses: bool
    tags: dict
    replace_with: tuple = ()
    #: Whose PLS the wait accepts (steps/wait_private_link_service.sh): its frontend on a load balancer under this
    #: scope (the cluster's node resource group), made for this Service (``<namespace>/<name>``).
    load_balancer_scope: str = ""
    owner_service: str = ""
    pyroscope_namespace: Optional[k8s.core.v1.Namespace] = None
    #: The PLS's ARM id as ARM answered it before anything was registered (existing/taken.py refuse_foreign_pls), or
    #: None when there was none: what a preview keys the MPE, its approval and refresh on (:func:`preview_pls_id`).
    known_private_link_service_id: Optional[str] = None

    @property
    def private_endpoint_name(self) -> str:
        """The name Grafana gives the private endpoint behind the MPE: ``grafana-<grafanaName>-<mpeName>``."""
        return f"grafana-{self.grafana_name}-{self.managed_private_endpoint_name}"


class GrafanaPrivateLink(pulumi.ComponentResource):
    """The MPE from Grafana to the Pyroscope PLS, approved and refreshed.

    Outputs: ``private_link_service_id``, ``nat_addresses`` (the PLS's NAT IPs, sorted),
    ``managed_private_endpoint_id``, ``private_ip`` (never empty:
    EmptyPrivateIpError otherwise), ``connection_state`` (``Approved`` once done), ``pyroscope_url``
    (``http://<private ip>:4040``). ``opts.depends_on`` (the private link Service) is forwarded to the first step.
    """

    def __init__(self, name: str, args: GrafanaPrivateLinkArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TYPE, name, None, opts)
        pls_env = {
            "PLS_NAME": args.private_link_service_name,
            "PLS_RESOURCE_GROUP": args.private_link_service_resource_group,
        }
        wait = script_command(
            f"{name}-wait-for-pls",
            "wait_private_link_service.sh",
            # The NAT IP configurations the Service's annotations ask for: a change runs the wait again, which returns
            # once the cloud provider has rebuilt them (steps/wait_private_link_service.sh), before their lookup.
            {**pls_env, "TIMEOUT_SECONDS": str(args.private_link_service_timeout_seconds),
             "LOAD_BALANCER_SCOPE": args.load_balancer_scope, "OWNER_SERVICE": args.owner_service,
             "IP_CONFIGURATION_COUNT": str(args.private_link_ip_address_count), "PLS_SUBNET": args.private_link_subnet},
            triggers=[args.private_link_service_name, args.private_link_service_resource_group],
            # Waits for the Service: AKS makes the PLS from its annotations.
            opts=pulumi.ResourceOptions(parent=self, depends_on=forwarded_depends_on(opts),
                                        replace_with=list(args.replace_with) or None),
        )
        # Read once the wait has seen the PLS: the MPE needs its id.
        pls = network.get_private_link_service_output(
            resource_group_name=args.private_link_service_resource_group,
            service_name=after(wait, args.private_link_service_name),  # a new PLS is not there to read in a preview
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=[wait]),
        )
        self.private_link_service_id = pls.id
        # What the endpoint chain is keyed on: the lookup's id, or in a preview behind an updated wait the id read
        # before anything was registered (preview_pls_id).
        pls_id = preview_pls_id(args, wait, self.private_link_service_id)
        # The PLS's NAT addresses: what Grafana's connections come from at Pyroscope's pod
        # (Pyroscope.admit_private_link).
        self.nat_addresses = pls.ip_configurations.apply(
            lambda configs: require_nat_addresses(args.private_link_service_name, configs))
        self.private_link_policy: Optional[k8s.networking.v1.NetworkPolicy] = None
        if args.admit_nat_addresses:
            namespace = args.pyroscope_namespace
            # Reads the NAT IPs, so it follows the PLS lookup; gone with a replaced namespace, like Pyroscope's first
            # policy.
            self.private_link_policy = k8s.networking.v1.NetworkPolicy(
                f"{name}-nat-network-policy",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=PRIVATE_LINK_POLICY, annotations=PATCH_FORCE,
                    # Empty metadata only in a targeted `pulumi up` that leaves the namespace out before it exists.
                    namespace=(namespace.metadata.apply(lambda m: m.name if m else NAMESPACE) if namespace
                               else NAMESPACE)),
                spec=self.nat_addresses.apply(private_link_policy_spec),
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True,
                                            replace_with=[namespace] if namespace else None,
                                            hooks=already_exists_hooks(f"{name}-nat-network-policy")),
            )
        # The approval nonce (docs/how-it-works.md, "Whose connection is approved"), in the MPE's requestMessage. Who
        # sees it: this stack, the PLS owner (the Pending connection's description), and anyone with
        # Microsoft.Dashboard/grafana/managedPrivateEndpoints/read on the Grafana workspace: the MPE's GET answers with
        # its requestMessage (Azure/azure-rest-api-specs specification/dashboard/resource-manager/Microsoft.Dashboard/
        # stable/2024-10-01/examples/ManagedPrivateEndpoints_Get.json @ 114077a2). Such a reader can forge a Pending
        # connection carrying it: beside Grafana's it stops the approval ("refusing to guess"); listed alone, before
        # Grafana's, it would be approved (docs/security.md, Known gaps).
        nonce_step = local.Command(
            f"{name}-approval-nonce",
            create=NONCE_COMMAND,
            update=NONCE_UPDATE_COMMAND,
            add_previous_output_in_env=True,  # the update reads the nonce and its endpoint from it
            interpreter=NONCE_INTERPRETER,
            environment={"ENDPOINT": endpoint_key(args)},
            logging=local.Logging.NONE,
            # stderr holds ENDPOINT, secret when a name in it comes from a secret stack reference output.
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["stdout", "stderr"],
                                        replace_with=list(args.replace_with) or None),
        )
        nonce = pulumi.Output.secret(nonce_step.stdout)
        marker = pulumi.Output.unsecret(nonce.apply(approval_marker))
        # The fleet's Grafana phase writes one Grafana's endpoints one process at a time (stack/grafana_lock.py): at
        # `pulumi up` this holds the lookup's id; a preview holds nothing.
        held = grafana_lock.hold(pls_id)
        mpe = dashboard.ManagedPrivateEndpoint(
            f"{name}-mpe",
            managed_private_endpoint_name=args.managed_private_endpoint_name,
            workspace_name=args.grafana_name,
            resource_group_name=args.grafana_resource_group,
            location=args.grafana_location,
            private_link_resource_id=held,
            private_link_resource_region=args.private_link_service_region,
            request_message=nonce.apply(lambda n: request_message(args.request_message, n)),
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self, replace_with=list(args.replace_with) or None,
                                        delete_before_replace=True, hooks=already_exists_hooks(f"{name}-mpe")),
        )
        grafana_lock.release_after(mpe.id, held)
        self.managed_private_endpoint_id = mpe.id
        approval = script_command(
            f"{name}-approve-connection",
            "approve_private_endpoint_connection.sh",
            {
                **pls_env,
                "PRIVATE_ENDPOINT_NAME": args.private_endpoint_name,
                "DESCRIPTION": f"Approved for Azure Managed Grafana {args.grafana_name} by aks-gpu-observability",
                "APPROVAL_NONCE": nonce,
                "APPROVAL_MARKER": marker,
                "TIMEOUT_SECONDS": str(args.approval_timeout_seconds),
            },
            # The MPE's creation time: a new MPE, replaced or created anew under the same name (the same id), is a new
            # approval (docs/decisions/private-link.md).
            triggers=[pls_id, mpe.system_data.apply(created_at)],
            # After the MPE: its creation makes the Pending connection this step approves. The MPE's id is its
            # name, the same after a replacement; its new connection needs a new approval.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[mpe], replace_with=[mpe]),
        )
        refresh = script_command(
            f"{name}-refresh",
            "refresh_managed_private_endpoints.sh",
            {
                "API_VERSION": DASHBOARD_API_VERSION,
                "GRAFANA_ID": args.grafana_id,
                "MPE_NAME": args.managed_private_endpoint_name,
                "TIMEOUT_SECONDS": str(args.refresh_timeout_seconds),
            },
            # A new MPE (its creation time) is a new approval to refresh, whichever run approved it: the fleet's
            # Grafana phase approves in one pulumi up and refreshes in the next (docs/fleet.md).
            triggers=[pls_id, mpe.system_data.apply(created_at)],
            # After the approval: Grafana sees an approval only at a refresh that follows it.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[approval], replace_with=[approval]),
        )
        # Read after the refresh step has seen the private IP (the datasource's URL).
        state = dashboard.get_managed_private_endpoint_output(
            managed_private_endpoint_name=after(refresh, args.managed_private_endpoint_name),  # nor a new endpoint
            resource_group_name=args.grafana_resource_group,
            workspace_name=args.grafana_name,
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=[refresh]),
        )
        self.connection_state = state.connection_state.apply(lambda s: (s.status if s else None) or "")
        self.private_ip = pulumi.Output.all(state.private_link_service_private_ip, self.connection_state).apply(
            lambda pair: require_private_ip(args.managed_private_endpoint_name, pair[0], pair[1])
        )
        # Grafana is sent to Pyroscope only once the NetworkPolicy admitting the NAT IPs is in place: Pyroscope's first
        # policy selects its pods from the start and admits no Grafana traffic. The policy's URN resolves when its
        # registration returns, after its step (the engine's RegisterResource answers once the resource is created).
        admitted = self.private_link_policy.urn if self.private_link_policy else ""
        self.pyroscope_url = pulumi.Output.all(self.private_ip, admitted).apply(
            lambda values: f"http://{values[0]}:{PYROSCOPE_PORT}")
        self.register_outputs(
            {
                "private_link_service_id": self.private_link_service_id,
                "managed_private_endpoint_id": self.managed_private_endpoint_id,
                "private_ip": self.private_ip,
                "connection_state": self.connection_state,
                "pyroscope_url": self.pyroscope_url,
            }
        )
