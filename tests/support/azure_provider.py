"""STAND-IN for the pulumi-azure-native provider plugin (``pulumi-resource-azure-native``), which cannot be built here
(its metadata is generated from a submodule): Azure's control plane as a plugin on Pulumi's real gRPC provider
protocol (tests/support/plugin_server.py), keeping its state in the simulated world the stand-in ``az`` answers from
(``FAKE_AZ_WORLD``, tests/support/fake_world.py), so the steps and the provider see each other's writes.
SIMULATED: nothing here talks to Azure.

- Resources: the types of offline/replacement.py's rules. Check returns the inputs; Diff compares old and new inputs
  per property path, a change the type's rule forces (a PUT path parameter, a create-only property) replaces,
  delete-first, as azure-native asks for explicitly named resources (pulumi-azure-native
  ``provider/pkg/provider/diff.go``). Create refuses a resource that exists ("cannot create already existing
  resource", ``provider.go`` Create) and answers with the outputs offline/canned.py gives the type, a managed private
  endpoint's ``systemData.createdAt`` being the world's; a preview's create answers offline/canned.py's
  ``preview_outputs``. Delete treats a resource already gone as deleted; Read answers "deleted" (an empty id) for a
  resource the world no longer has, else its state with the world's inputs; Read of an id alone (an import) finds
  the resource of that ARM id.
- Invokes: the program's lookups (offline/canned.py ``INVOKES``), answered from the world where it holds the thing
  (the private link service the cloud-side loop made, a managed private endpoint, a cluster registered with its API
  server: ``listManagedClusterUserCredentials`` then returns an Entra ID kubeconfig for that server), else canned. A
  workspace or cluster deleted behind the stack's back answers ARM's 404.
- An unknown type or invoke token is refused with a gRPC error naming it.
"""

from __future__ import annotations

import base64
import os
import sys
import threading
from typing import Any, Optional

import grpc
import yaml
from google.protobuf import empty_pb2
from pulumi.runtime.proto import plugin_pb2, provider_pb2, provider_pb2_grpc

from offline import canned, replacement
from tests.support import fake_world, latency
from tests.support import plugin_server as wire

#: The release the lock's SDK asks for; the engine takes an ambient plugin whatever it reports.
VERSION = "3.29.0"
#: A type token: the Create of a resource of it never returns once ARM has made it (the world has it), as a PUT still
#: in flight when the CLI is killed; for tests of an interrupted `pulumi up`.
HOLD_ENV = "AZURE_STANDIN_HOLD_CREATE"
#: The same for a Delete: it never returns once ARM has deleted the resource (a DELETE still in flight when killed).
HOLD_DELETE_ENV = "AZURE_STANDIN_HOLD_DELETE"
MPE = fake_world.MPE
#: Response-only properties inside an object input that azure-native's preview reports unknown
#: (``provider/pkg/convert/previewOutputs.go``): what offline/canned.py's simplified preview keeps out.
PREVIEW_NESTED = {"azure-native:dashboard:Grafana": ("endpoint", "provisioningState", "grafanaVersion")}


def world_path() -> str:
    return os.environ["FAKE_AZ_WORLD"]


def not_found(context: grpc.ServicerContext, what: str) -> None:
    """ARM's 404 as azure-native reports a failed GET."""
    context.abort(grpc.StatusCode.NOT_FOUND,
                  f"request failed: GET {what}: StatusCode=404 -- Original Error: Code=\"ResourceNotFound\" "
                  f"Message=\"The Resource '{what}' was not found.\" (simulated Azure)")


def pls_answer(pls: dict, location: str) -> dict:
    """getPrivateLinkService of a PLS in the world, in the SDK's shape (offline/canned.py ``private_link_service``)."""
    body = fake_world.pls_body(pls)
    name = body["name"]
    group = pls["id"].split("/resourceGroups/")[1].split("/")[0]
    return {**body, "type": "Microsoft.Network/privateLinkServices", "location": location,
            "alias": f"{name}.{canned.guid(group, name)}.{location}.azure.privatelinkservice"}


def mpe_answer(mpe: dict, name: str, location: str) -> dict:
    """getManagedPrivateEndpoint of an endpoint in the world: its connection state and (once refreshed) private IP."""
    return {"id": f"{mpe['grafana']}/managedPrivateEndpoints/{name}", "name": name,
            "type": "Microsoft.Dashboard/grafana/managedPrivateEndpoints", "location": location,
            "provisioningState": "Succeeded", "privateLinkResourceId": mpe["pls"],
            "connectionState": {"status": mpe["status"], "description": mpe.get("description", "")},
            "privateLinkServicePrivateIP": mpe.get("ip", ""), "systemData": {"createdAt": mpe.get("createdAt")}}


def entra_kubeconfig(args: dict, location: str, cluster: dict) -> dict:
    """listManagedClusterUserCredentials for a cluster whose API server the world knows (``server``, ``ca``: base64
    PEM): the kubeconfig AKS returns for an Entra ID cluster (kubelogin devicecode), pointed at that server."""
    answer = canned.user_credentials(args, location)
    document = yaml.safe_load(base64.b64decode(answer["kubeconfigs"][0]["value"]))
    document["clusters"][0]["cluster"] = {"certificate-authority-data": cluster["ca"], "server": cluster["server"]}
    value = base64.b64encode(yaml.safe_dump(document, sort_keys=False).encode()).decode()
    return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}


def admin_kubeconfig(args: dict, location: str, cluster: dict) -> dict:
    """listManagedClusterAdminCredentials for such a cluster: a local account's token."""
    answer = canned.admin_credentials(args, location)
    document = yaml.safe_load(base64.b64decode(answer["kubeconfigs"][0]["value"]))
    document["clusters"][0]["cluster"] = {"certificate-authority-data": cluster["ca"], "server": cluster["server"]}
    document["users"][0]["user"] = {"token": cluster["admin_token"]}
    value = base64.b64encode(yaml.safe_dump(document, sort_keys=False).encode()).decode()
    return {"kubeconfigs": [{"name": "clusterAdmin", "value": value}]}


class AzureProvider(provider_pb2_grpc.ResourceProviderServicer):
    def __init__(self) -> None:
        self.location = "eastus2"

    # --- the plugin and its configuration ---
    def GetPluginInfo(self, request, context):
        return plugin_pb2.PluginInfo(version=VERSION)

    def CheckConfig(self, request, context):
        return provider_pb2.CheckResponse(inputs=request.news)

    def DiffConfig(self, request, context):
        return provider_pb2.DiffResponse(changes=provider_pb2.DiffResponse.DIFF_NONE)  # azure-native: never replaced

    def Configure(self, request, context):
        args = wire.reveal(wire.to_dict(request.args))
        self.location = args.get("location") or request.variables.get("azure-native:config:location") or "eastus2"
        return provider_pb2.ConfigureResponse(acceptSecrets=True, supportsPreview=True, acceptResources=True)

    def Cancel(self, request, context):
        return empty_pb2.Empty()

    # --- resources ---
    def _rule(self, urn: str, context) -> replacement.Rule:
        type_ = urn.split("::")[-2].split("$")[-1]
        rule = replacement.rule_for(type_) if type_.startswith("azure-native:") else None
        if rule is None:
            wire.abort_unknown(context, "resource type", type_, "pulumi-resource-azure-native")
        return rule

    def Check(self, request, context):
        self._rule(request.urn, context)
        return provider_pb2.CheckResponse(inputs=request.news)

    def Diff(self, request, context):
        rule = self._rule(request.urn, context)
        state, news = wire.to_dict(request.olds), wire.to_dict(request.news)
        old_inputs = wire.to_dict(request.old_inputs) if request.HasField("old_inputs") else state
        changes = wire.property_diff(old_inputs, news)
        return wire.diff_response(changes, lambda path: rule.forces(path) is not None, rule.delete_first)

    def Create(self, request, context):
        rule = self._rule(request.urn, context)
        inputs = wire.to_dict(request.properties)
        name = request.urn.rsplit("::", 1)[-1]
        if request.preview:
            preview = canned.preview_outputs(rule.type, inputs) or dict(inputs)
            for key, nested in PREVIEW_NESTED.get(rule.type, {}).items():
                if isinstance(preview.get(key), dict):
                    preview[key] = {**preview[key], **dict.fromkeys(nested, wire.UNKNOWN)}
            return provider_pb2.CreateResponse(properties=wire.to_struct(preview))
        plain = wire.reveal(inputs)
        latency.delay("resources", rule.type)  # ARM's time for the PUT, when a factor is set
        with fake_world.locked(world_path()) as world:
            error = fake_world.arm_create(world, rule.type, plain, self._grafana_id(plain))
            created = self._created_at(world, rule.type, plain)
        if error:
            context.abort(grpc.StatusCode.ALREADY_EXISTS if "already" in error else grpc.StatusCode.NOT_FOUND, error)
        if os.environ.get(HOLD_ENV) == rule.type:
            threading.Event().wait()
        rid, outputs = self._outputs(rule.type, name, plain, inputs, created)
        return provider_pb2.CreateResponse(id=rid, properties=wire.to_struct(outputs))

    def Update(self, request, context):
        rule = self._rule(request.urn, context)
        state, news = wire.to_dict(request.olds), wire.to_dict(request.news)
        names = canned.OUTPUTS.get(rule.type, ())
        if request.preview:
            return provider_pb2.UpdateResponse(properties=wire.to_struct(
                {**state, **{k: v for k, v in news.items() if k in names}}))
        plain = wire.reveal(news)
        latency.delay("resources", rule.type)
        with fake_world.locked(world_path()) as world:
            world["arm"][fake_world.arm_identity(rule.type, plain)] = plain
        created = (state.get("systemData") or {}).get("createdAt")
        _, outputs = self._outputs(rule.type, request.urn.rsplit("::", 1)[-1], plain, news, created)
        return provider_pb2.UpdateResponse(properties=wire.to_struct(outputs))

    def Delete(self, request, context):
        rule = self._rule(request.urn, context)
        inputs = wire.reveal(wire.to_dict(request.old_inputs) if request.HasField("old_inputs")
                             else wire.to_dict(request.properties))
        latency.delay("resources", rule.type)  # a DELETE takes the type's time too (docs/decisions/benchmarks.md)
        with fake_world.locked(world_path()) as world:
            fake_world.arm_delete(world, rule.type, inputs, self._grafana_id(inputs))
        if os.environ.get(HOLD_DELETE_ENV) == rule.type:
            threading.Event().wait()
        return empty_pb2.Empty()

    def Read(self, request, context):
        """A refresh (inputs known): "deleted" when the world lost it, else the world's inputs. An import (``pulumi
        import``, ``refresh --import-pending-creates``: an id alone): the resource of that ARM id, or "deleted"."""
        rule = self._rule(request.urn, context)
        inputs = wire.to_dict(request.inputs)
        with fake_world.locked(world_path()) as world:
            if inputs:
                current = world["arm"].get(fake_world.arm_identity(rule.type, wire.reveal(inputs)))
            else:
                current = next((i for k, i in world["arm"].items() if k.startswith(rule.type + " ")
                                and canned.resource_state(rule.type, "", i)[0].lower() == request.id.lower()), None)
            created = self._created_at(world, rule.type, current) if current else None
        if current is None:
            return provider_pb2.ReadResponse(id="")  # gone: the engine drops it from the state
        if inputs:
            return provider_pb2.ReadResponse(id=request.id, properties=request.properties,
                                             inputs=wire.to_struct(current))
        rid, outputs = self._outputs(rule.type, request.urn.rsplit("::", 1)[-1], current, current, created)
        return provider_pb2.ReadResponse(id=rid, properties=wire.to_struct(outputs), inputs=wire.to_struct(current))

    # --- outputs ---
    @staticmethod
    def _grafana_id(inputs: dict) -> str:
        return canned.grafana_id(inputs.get("resourceGroupName", ""), inputs.get("workspaceName", ""))

    def _created_at(self, world: dict, type_: str, inputs: dict) -> Optional[str]:
        if type_ != MPE:
            return None
        mpe = world["mpes"].get(fake_world.mpe_key(self._grafana_id(inputs), inputs["managedPrivateEndpointName"]))
        return (mpe or {}).get("createdAt")

    @staticmethod
    def _outputs(type_: str, name: str, plain: dict, wire_inputs: dict, created: Optional[str]) -> tuple[str, dict]:
        """(id, outputs): offline/canned.py's for the type, the world's creation time, an input's secretness kept."""
        rid, outputs = canned.resource_state(type_, name, plain)
        if created and isinstance(outputs.get("systemData"), dict):
            outputs["systemData"] = {**outputs["systemData"], "createdAt": created, "lastModifiedAt": created}
        return rid, {k: (wire_inputs[k] if k in wire_inputs and wire.is_secret(wire_inputs[k]) else v)
                     for k, v in outputs.items()}

    # --- invokes ---
    def Invoke(self, request, context):
        token, args = request.tok, wire.reveal(wire.to_dict(request.args))
        handler = canned.INVOKES.get(token)
        if handler is None:
            wire.abort_unknown(context, "invoke", token, "pulumi-resource-azure-native")
        latency.delay("events", "invoke")
        with fake_world.locked(world_path()) as world:
            answer = self._answer(token, args, world, context)
        if answer is None:
            answer = canned.answer(handler, args, self.location, [])
        return provider_pb2.InvokeResponse(**{"return": wire.to_struct(answer)})

    def _answer(self, token: str, args: dict, world: dict, context) -> Optional[dict[str, Any]]:
        """The world's answer to an invoke, or None where the canned one stands."""
        gone = world.get("gone") or {}
        if token.startswith("azure-native:containerservice:"):
            cid = canned.cluster_id(args["resourceGroupName"], args["resourceName"])
            if cid.lower() in gone.get("clusters", []):
                not_found(context, cid)
            cluster = (world.get("clusters") or {}).get(cid.lower())
            if cluster and token.endswith("getManagedCluster") and cluster.get("apiServerAccessProfile"):
                # A private cluster (or one with authorized ranges): ARM answers it, wherever its API server is.
                return {**canned.managed_cluster(args, self.location),
                        "apiServerAccessProfile": cluster["apiServerAccessProfile"]}
            if cluster and token.endswith("listManagedClusterUserCredentials"):
                return entra_kubeconfig(args, self.location, cluster)
            if cluster and token.endswith("listManagedClusterAdminCredentials"):
                return admin_kubeconfig(args, self.location, cluster)
            return None
        if token == "azure-native:dashboard:getGrafana":
            gid = canned.grafana_id(args["resourceGroupName"], args["workspaceName"])
            if gid.lower() in gone.get("grafana", []):
                not_found(context, gid)
            return None
        if token == "azure-native:network:getPrivateLinkService":
            pid = fake_world.pls_id(args["resourceGroupName"], args["serviceName"], canned.SUBSCRIPTION_ID)
            pls = world["pls"].get(pid.lower())
            if pls is None:
                not_found(context, pid)
            return pls_answer(pls, self.location)
        if token == "azure-native:dashboard:getManagedPrivateEndpoint":
            gid = canned.grafana_id(args["resourceGroupName"], args["workspaceName"])
            mpe = fake_world.settled(world["mpes"].get(fake_world.mpe_key(gid, args["managedPrivateEndpointName"])))
            if mpe is None:
                not_found(context, f"{gid}/managedPrivateEndpoints/{args['managedPrivateEndpointName']}")
            return mpe_answer(mpe, args["managedPrivateEndpointName"], self.location)
        return None


def main(argv: list[str]) -> None:
    wire.serve(AzureProvider(), argv)


if __name__ == "__main__":
    main(sys.argv[1:])
