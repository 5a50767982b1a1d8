"""Lifecycle harness: deploy a plan into the fake world, then apply a diff in the engine's order, and read the end
state. SIMULATED: the engine's executor and the providers; the step scripts are the real ones, run as
pulumi-command runs them (``/bin/sh -c`` in the project directory, ``environment`` on top of the process
environment, ``PULUMI_COMMAND_STDOUT``/``_STDERR`` = the state's stdout/stderr for updates and deletes when
``addPreviousOutputInEnv``), against the stand-in ``az`` answering from tests/support/fake_world.py.

Providers played here, with the rules of offline/replacement.py:

- azure-native: a resource is identified by its PUT path parameters; ``create`` of one that exists fails ("cannot
  create already existing resource"). A managed private endpoint puts a Pending connection on its PLS; deleting
  it removes the connection.
- pulumi-kubernetes Helm release: ``create`` of a release name in use fails ("cannot re-use a name that is still in
  use"). A LoadBalancer Service (the stack's ``pyroscope-private-link``, or the chart's in a plan of an older stack
  whose release values annotate it) gets a load balancer frontend in the cluster's node resource group; AKS's cloud
  provider makes the PLS named in the Service annotations for it (in the node resource group unless annotated),
  refuses to rename it on an update (the Service keeps the old PLS), and when the Service goes, or stops being a
  LoadBalancer, deletes the PLS's private endpoint connections, then the PLS (tests/support/fake_world.py
  ``ensure_service_pls``, ``delete_service_pls``).
- Claims (``world["claims"]``, name -> size and class): the release's StatefulSet makes a claim it mounts that is
  missing, from its template (kubernetes ``pkg/controller/statefulset``: an existing claim of the name is used as it
  is), and an uninstall leaves it. A PersistentVolumeClaim ``create`` of an existing claim fails ("already exists",
  pulumi-kubernetes 4.29.0+) unless its provider has ``upsertExistingObjects``; an apply that changes a field of a
  claim the controller made conflicts with ``kube-controller-manager`` unless forced (``pulumi.com/patchForce``); a
  smaller size is refused ("field can not be less than previous value", kubernetes
  ``ValidatePersistentVolumeClaimUpdate`` @ v1.34.4); a delete of a claim an installed release mounts fails after
  pulumi-kubernetes' delete wait (the ``kubernetes.io/pvc-protection`` finalizer).
- Providers, components and the stack: state only.

Degraded states (docs/teardown.md, "Tearing down what is already gone"): :meth:`Deployment.lose_cluster`,
:meth:`Deployment.lose_grafana` and :meth:`Deployment.lose_mpe` delete things behind the stack's back;
:meth:`Deployment.refresh` and :meth:`Deployment.destroy` (a destroy resumes: it deletes what is left in the state)
then play ``pulumi refresh`` and ``pulumi destroy`` as the
providers answer them:

- azure-native: ``Read`` of a resource ARM no longer has answers "deleted" (the engine drops it from the state);
  ``Delete`` of one treats ARM's 404 as done (pulumi-azure-native ``provider/pkg/provider/provider.go`` ``Read``:
  ``azure.IsNotFound`` -> empty id; ``provider/pkg/azure/client_azcore.go`` ``Delete``: "If the resource is already
  deleted, we don't want to return an error"; read at 006a62af).
- pulumi-kubernetes, cluster gone (its API server unreachable): ``Read`` answers "deleted" when the provider has
  ``deleteUnreachable`` (its input, else ``PULUMI_K8S_DELETE_UNREACHABLE``) and fails otherwise; ``Delete`` of another
  resource (the namespace) succeeds with the option and fails without it; ``Delete`` of a Helm release fails either way
  ("can't delete Helm Release with unreachable cluster"), so the release leaves the state only through a refresh
(``provider/pkg/provider/provider.go`` ``Read``/``Delete`` @ 94977969).
- pulumi-command: ``Read`` keeps the state as it is; a delete runs the step's ``delete`` (the scripts decide).

Outputs known only at ``pulumi up``: the plan carries canned ones (offline/canned.py). The MPE's
``systemData.createdAt`` is the one the approval's triggers hold, and ARM sets a new one at each creation; the harness
hands a step the world's value (:meth:`Deployment.actual_inputs`) and, after each ``up``, checks that no step whose
actual triggers changed was left alone (:meth:`Deployment.check_triggers`): the engine would have replaced it. The NAT
NetworkPolicy likewise gets the world's NAT IPs of the PLS (the cloud provider allocates them), so a diff that leaves it
alone while they change leaves it admitting the old ones (:meth:`Deployment.nat_policy_spec`).

The engine, for every delete it plays (``pulumi destroy``, a resource removed from the program, and the old resource of
a replacement, delete-first or create-first): a resource whose *recorded* state has ``retainOnDelete`` is only dropped
from the state, and its provider's Delete is not called (pulumi/pulumi v3.230.0 ``pkg/resource/deploy/step.go``
``DeleteStep.Apply``: ``else if s.old.RetainOnDelete { // no-op }``, reading the old state's option, so a program that
stops registering the resource cannot change it; ``pkg/engine/lifecycletest/retain_on_delete_test.go``
``TestRetainOnDelete``: neither the replacement nor the removal calls Delete). The state keeps each resource's
options as the plan records them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from offline import canned, engine
from offline.diff import Diff
from stack.specs import private_link_policy_spec
from tests.support import fake_world

ROOT = Path(__file__).resolve().parents[2]
OWNER_KEY = "aksGpuObservabilityOwner"
ANNOTATION = "service.beta.kubernetes.io/"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
SERVICE = "kubernetes:core/v1:Service"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
#: The field manager of a claim the StatefulSet controller made (its client's user agent): a server-side apply that
#: changes a field it owns conflicts unless forced (structured-merge-diff ``merge/update.go``).
CONTROLLER = "kube-controller-manager"
#: The policy admitting the PLS's NAT IPs (components/grafana_private_link.py ``<name>-nat-network-policy``).
NAT_POLICY_SUFFIX = "-nat-network-policy"
#: Every step's TIMEOUT_SECONDS is capped at this: the world answers at once, so a wait that would only end by timing
#: out (a PLS the cloud provider refused to rename) fails in seconds instead of the configured minutes.
STEP_TIMEOUT_CAP_SECONDS = 5


class EngineError(Exception):
    """A step failed as it would fail under ``pulumi up`` (the message says which and why)."""


class Deployment:
    """One stack's deployed state (``states``: URN -> {"type", "inputs", "stdout", "stderr"}) and its world file."""

    def __init__(self, workdir: Path, downloads: dict[str, str]) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.world_path = workdir / "world.json"
        world = fake_world.empty()
        world["downloads"] = dict(downloads)
        self._save(world)
        self.states: dict[str, dict] = {}
        self.actions: list[str] = []  # what ran, for failure messages
        self.cluster: Optional[tuple[str, str]] = None  # (cluster id, node resource group), from the plan's outputs
        self.before: dict[str, dict] = {}  # the states as the running `up` found them
        self.fresh: set[str] = set()  # URNs re-created (or --replace'd) in the running `up`: no ignoreChanges
        bin_dir = workdir / "bin"
        bin_dir.mkdir(exist_ok=True)
        wrapper = bin_dir / "az"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests" / "support" / "fake_az.py"}" "$@"\n')
        wrapper.chmod(0o755)
        self.env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(workdir), "LANG": "C.UTF-8",
                    "FAKE_AZ_WORLD": str(self.world_path), "FAKE_AZ_LOG": str(workdir / "calls.jsonl"),
                    "POLL_INITIAL_SECONDS": "0", "POLL_MAX_SECONDS": "0"}

    def copy(self, workdir: Path) -> "Deployment":
        """An independent copy (its own world file) in ``workdir``."""
        other = Deployment(workdir, {})
        shutil.copyfile(self.world_path, other.world_path)
        other.states = copy.deepcopy(self.states)
        other.cluster = self.cluster
        return other

    # --- the world file ---
    def world(self) -> dict:
        return json.loads(self.world_path.read_text())

    def _save(self, world: dict) -> None:
        self.world_path.write_text(json.dumps(world, indent=1, sort_keys=True))

    # --- running plans ---
    def deploy(self, plan: dict) -> None:
        """``pulumi up`` of ``plan`` (plan JSON) on an empty stack: every resource created in create order."""
        self.cluster = (plan["outputs"]["clusterId"], plan["outputs"]["nodeResourceGroup"])
        self.before, self.fresh = {}, set()
        by_urn = {r["urn"]: r for r in plan["resources"]}
        for urn in plan["createOrder"]:
            self._create(by_urn[urn], plan)
        self.check_triggers(plan)

    def apply(self, diff: Diff, head: dict) -> None:
        """Run ``diff.order`` (offline/diff.py) with ``head`` (plan JSON, values as known at ``up``); deletes use the
        state as it was before (the old resource's inputs, stdout and options). Raises EngineError on a failing step."""
        self.cluster = (head["outputs"]["clusterId"], head["outputs"]["nodeResourceGroup"])
        # A resource that took its old URN through an alias: the engine moves its state to the new URN.
        moved = {was: new for new, was in diff.aliases.items()}
        self.states = {moved.get(urn, urn): state for urn, state in self.states.items()}
        old = copy.deepcopy(self.states)
        self.before = old
        self.fresh = {s.urn for s in diff.steps if any(r.startswith("--replace") for r in s.reasons)}
        by_urn = {r["urn"]: r for r in head["resources"]}
        for action in diff.order:
            if action.kind in ("create", "create-replacement"):
                self._create(by_urn[action.urn], head)
            elif action.kind == "update":
                self._update(by_urn[action.urn], head)
            else:
                urn = moved.get(action.urn, action.urn)  # the engine names an aliased old state by its old URN
                self._delete(urn, old[urn])
                self.fresh.add(urn)  # re-created later in this run: Check gets the program's inputs
        for urn, state in self.states.items():  # a same step records the program's options (its new state)
            if urn in by_urn:
                state["options"] = by_urn[urn].get("options", {})
        self.check_triggers(head)

    def destroy(self, plan: dict) -> None:
        """``pulumi destroy``: every resource in the state deleted in ``plan``'s destroy order (a resource whose state
        has ``retainOnDelete`` only leaves the state: :meth:`_delete`)."""
        for urn in plan["destroyOrder"]:
            state = self.states.get(urn)
            if state is not None:
                self._delete(urn, state)

    # --- one resource ---
    def world_nat_addresses(self, plan: dict) -> Optional[list[str]]:
        """The NAT IPs of the PLS the plan's MPE names as the world has them now (sorted, as the program reads them:
        components/grafana_private_link.py ``require_nat_addresses``); None when that PLS is not there."""
        mpes = [r["inputs"] for r in plan["resources"] if r["type"] == "azure-native:dashboard:ManagedPrivateEndpoint"]
        pls = self.world()["pls"].get(str(mpes[0].get("privateLinkResourceId")).lower()) if mpes else None
        if pls is None:
            return None
        return sorted({c["address"] for c in pls.get("ip_configurations") or [] if c.get("address")})

    def actual_inputs(self, resource: dict, plan: dict) -> dict:
        """``resource``'s inputs as the engine hands them to the provider at ``pulumi up``: a step's triggers with the
        world's ``systemData.createdAt`` of the plan's MPE where the plan has the canned one, and the NAT
        NetworkPolicy's spec made from the world's NAT IPs of the PLS (module docstring); the ``ignoreChanges`` paths
        hold the value of the state before this ``up`` (``processIgnoreChanges``), but not for a resource deleted
        earlier in this ``up`` or targeted by ``--replace`` (pulumi/pulumi v3.230.0 ``step_generator.go``: Check gets
        ``goal.Properties`` when ``recreating`` or ``isTargetedReplace``)."""
        inputs = resource["inputs"]
        ignored = (resource.get("options") or {}).get("ignoreChanges") or []
        before = self.before.get(resource["urn"])
        if ignored and before is not None and resource["urn"] not in self.fresh:
            inputs = engine.process_ignore_changes(inputs, before["inputs"], ignored)
        if resource["type"] == NETWORK_POLICY and resource["name"].endswith(NAT_POLICY_SUFFIX):
            addresses = self.world_nat_addresses(plan)
            return inputs if not addresses else {**inputs, "spec": private_link_policy_spec(addresses)}
        if resource["type"] != "command:local:Command" or canned.CREATED_AT not in (inputs.get("triggers") or []):
            return inputs
        mpes = [r["inputs"] for r in plan["resources"] if r["type"] == "azure-native:dashboard:ManagedPrivateEndpoint"]
        world = self.world()
        found = [world["mpes"].get(f"{canned.grafana_id(m['resourceGroupName'], m['workspaceName'])}/"
                                   f"{m['managedPrivateEndpointName']}".lower())
                 for m in mpes]
        created = [m.get("createdAt") for m in found if m]
        if not created or not created[0]:
            return inputs
        return {**inputs, "triggers": [created[0] if t == canned.CREATED_AT else t for t in inputs["triggers"]]}

    def check_triggers(self, plan: dict) -> None:
        """After an ``up``: every step whose triggers, with the actual outputs, differ from those it ran with would have
        been replaced by the engine (pulumi-command ``triggers`` are replaceOnChanges); EngineError if the played diff
        left such a step alone."""
        for resource in plan["resources"]:
            state = self.states.get(resource["urn"])
            if resource["type"] != "command:local:Command" or state is None:
                continue
            actual = self.actual_inputs(resource, plan).get("triggers")
            if actual != state["inputs"].get("triggers"):
                raise EngineError(f"{resource['name']}: at `pulumi up` its triggers are {actual}, it ran with "
                                  f"{state['inputs'].get('triggers')}: the engine replaces it, the diff played did not")

    def _create(self, resource: dict, plan: dict) -> None:
        urn, type_ = resource["urn"], resource["type"]
        inputs = self.actual_inputs(resource, plan)
        self.actions.append(f"create {urn}")
        stdout = stderr = ""
        if type_ == "command:local:Command":
            stdout, stderr = self._run(urn, inputs["create"], inputs, None)
        elif type_ == "kubernetes:helm.sh/v3:Release":
            self._release(None, inputs, plan)
        elif type_ == SERVICE:
            self._service(None, inputs, plan)
        elif type_ == CLAIM:
            self._claim(None, inputs, self._upserts(resource, plan))
        elif type_.startswith("azure-native:"):
            self._arm_create(urn, type_, inputs)
        self.states[urn] = {"type": type_, "inputs": inputs, "stdout": stdout, "stderr": stderr,
                            "options": resource.get("options", {})}

    def _update(self, resource: dict, plan: dict) -> None:
        urn, type_ = resource["urn"], resource["type"]
        inputs = self.actual_inputs(resource, plan)
        self.actions.append(f"update {urn}")
        state = self.states[urn]
        stdout, stderr = state["stdout"], state.get("stderr", "")
        if type_ == "command:local:Command":
            # pulumi-command runs `update` when it is set, even to "" (Command.Update: news.Update != nil).
            update = inputs["update"] if inputs.get("update") is not None else inputs["create"]
            stdout, stderr = self._run(urn, update, inputs, state)
        elif type_ == "kubernetes:helm.sh/v3:Release":
            self._release(state["inputs"], inputs, plan)
        elif type_ == SERVICE:
            self._service(state["inputs"], inputs, plan)
        elif type_ == CLAIM:
            self._claim(state["inputs"], inputs, True)
        elif type_.startswith("azure-native:"):
            world = self.world()
            world["arm"][self.arm_key(type_, inputs)] = inputs
            self._save(world)
        self.states[urn] = {"type": type_, "inputs": inputs, "stdout": stdout, "stderr": stderr,
                            "options": resource.get("options", {})}

    def _delete(self, urn: str, state: dict) -> None:
        """The engine's DeleteStep for ``state`` (the old resource): retained -> only forgotten (module docstring)."""
        type_, inputs = state["type"], state["inputs"]
        if (state.get("options") or {}).get("retainOnDelete"):
            self.actions.append(f"forget {urn} (retainOnDelete)")
            if self.states.get(urn) is state or self.states.get(urn) == state:
                del self.states[urn]
            return
        self.actions.append(f"delete {urn}")
        if type_ == "kubernetes:helm.sh/v3:Release" and self.cluster_gone():
            raise EngineError(f"{urn.rsplit('::', 1)[-1]}: can't delete Helm Release with unreachable cluster "
                              "(pulumi-kubernetes Delete; run `pulumi refresh` first, with deleteUnreachable)")
        if type_.startswith("kubernetes:") and self.cluster_gone():
            if not self._delete_unreachable(state, {}):
                raise EngineError(f"{urn.rsplit('::', 1)[-1]}: configured Kubernetes cluster is unreachable. If the "
                                  "cluster was deleted, you can remove this resource from Pulumi state by rerunning "
                                  "the operation with the PULUMI_K8S_DELETE_UNREACHABLE environment variable set to "
                                  "\"true\" (pulumi-kubernetes Delete)")
            del self.states[urn]  # deleteUnreachable: dropped from the state, nothing to call
            return
        if type_ == "command:local:Command" and inputs.get("delete"):
            self._run(urn, inputs["delete"], inputs, state)
        elif type_ == "kubernetes:helm.sh/v3:Release":
            self._release(inputs, None, None)
        elif type_ == SERVICE:
            self._service(inputs, None, None)
        elif type_ == CLAIM:
            self._claim(inputs, None, False)
        elif type_ == "kubernetes:core/v1:Namespace" and self.cluster:
            # Kubernetes deletes what the namespace holds: claims left in it go too (with their disks).
            world = self.world()
            prefix = fake_world.release_key(self.cluster[0], inputs["metadata"]["name"], "")
            world["claims"] = {k: v for k, v in world.setdefault("claims", {}).items() if not k.startswith(prefix)}
            self._save(world)
        elif type_.startswith("azure-native:"):
            self._arm_delete(type_, inputs)
        if self.states.get(urn) is state or self.states.get(urn) == state:
            del self.states[urn]

    def _run(self, urn: str, command: str, inputs: dict, state: Optional[dict]) -> tuple[str, str]:
        """Run a command step as pulumi-command v1.2.1 does (``interpreter + [command]``, default ``/bin/sh -c``); its
        stdout and stderr (trailing newline trimmed)."""
        env = {**self.env, **(inputs.get("environment") or {})}
        if "TIMEOUT_SECONDS" in env:  # the stand-in answers at once: what has not happened within seconds never will
            env["TIMEOUT_SECONDS"] = str(min(int(env["TIMEOUT_SECONDS"]), STEP_TIMEOUT_CAP_SECONDS))
        if state and inputs.get("addPreviousOutputInEnv", True):
            for key, name in (("stdout", "PULUMI_COMMAND_STDOUT"), ("stderr", "PULUMI_COMMAND_STDERR")):
                if state.get(key):
                    env[name] = state[key]
        argv = [*(inputs.get("interpreter") or ["/bin/sh", "-c"]), command]
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, timeout=120)
        stdout, stderr = (b.decode(errors="replace") for b in (done.stdout, done.stderr))
        if done.returncode != 0:
            raise EngineError(f"{urn.rsplit('::', 1)[-1]}: `{command}` failed ({done.returncode}):\n{stderr}")
        # One trailing newline off each, as upstream's strings.TrimSuffix; bytes, so a \r stays.
        return stdout.removesuffix("\n"), stderr.removesuffix("\n")

    def nat_policy_spec(self) -> Optional[dict]:
        """The spec the NAT NetworkPolicy holds in the state (None: not deployed)."""
        found = [state["inputs"].get("spec") for urn, state in self.states.items()
                 if state["type"] == NETWORK_POLICY and urn.endswith(NAT_POLICY_SUFFIX)]
        return found[0] if found else None

    # --- azure-native ---
    @staticmethod
    def arm_key(type_: str, inputs: dict) -> str:
        return fake_world.arm_identity(type_, inputs)

    def _arm_create(self, urn: str, type_: str, inputs: dict) -> None:
        world = self.world()
        grafana = canned.grafana_id(inputs.get("resourceGroupName", ""), inputs.get("workspaceName", ""))
        error = fake_world.arm_create(world, type_, inputs, grafana)
        if error:
            raise EngineError(f"{urn.rsplit('::', 1)[-1] if 'already' in error else urn}: {error}")
        self._save(world)

    def _arm_delete(self, type_: str, inputs: dict) -> None:
        """azure-native Delete: ARM's 404 for a resource already gone counts as deleted (module docstring)."""
        world = self.world()
        grafana = canned.grafana_id(inputs.get("resourceGroupName", ""), inputs.get("workspaceName", ""))
        fake_world.arm_delete(world, type_, inputs, grafana)
        self._save(world)

    # --- the Helm release, its claims, and the PLS AKS makes for a LoadBalancer Service ---
    def _set_cluster(self, plan: Optional[dict]) -> tuple[str, str]:
        if plan is not None:
            self.cluster = (plan["outputs"]["clusterId"], plan["outputs"]["nodeResourceGroup"])
        return self.cluster

    def _frontend(self, world: dict, namespace: str, name: str, annotations: Optional[dict]) -> None:
        """What the cloud provider does for Service ``namespace/name``: with PLS ``annotations``, a frontend and the PLS
        they name; without (the Service gone, or no longer a LoadBalancer), its PLS deleted with its connections."""
        cluster_id, node_rg = self.cluster
        key = fake_world.release_key(cluster_id, namespace, name)
        services = world.setdefault("services", {})
        if annotations is None:
            frontend = services.pop(key, None)
            old = world.setdefault("service_annotations", {}).pop(key, {})
            if frontend:  # the PLS is looked up in the group the Service named last
                group = old.get(ANNOTATION + "azure-pls-resource-group") or node_rg
                fake_world.delete_service_pls(world, frontend, group, canned.SUBSCRIPTION_ID)
            return
        world.setdefault("service_annotations", {})[key] = annotations
        group = annotations.get(ANNOTATION + "azure-pls-resource-group") or node_rg  # getPLSResourceGroup
        frontend = services.setdefault(key, fake_world.new_frontend(cluster_id, node_rg))
        fake_world.ensure_service_pls(
            world, f"{namespace}/{name}", frontend, group,
            annotations[ANNOTATION + "azure-pls-name"], annotations[ANNOTATION + "azure-pls-visibility"].split(),
            canned.SUBSCRIPTION_ID,
            int(annotations.get(ANNOTATION + "azure-pls-ip-configuration-ip-address-count") or 1),
            canned.pls_subnet(annotations))  # with the internal-subnet fallback, as the offline plan

    @staticmethod
    def _chart_services(inputs: dict) -> dict[str, Optional[dict]]:
        """The chart's Services of a release's values that could carry PLS annotations (name -> annotations, None when
        not an annotated LoadBalancer): ``pyroscope``, or ``pyroscope-query-frontend`` with components."""
        values = inputs["values"]["pyroscope"]
        found = {inputs["name"]: values.get("service") or {}}
        if values.get("components"):
            front = values["components"].get("query-frontend", {}).get("service")
            found = {inputs["name"]: {**(values.get("service") or {}), "annotations": None},
                     f"{inputs['name']}-query-frontend": {**(values.get("service") or {}), **(front or {})}}
        return {name: (svc.get("annotations") if svc.get("type") == "LoadBalancer" and svc.get("annotations")
                       else None) for name, svc in found.items()}

    @staticmethod
    def _claims_of(inputs: dict) -> dict[str, dict]:
        """The claims a release's StatefulSet mounts, with its template (name -> size and class)."""
        from components.pyroscope import claim_names

        values = inputs["values"]["pyroscope"]
        micro = bool(values.get("components"))
        persistence = values["components"]["ingester"].get("persistence", {}) if micro else values["persistence"]
        if not persistence.get("enabled"):
            return {}
        return {name: {"size": persistence.get("size", "10Gi"), "class": persistence.get("storageClassName")}
                for name in claim_names("microservices" if micro else "single-binary")}

    def _release(self, old: Optional[dict], new: Optional[dict], plan: Optional[dict]) -> None:
        """Helm install, upgrade or uninstall of the release, what its StatefulSet does with claims, and what AKS's
        cloud provider does with a chart Service's PLS (an older plan's)."""
        cluster_id, _ = self._set_cluster(plan)
        world = self.world()
        inputs = new or old
        key = fake_world.release_key(cluster_id, inputs["namespace"], inputs["name"])
        if old is None and key in world["releases"]:
            raise EngineError(f"helm install {inputs['namespace']}/{inputs['name']}: cannot re-use a name that is "
                              "still in use")
        before = self._chart_services(old) if old else {}
        after = self._chart_services(new) if new else {}
        if new is None:
            world["releases"].pop(key, None)
        else:
            world["releases"][key] = {"version": new.get("version"), "values": new.get("values")}
            for claim, template in self._claims_of(new).items():  # existing claims are used as they are
                claim_key = fake_world.release_key(cluster_id, new["namespace"], claim)
                world.setdefault("claims", {}).setdefault(claim_key, {**template, "manager": CONTROLLER})
        for name in sorted(set(before) | set(after)):
            if after.get(name) is not None:
                self._frontend(world, inputs["namespace"], name, after[name])
            elif before.get(name) is not None:
                self._frontend(world, inputs["namespace"], name, None)
        self._save(world)

    def _service(self, old: Optional[dict], new: Optional[dict], plan: Optional[dict]) -> None:
        """Create, update or delete of a Service resource: a LoadBalancer with PLS annotations gets its PLS."""
        self._set_cluster(plan)
        world = self.world()
        metadata = (new or old)["metadata"]
        wants = (new is not None and new["spec"].get("type") == "LoadBalancer"
                 and (new["metadata"].get("annotations") or {}).get(ANNOTATION + "azure-pls-create") == "true")
        if wants or old is not None:
            self._frontend(world, metadata["namespace"], metadata["name"],
                           new["metadata"]["annotations"] if wants else None)
        self._save(world)

    @staticmethod
    def _upserts(resource: dict, plan: dict) -> bool:
        providers = [r for r in plan["resources"] if r["urn"] == resource.get("provider")]
        return bool(providers) and str(providers[0]["inputs"].get("upsertExistingObjects")).lower() == "true"

    def _claim(self, old: Optional[dict], new: Optional[dict], upsert: bool) -> None:
        """Create (``upsert``: an existing claim is applied to), update or delete of a claim (module docstring)."""
        from stack_config.rules import quantity_value

        world = self.world()
        claims = world.setdefault("claims", {})
        name, namespace = (new or old)["metadata"]["name"], (new or old)["metadata"]["namespace"]
        key = fake_world.release_key(self.cluster[0], namespace, name)
        if new is None:
            prefix = fake_world.release_key(self.cluster[0], namespace, "")
            mounted = [k for k, r in world["releases"].items()
                       if k.startswith(prefix) and name in self._claims_of({"name": k, **r})]
            if mounted:
                raise EngineError(f"{name}: the claim's delete times out while release {mounted[0]} mounts it "
                                  "(kubernetes.io/pvc-protection); the release must go first")
            claims.pop(key, None)
            self._save(world)
            return
        size, class_ = new["spec"]["resources"]["requests"]["storage"], new["spec"].get("storageClassName")
        current = claims.get(key)
        if old is None and current is not None and not upsert:
            raise EngineError(f'{name}: persistentvolumeclaims "{name}" already exists (pulumi-kubernetes Create)')
        forced = (new["metadata"].get("annotations") or {}).get("pulumi.com/patchForce") == "true"
        changed = [path for path, mine, theirs in (
            (".spec.resources.requests.storage", size, (current or {}).get("size")),
            (".spec.storageClassName", class_, (current or {}).get("class"))) if current is not None and mine != theirs]
        if current is not None and current.get("manager") == CONTROLLER and not forced:
            if changed:
                raise EngineError(f'{name}: Apply failed with 1 conflict: conflict with "{CONTROLLER}": {changed[0]} '
                                  "(server-side apply without force)")
        if current is not None:
            if current["class"] != class_:
                raise EngineError(f"{name}: spec is immutable after creation except resources.requests and "
                                  "volumeAttributesClassName for bound claims")
            if quantity_value(size) < quantity_value(current["size"]):
                raise EngineError(f'PersistentVolumeClaim "{name}" is invalid: spec.resources.requests.storage: '
                                  "Forbidden: field can not be less than previous value")
        # The same claim: its disk and data. A forced apply that changes a field takes it over from the controller;
        # one of the same values shares it (the controller still owns it: a later unforced change conflicts).
        claims[key] = {**(current or {}), "size": size, "class": class_,
                       "manager": "pulumi" if not current or (forced and changed) else current.get("manager", "pulumi")}
        self._save(world)

    # --- things deleted behind the stack's back, and the teardown that follows ---
    def cluster_gone(self) -> bool:
        return bool(self.world().get("gone", {}).get("clusters"))

    def _lose_arm(self, world: dict, type_: str, keep=lambda inputs: False) -> None:
        world["arm"] = {k: v for k, v in world["arm"].items() if not k.startswith(type_ + " ") or keep(v)}

    def lose_cluster(self, resource_group: str, name: str) -> None:
        """The AKS cluster is deleted: its extension, the Helm release and its node resource group go with it, and the
        PLS if it lives there (a PLS in ``privateLinkServiceResourceGroup`` stays, orphaned: tests/support/fake_world.py
        ``delete_cluster``)."""
        world = self.world()
        cluster_id = canned.cluster_id(resource_group, name)
        fake_world.delete_cluster(world, cluster_id, (self.cluster or (cluster_id,
                                                                       f"MC_{resource_group}_{name}_eastus2"))[1])
        self._lose_arm(world, "azure-native:kubernetesconfiguration:Extension")
        self._save(world)

    def lose_grafana(self, resource_group: str, name: str, host: str) -> None:
        """The Grafana workspace is deleted: its managed private endpoints and its content go with it."""
        world = self.world()
        fake_world.delete_grafana(world, canned.grafana_id(resource_group, name), host)
        self._lose_arm(world, "azure-native:dashboard:ManagedPrivateEndpoint",
                       keep=lambda i: i["workspaceName"] != name)
        self._save(world)

    def lose_mpe(self, resource_group: str, grafana_name: str, name: str) -> None:
        """The managed private endpoint is deleted by hand (with its connection on the PLS)."""
        world = self.world()
        fake_world.delete_mpe(world, canned.grafana_id(resource_group, grafana_name), name)
        self._lose_arm(world, "azure-native:dashboard:ManagedPrivateEndpoint",
                       keep=lambda i: i["managedPrivateEndpointName"] != name)
        self._save(world)

    def refresh(self, environ: Optional[dict] = None) -> list[str]:
        """``pulumi refresh``: drop from the state what the providers' Read answers "deleted" for (module docstring);
        ``environ``: the CLI's environment (``PULUMI_K8S_DELETE_UNREACHABLE``). Returns the URNs dropped; raises
        EngineError as pulumi-kubernetes fails a Read on an unreachable cluster without deleteUnreachable."""
        world, dropped = self.world(), []
        for urn, state in list(self.states.items()):
            type_ = state["type"]
            if type_.startswith("kubernetes:") and self.cluster_gone():
                if not self._delete_unreachable(state, environ or {}):
                    raise EngineError(f"{urn.rsplit('::', 1)[-1]}: failed to read resource state due to unreachable "
                                      "cluster. If the cluster was deleted, you can remove this resource from Pulumi "
                                      "state by rerunning the operation with the PULUMI_K8S_DELETE_UNREACHABLE "
                                      "environment variable set to \"true\" (pulumi-kubernetes Read)")
                dropped.append(urn)
            elif (type_.startswith("azure-native:") and state["inputs"]
                  and self.arm_key(type_, state["inputs"]) not in world["arm"]):
                dropped.append(urn)
        for urn in dropped:
            del self.states[urn]
        return dropped

    def _delete_unreachable(self, state: dict, environ: dict) -> bool:
        provider = next((s for s in self.states.values() if s["type"] == "pulumi:providers:kubernetes"), {"inputs": {}})
        option = provider["inputs"].get("deleteUnreachable")
        return str(option if option is not None else environ.get("PULUMI_K8S_DELETE_UNREACHABLE")) == "true"

    # --- reading the end state ---
    def snapshot(self) -> dict:
        """The world without what differs between equal deployments (connection guids, owner ids, ids,
        versions, approval texts): what two runs that should end the same must agree on."""
        world = self.world()
        datasources = {host: {uid: _without_owner(ds, ("id", "version", "orgId")) for uid,
                              ds in g["datasources"].items()}
                       for host, g in world["grafana"].items() if g["datasources"]}
        dashboards = {host: {uid: _digest(_without_owner(d, ("id", "version"))) for uid, d in g["dashboards"].items()}
                      for host, g in world["grafana"].items() if g["dashboards"]}
        return {
            "pls": {k: {"visibility": p["visibility"], "tags": p.get("tags"),
                        "connections": sorted((c["endpoint"].rsplit("/", 1)[1], c["status"]) for c in p["connections"])}
                    for k, p in world["pls"].items()},
            "mpes": world["mpes"], "arm": sorted(world["arm"]), "releases": world["releases"],
            "datasources": datasources, "dashboards": dashboards,
        }


def _without_owner(value: dict, volatile: tuple) -> dict:
    cleaned = {k: v for k, v in value.items() if k not in volatile and k != OWNER_KEY}
    if isinstance(cleaned.get("jsonData"), dict):
        cleaned["jsonData"] = {k: v for k, v in cleaned["jsonData"].items() if k != OWNER_KEY}
    return cleaned


def _digest(value: dict) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


#: The dashboard the stack uploads by default (the pinned Inspektor Gadget GPU dashboard).
DASHBOARD_URL = ("https://raw.githubusercontent.com/inspektor-gadget/grafana-dashboards/"
                 "494542d8a0439fe4b1a60577e70677cec5c96070/dashboards/gpu-observability/AdvancedGPUObservability.json")


def uploaded(source: dict, datasources: dict, profile_type: str) -> dict:
    """The dashboard as steps/grafana_dashboard.py uploads ``source`` (its own transformations: the datasource
    defaults, and ``profile_type`` in its Pyroscope GPU-memory queries)."""
    from steps import grafana_dashboard
    dashboard = grafana_dashboard.with_datasource_defaults(source, datasources)
    return grafana_dashboard.with_profile_type(dashboard, profile_type,
                                               grafana_dashboard.stack_pyroscope(dashboard, datasources))


def comparable(dashboard: dict) -> dict:
    return {k: v for k, v in dashboard.items() if k not in ("id", "version", OWNER_KEY)}
