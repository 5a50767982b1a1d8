"""Recover a stack whose `pulumi up` or `pulumi destroy` was killed: ``.venv/bin/python -m ops.recover --stack NAME
[--run]``.

Reads the stack's state (``pulumi stack export``) and prints, one per line, what brings it back to where the killed
command can simply run again; ``--run`` runs each line, then the user runs that command. Without ``--run`` it still
reads (``pulumi``, ``az``, ``kubectl``, ``helm status``) and leaves the files the lines name in ``/tmp/recover-*``. In
order, only what the kill left: ``rm`` of each empty ``.attrs`` companion under a ``file://`` backend ("failed to
load checkpoint: EOF"); ``pulumi cancel --yes`` (the dead run's lock; its refusal when nothing runs is ignored);
``pulumi stack import`` of the state with each Kubernetes object of a pending create that ``kubectl get`` finds
(``KUBECTL`` names another kubectl) added as the program asked for it, and with a resource taken as made where the
kill came between the halves of its replacement; ``helm uninstall`` or ``helm rollback`` of a release Helm left
``pending-install``, ``pending-upgrade`` or ``pending-rollback``; ``pulumi import --file`` of each Azure resource of a
pending create that ``az resource show --ids`` finds (azure-native refuses to create what exists; the ARM id from its
inputs); ``pulumi refresh --clear-pending-creates``.
Azure's resources are looked up in the stack's subscription (``ARM_SUBSCRIPTION_ID``, else an ARM id in the state, else
``az account show``; a ``#`` line says which); the cluster's only when kubectl's current context is the cluster of the
stack's Kubernetes provider (its kubeconfig from ``pulumi stack export --show-secrets``, never printed).
Exit status 0; 2, with one line on stderr, when the state cannot be read, the context is another cluster's, or a
command fails.
Why each line, and what ``refresh --import-pending-creates`` gets wrong: docs/decisions/kill-points.md.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence
from urllib.parse import unquote, urlsplit

import yaml

from cli import OneLineParser, exit_code
from steps.azcli import AzError, az

HELM = "kubernetes:helm.sh/v3:Release"
#: ARM ids of the azure-native types the stack creates, from their inputs (the PUT's path parameters in
#: pulumi-azure-native's metadata): the subscription is filled in from ``az account show``.
ARM_IDS = {
    "azure-native:kubernetesconfiguration:Extension":
        "/subscriptions/{sub}/resourceGroups/{resourceGroupName}/providers/{clusterRp}/{clusterResourceName}/"
        "{clusterName}/providers/Microsoft.KubernetesConfiguration/extensions/{extensionName}",
    "azure-native:dashboard:ManagedPrivateEndpoint":
        "/subscriptions/{sub}/resourceGroups/{resourceGroupName}/providers/Microsoft.Dashboard/grafana/"
        "{workspaceName}/managedPrivateEndpoints/{managedPrivateEndpointName}",
    "azure-native:authorization:RoleAssignment":
        "{scope}/providers/Microsoft.Authorization/roleAssignments/{roleAssignmentName}",
    "azure-native:dashboard:Grafana":
        "/subscriptions/{sub}/resourceGroups/{resourceGroupName}/providers/Microsoft.Dashboard/grafana/{workspaceName}",
    "azure-native:monitor:AzureMonitorWorkspace":
        "/subscriptions/{sub}/resourceGroups/{resourceGroupName}/providers/Microsoft.Monitor/accounts/"
        "{azureMonitorWorkspaceName}",
}


class RecoverError(Exception):
    """A state that cannot be read or a command that failed: the one line the tool prints."""


def _plain(value):
    """A state value without Pulumi's secret wrapper (the ids never hold a secret: names and ARM ids)."""
    if isinstance(value, dict):
        if "plaintext" in value and "4dabf18193072939515e22adb298388d" in value:
            return json.loads(value["plaintext"])
        return {k: _plain(v) for k, v in value.items()}
    return value


def import_id(resource: dict, subscription: Optional[str]) -> Optional[str]:
    """The id ``pulumi import`` takes for ``resource`` (a state resource: ``type``, ``inputs``), or None for a type
    that is not imported (commands, whose next run starts them again)."""
    type_, inputs = resource["type"], _plain(resource.get("inputs") or {})
    if type_ == HELM:
        return f"{inputs.get('namespace') or 'default'}/{inputs['name']}"
    if type_.startswith("kubernetes:"):
        metadata = inputs.get("metadata") or {}
        namespace = metadata.get("namespace")
        return f"{namespace}/{metadata['name']}" if namespace else metadata["name"]
    template = ARM_IDS.get(type_)
    if template is None:
        return None
    if subscription is None and "{sub}" in template:
        raise RecoverError(f"{resource['urn']}: the subscription is needed for its ARM id (`az account show` failed)")
    return template.format(sub=subscription, **{k: v for k, v in inputs.items() if isinstance(v, str)})


def import_file(deployment: dict, present: dict[str, str]) -> dict:
    """``pulumi import --file`` of the pending creates whose resource exists (``present``: URN -> id): each under its
    URN's name, parent, type and explicit provider, with the inputs the program gave it (so the import matches the
    program)."""
    pending = [op["resource"] for op in deployment.get("pending_operations") or [] if op["type"] == "creating"]
    names: dict[str, str] = {}
    resources = []
    for resource in pending:
        if resource["urn"] not in present:
            continue
        spec = {"type": resource["type"], "name": resource["urn"].rsplit("::", 1)[-1], "id": present[resource["urn"]],
                "inputs": _plain(resource.get("inputs") or {})}
        if resource.get("parent"):
            spec["parent"] = names.setdefault(resource["parent"], f"parent{len(names)}")
        provider = (resource.get("provider") or "").rsplit("::", 1)[0]  # "URN::id"
        if provider and not provider.rsplit("::", 1)[-1].startswith("default"):
            spec["provider"] = names.setdefault(provider, f"provider{len(names)}")  # the program's, not a default one
        resources.append(spec)
    return {"nameTable": {name: urn for urn, name in names.items()}, "resources": resources}


def replaced(deployment: dict, present: dict[str, str], adopted: Optional[dict[str, str]] = None) -> Optional[dict]:
    """``deployment`` edited where ``pulumi import`` cannot serve, or None when nothing needs it:

    - each resource the kill caught between the two halves of a delete-first replacement, taken as Azure or the
      cluster has it (``present``: URN -> id). Its entry is ``pendingReplacement`` (the old one is deleted) under the
      URN of its pending create, which finished: ``pulumi import`` cannot add a URN the state holds, and the next run
      would create it again. The entry gets the pending create's inputs and the id, and is no longer pending
      replacement;
    - each Kubernetes object of a pending create the cluster has (``adopted``: URN -> id), added as the program asked
      for it: the pending create's entry with the id, its inputs as outputs until the refresh after it reads the
      object, its pending operation dropped. ``pulumi import`` would take the live object's fields as its inputs
      (a Service's ``spec.clusterIP``, a bound claim's ``spec.volumeName``), which the program does not set: the next
      run would replace the object, and a claim with its data.
    """
    adopted = adopted or {}
    creates = {op["resource"]["urn"]: op["resource"] for op in deployment.get("pending_operations") or []
               if op["type"] == "creating" and op["resource"]["urn"] in {**present, **adopted}}
    halves = [r for r in deployment.get("resources") or [] if r.get("pendingReplacement") and r["urn"] in creates]
    if not halves and not adopted:
        return None
    edited = json.loads(json.dumps(deployment))
    ids = {**present, **adopted}
    for entry in edited["resources"]:
        if entry.get("pendingReplacement") and entry["urn"] in creates:
            entry.pop("pendingReplacement")
            entry["inputs"] = creates[entry["urn"]].get("inputs") or {}
            entry["id"] = ids[entry["urn"]]
    in_state = {entry["urn"] for entry in edited["resources"]}
    for urn in adopted:
        if urn not in in_state:
            made = json.loads(json.dumps(creates[urn]))
            made.update(custom=True, id=adopted[urn], outputs=made.get("inputs") or {})
            edited["resources"].append(made)  # nothing depends on it yet: its dependents were never created
    edited["pending_operations"] = [op for op in edited.get("pending_operations") or []
                                    if not (op["type"] == "creating" and op["resource"]["urn"] in adopted)]
    return edited


def plan(deployment: dict, stack: str, helm_status: dict[str, str], present: dict[str, str],
         file: str, state_file: str = "", read: Sequence[str] = ()) -> list[list[str]]:
    """The commands, in order, for ``deployment`` (an exported state's ``deployment``); ``present``: URN -> id of
    each pending create that exists in Azure and is imported; ``file``: where the import file goes; ``state_file``:
    the edited state :func:`replaced` made, if any; ``read``: the URNs it added or changed, which the refresh reads.
    The refresh reads nothing else (the stack's root alone when there is none): a refresh of everything would turn
    each secret input a provider answers in plain into a change the next run makes (a replacement, for the endpoint's
    request message)."""
    commands: list[list[str]] = [["pulumi", "cancel", "--yes", "--stack", stack]]
    if state_file:
        commands.append(["pulumi", "stack", "import", "--stack", stack, "--file", state_file])
    pending = deployment.get("pending_operations") or []
    for op in pending:
        resource = op["resource"]
        if resource["type"] != HELM:
            continue
        namespace, name = import_id(resource, None).split("/", 1)
        status = helm_status.get(f"{namespace}/{name}", "")
        if status == "pending-install":
            commands.append(["helm", "uninstall", name, "--namespace", namespace, "--wait"])
        elif status in ("pending-upgrade", "pending-rollback"):
            commands.append(["helm", "rollback", name, "--namespace", namespace, "--wait"])
    if present:
        commands.append(["pulumi", "import", "--yes", "--stack", stack, "--file", file, "--protect=false",
                         "--generate-code=false"])
    if any(op["type"] == "creating" for op in pending):
        roots = [r["urn"] for r in deployment.get("resources") or [] if r["type"] == "pulumi:pulumi:Stack"]
        targets = list(read) or roots[:1]
        commands.append(["pulumi", "refresh", "--yes", "--stack", stack, "--clear-pending-creates",
                         *[arg for urn in targets for arg in ("--target", urn)]])
    return commands


def in_azure(deployment: dict, subscription: Optional[str]) -> dict[str, str]:
    """URN -> ARM id of each pending create of an Azure resource that exists (``az resource show --ids``)."""
    present = {}
    for op in deployment.get("pending_operations") or []:
        resource = op["resource"]
        if op["type"] != "creating" or resource["type"] not in ARM_IDS:
            continue
        rid = import_id(resource, subscription)
        try:
            az("resource", "show", "--ids", rid, "-o", "json")
        except AzError as error:
            if "ResourceNotFound" in str(error) or "NotFound" in str(error) or "was not found" in str(error):
                continue
            raise RecoverError(f"{resource['urn']}: cannot tell whether {rid} exists: "
                               f"{str(error).strip().splitlines()[-1] if str(error).strip() else 'az failed'}")
        present[resource["urn"]] = rid
    return present


SUBSCRIPTION_IN_ID = re.compile(r"/subscriptions/([0-9a-fA-F-]{36})/")


def subscription_of(deployment: dict) -> tuple[Optional[str], str]:
    """The subscription the stack's Azure resources are in, and where it came from: ``ARM_SUBSCRIPTION_ID`` (what
    azure-native uses), else the first ARM id in the state, else ``az account show``'s default; (None, why) when none
    answers. The default is the last resort: another subscription finds nothing and the pending creates would be
    dropped, not imported."""
    if os.environ.get("ARM_SUBSCRIPTION_ID"):
        return os.environ["ARM_SUBSCRIPTION_ID"], "ARM_SUBSCRIPTION_ID"
    for resource in deployment.get("resources") or []:
        if resource.get("custom") is False:
            continue
        found = SUBSCRIPTION_IN_ID.search(str(resource.get("id") or ""))
        if found:
            return found.group(1), f"the id of {resource['urn'].rsplit('::', 1)[-1]} in the state"
    try:
        return json.loads(az("account", "show", "-o", "json"))["id"], "az account show"
    except (AzError, ValueError, KeyError):
        return None, "az account show failed"


def _server(kubeconfig: dict) -> Optional[str]:
    """The API server of a kubeconfig's current context (or of its only cluster)."""
    contexts = {c.get("name"): (c.get("context") or {}) for c in kubeconfig.get("contexts") or []}
    clusters = {c.get("name"): (c.get("cluster") or {}) for c in kubeconfig.get("clusters") or []}
    name = contexts.get(kubeconfig.get("current-context"), {}).get("cluster")
    if name is None and len(clusters) == 1:
        name = next(iter(clusters))
    return clusters.get(name, {}).get("server")


def check_cluster(stack: str, cwd: Optional[str]) -> None:
    """RecoverError unless kubectl's current context is the cluster of the stack's Kubernetes provider (its kubeconfig,
    a secret input, read with ``pulumi stack export --show-secrets`` and never printed): in a fleet every cluster has
    ``gadget/pyroscope``, and another cluster's answers would drop or uninstall the wrong thing."""
    done = _run(["pulumi", "stack", "export", "--stack", stack, "--show-secrets", "--non-interactive"], cwd)
    if done.returncode != 0:
        raise RecoverError(f"cannot read the stack's kubeconfig to check kubectl's context: "
                           f"{(done.stderr.strip().splitlines() or ['pulumi stack export failed'])[-1]}")
    wanted = set()
    for resource in (json.loads(done.stdout).get("deployment") or {}).get("resources") or []:
        kubeconfig = _plain(resource.get("inputs") or {}).get("kubeconfig")
        if resource["type"] == "pulumi:providers:kubernetes" and isinstance(kubeconfig, str):
            wanted.add(_server(yaml.safe_load(kubeconfig) or {}))
    wanted.discard(None)
    if not wanted:
        return
    view = _run([os.environ.get("KUBECTL", "kubectl"), "config", "view", "--minify", "-o", "json"], cwd)
    current = _server(json.loads(view.stdout)) if view.returncode == 0 and view.stdout.strip() else None
    if current not in wanted:
        raise RecoverError(f"kubectl's current context is {current or 'not set'}, not the stack's cluster "
                           f"({', '.join(sorted(wanted))}): run `az aks get-credentials --resource-group <group> "
                           "--name <cluster>` (then `kubelogin convert-kubeconfig -l azurecli` on an Entra ID cluster) "
                           "and run this again")


def kubectl_resource(type_: str) -> str:
    """The resource kubectl names for a Pulumi Kubernetes type: ``Namespace`` for ``kubernetes:core/v1:Namespace``,
    ``NetworkPolicy.v1.networking.k8s.io`` for ``kubernetes:networking.k8s.io/v1:NetworkPolicy``."""
    group_version, kind = type_.split(":")[1:3]
    group, version = group_version.split("/")
    return kind if group == "core" else f"{kind}.{version}.{group}"


def in_cluster(deployment: dict, cwd: Optional[str]) -> dict[str, str]:
    """URN -> id (``namespace/name``) of each pending create of a Kubernetes object the cluster has (``kubectl get``,
    kubectl's current context, as Helm's lines use): pulumi-kubernetes 4.29 and later refuse to create an existing
    object, so :func:`replaced` adds it to the state as the program asked for it."""
    present = {}
    for op in deployment.get("pending_operations") or []:
        resource = op["resource"]
        if op["type"] != "creating" or not resource["type"].startswith("kubernetes:") or resource["type"] == HELM:
            continue
        metadata = _plain(resource.get("inputs") or {}).get("metadata") or {}
        what = kubectl_resource(resource["type"])
        argv = [os.environ.get("KUBECTL", "kubectl"), "get", what, metadata.get("name", ""), "--ignore-not-found",
                "-o", "name"] + (["--namespace", metadata["namespace"]] if metadata.get("namespace") else [])
        done = _run(argv, cwd)
        if done.returncode != 0:
            raise RecoverError(f"{resource['urn']}: cannot tell whether {what} {metadata.get('name')} exists: "
                               f"{(done.stderr.strip().splitlines() or ['kubectl failed'])[-1]}")
        if done.stdout.strip():
            present[resource["urn"]] = import_id(resource, None)
    return present


def _run(argv: list[str], cwd: Optional[str], shown: bool = False) -> subprocess.CompletedProcess:
    """``argv``'s result; ``shown``: its output goes to ours as it comes (the commands ``--run`` runs)."""
    try:
        if shown:
            sys.stdout.flush()
            return subprocess.run(argv, cwd=cwd, stderr=subprocess.STDOUT)
        return subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    except FileNotFoundError:
        raise RecoverError(f"`{argv[0]}` is not installed (needed for: {shlex.join(argv)})") from None


def _helm_status(deployment: dict, cwd: Optional[str]) -> dict[str, str]:
    """``namespace/name`` -> Helm's status of each release with a pending operation (``helm status -o json``)."""
    found = {}
    for op in deployment.get("pending_operations") or []:
        if op["resource"]["type"] == HELM:
            key = import_id(op["resource"], None)
            namespace, name = key.split("/", 1)
            done = _run(["helm", "status", name, "--namespace", namespace, "-o", "json"], cwd)
            found[key] = json.loads(done.stdout)["info"]["status"] if done.returncode == 0 else "absent"
    return found


def empty_attrs(cwd: Optional[str]) -> list[Path]:
    """The empty ``.attrs`` companions under a ``file://`` backend's ``.pulumi`` folder (none for other backends)."""
    done = _run(["pulumi", "whoami", "--json", "--non-interactive"], cwd)
    try:
        url = json.loads(done.stdout)["url"] if done.returncode == 0 else ""
    except (ValueError, KeyError):
        url = ""
    if not url.startswith("file://"):
        return []
    parts = urlsplit(url)
    root = Path(unquote(parts.netloc + parts.path)).expanduser() / ".pulumi"  # file:///abs or file://~/rel
    return sorted(p for p in root.rglob("*.attrs") if p.is_file() and p.stat().st_size == 0)


def main(argv: Optional[Sequence[str]] = None, cwd: Optional[str] = None) -> int:
    parser = OneLineParser(prog=".venv/bin/python -m ops.recover", description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True, help="the stack whose run was killed")
    parser.add_argument("--run", action="store_true", help="run the commands instead of printing them")
    args = parser.parse_or_report(argv)
    if args is None:
        return 2
    try:
        for path in empty_attrs(cwd):
            print(shlex.join(["rm", str(path)]))
            if args.run:
                path.unlink()
        done = _run(["pulumi", "stack", "export", "--stack", args.stack, "--non-interactive"], cwd)
        if done.returncode != 0:
            raise RecoverError(f"`pulumi stack export --stack {args.stack}` failed: "
                               f"{(done.stderr.strip().splitlines() or ['?'])[-1]}")
        deployment = json.loads(done.stdout).get("deployment") or {}
        pending = deployment.get("pending_operations") or []
        subscription = None
        if any(op["resource"]["type"] in ARM_IDS for op in pending):
            subscription, source = subscription_of(deployment)
            print(f"# subscription {subscription} ({source})" if subscription else
                  "# subscription unknown (`az account show` failed): Azure's pending creates cannot be looked up")
        if any(op["resource"]["type"].startswith("kubernetes:") for op in pending):
            check_cluster(args.stack, cwd)
        present = in_azure(deployment, subscription)
        adopted = in_cluster(deployment, cwd)
        folder = tempfile.mkdtemp(prefix="recover-")  # kept when only printed: the commands name its files
        edited = replaced(deployment, present, adopted)
        state_file, read = "", []
        if edited is not None:
            state_file = str(Path(folder) / "state.json")
            Path(state_file).write_text(json.dumps({**json.loads(done.stdout), "deployment": edited}))
            in_state = {r["urn"] for r in edited["resources"]}
            read = [urn for urn in {**present, **adopted} if urn in in_state]
            present = {urn: rid for urn, rid in present.items() if urn not in in_state}
        file = str(Path(folder) / "imports.json")
        Path(file).write_text(json.dumps(import_file(deployment, present), indent=1))
        commands = plan(deployment, args.stack, _helm_status(deployment, cwd), present, file, state_file, read)
        for command in commands:
            print(shlex.join(command))
            if args.run:
                result = _run(command, cwd, shown=True)
                if result.returncode != 0 and command[1] != "cancel":
                    shutil.rmtree(folder, ignore_errors=True)
                    raise RecoverError(f"`{shlex.join(command[:3])}` failed (exit {result.returncode}; output above)")
        if args.run:
            shutil.rmtree(folder, ignore_errors=True)
    except RecoverError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
