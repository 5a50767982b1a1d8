"""The version facts ``python -m ops.verify`` prints for a support ticket (ops/versions.py), against the stand-in az
(SIMULATED: ARM and Grafana answers), a stand-in ``pulumi`` (outputs and a state shaped as the real CLI v3.277.0
exports one) and a stand-in ``kubectl`` (the Pyroscope pods)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.support import ROOT
from tests.support.scenarios import calls_in, fake_az_env
from tests.support.verify_runs import GRAFANA, OUTPUTS, rules

SIG = "4dabf18193072939515e22adb298388d"  # how a state file marks a secret
DIGEST = "sha256:" + "ab" * 32
CIPHERTEXT = "v1:c2VjcmV0LWNpcGhlcnRleHQ="


def provider(package: str, name: str, version: str, **inputs) -> dict:
    """A provider resource as the engine stores it: the plugin version under inputs.version."""
    return {"urn": f"urn:pulumi:dev::aks-gpu-observability::pulumi:providers:{package}::{name}", "custom": True,
            "id": "2bc6a915-68d8-4a29-8e47-1f30c36eedfa", "type": f"pulumi:providers:{package}",
            "inputs": {"__internal": {}, **inputs, "version": version}, "outputs": {**inputs, "version": version}}


def release(values: object) -> dict:
    return {"urn": "urn:pulumi:dev::aks-gpu-observability::aks-gpu-observability:index:Pyroscope$"
                   "kubernetes:helm.sh/v3:Release::pyroscope-release",
            "custom": True, "id": "gadget/pyroscope", "type": "kubernetes:helm.sh/v3:Release",
            "inputs": {"chart": "oci://ghcr.io/grafana/helm-charts/pyroscope", "version": "1.15.0", "values": values},
            "outputs": {"chart": "oci://ghcr.io/grafana/helm-charts/pyroscope", "version": "1.15.0", "values": values,
                        "status": {"appVersion": "1.14.1", "chart": "pyroscope", "name": "pyroscope",
                                   "namespace": "gadget", "revision": 1, "status": "deployed", "version": "1.15.0"}}}


IMAGE_VALUES = {"pyroscope": {"image": {"repository": "grafana/pyroscope", "tag": "1.15.0"}}}


def state(values: object = IMAGE_VALUES, cli: str = "v3.277.0") -> dict:
    """``pulumi stack export`` of a deployed dev stack: the CLI of its last update, its providers (a secret
    kubeconfig on the explicit ones), the Pyroscope release."""
    secret = {SIG: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": CIPHERTEXT}
    return {"version": 3, "deployment": {
        "manifest": {"time": "2026-12-06T19:25:11.466354834Z", "magic": "6b02600a", "version": cli},
        "secrets_providers": {"type": "passphrase", "state": {"salt": "v1:ft8YOCehYEY="}},
        "resources": [
            {"urn": "urn:pulumi:dev::aks-gpu-observability::pulumi:pulumi:Stack::aks-gpu-observability-dev",
             "custom": False, "type": "pulumi:pulumi:Stack", "outputs": {}},
            provider("azure-native", "default_3_29_0", "3.29.0"),
            provider("kubernetes", "aks", "4.34.2", kubeconfig=secret),
            provider("kubernetes", "aks-claims", "4.34.2", kubeconfig=secret, upsertExistingObjects="true"),
            provider("command", "default_1_2_1", "1.2.1"),
            release(values)]}}


EXTENSION = {"json": {"id": OUTPUTS["extensionId"], "properties": {
    "provisioningState": "Succeeded", "extensionType": "microsoft.inspektorgadget", "autoUpgradeMinorVersion": True,
    "releaseTrain": "preview", "currentVersion": "0.46.0"}}}

PODS = {"items": [{
    "metadata": {"name": "pyroscope-0", "labels": {"app.kubernetes.io/name": "pyroscope",
                                                   "app.kubernetes.io/component": "all"}},
    "spec": {"containers": [{"name": "pyroscope", "image": "grafana/pyroscope:1.15.0", "args": ["-target=all"]}]},
    "status": {"containerStatuses": [{"name": "pyroscope", "image": "docker.io/grafana/pyroscope:1.15.0",
                                      "imageID": f"docker.io/grafana/pyroscope@{DIGEST}"}]}}]}


def health(version: str = "12.4.4") -> dict:
    """GET /api/health as Grafana answers it; without ``version`` as a Grafana that hides it."""
    body = {"database": "ok", **({"version": version, "commit": "f3ab2c1"} if version else {})}
    return {"match": ["rest", "--method", "get", f"{GRAFANA}/api/health"], "responses": [{"json": body}]}


def run_verify(tmp_path, az_rules, *extra, exported=None, pods=PODS, outputs=OUTPUTS, show_secrets=None):
    """ops.verify with the stand-ins: ``pulumi stack output`` prints ``outputs`` (masked ``show_secrets`` without
    --show-secrets), ``pulumi stack export`` prints ``exported`` (fails when None); kubectl lists ``pods`` (fails when
    None) and serves empty metrics. Returns the process, the az calls and the pulumi command lines."""
    env = fake_az_env(tmp_path, az_rules)
    (tmp_path / "shown.json").write_text(json.dumps(outputs))
    (tmp_path / "masked.json").write_text(json.dumps(show_secrets or outputs))
    (tmp_path / "exported.json").write_text(json.dumps(exported))  # state.json is the stand-in az's counters
    pulumi = tmp_path / "bin" / "pulumi"
    pulumi.write_text(f"""#!/bin/sh
echo "$*" >> {tmp_path}/pulumi-calls.txt
case "$*" in
  "stack output --json --show-secrets --stack dev") cat {tmp_path}/shown.json ;;
  "stack output --json --stack dev") cat {tmp_path}/masked.json ;;
  "stack export --stack dev") {"cat " + str(tmp_path / "exported.json") if exported is not None else
                               "echo 'error: no stack named dev found' >&2; exit 255"} ;;
  *) exit 9 ;;
esac
""")
    pulumi.chmod(0o755)
    kubectl = tmp_path / "bin" / "kubectl"
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    kubectl.write_text(f"""#!/bin/sh
echo "$*" >> {tmp_path}/kubectl-calls.txt
case "$*" in
  *" get pods "*) {"cat " + str(tmp_path / "pods.json") if pods is not None else
                   "echo 'error: You must be logged in to the server (Unauthorized)' >&2; exit 1"} ;;
  *"get --raw"*) echo "" ;;
  *) exit 1 ;;
esac
""")
    kubectl.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "ops.verify", "--stack", "dev", *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    asked = (tmp_path / "pulumi-calls.txt").read_text().splitlines() if (tmp_path / "pulumi-calls.txt").exists() else []
    return done, calls_in(tmp_path), asked


def versions_block(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = lines.index("  Versions, to quote in a support ticket:")
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        block.append(line.strip())
    return block


def test_the_checklist_says_which_versions_the_stack_runs_with(tmp_path):
    """A support ticket needs the versions that ran: the CLI of the stack's last update and the provider plugins the
    engine loaded (the state), the extension version Azure installed and its release train (ARM), the chart Helm
    installed (the state) and the image the pods run (the cluster), and Grafana's version (its /api/health)."""
    done, calls, asked = run_verify(tmp_path, [health(), *rules(ext=EXTENSION)], exported=state())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "9 passed, 0 failed"
    sdk = re.search(r"^pulumi==([\d.]+)", (ROOT / "requirements.lock").read_text(), re.M).group(1)
    assert versions_block(done.stdout) == [
        "Pulumi CLI: v3.277.0 (the stack's last update, pulumi stack export)",
        f"pulumi SDK: {sdk} (this project's .venv, which Pulumi.yaml runs the program with; the state does not "
        "record it)",
        "provider plugins: azure-native 3.29.0, command 1.2.1, kubernetes 4.34.2 (the state's providers)",
        "Inspektor Gadget extension: 0.46.0, release train preview, minor versions auto-upgraded (ARM: installed)",
        "Pyroscope chart: pyroscope 1.15.0, app version 1.14.1, from oci://ghcr.io/grafana/helm-charts/pyroscope "
        "(the state's Helm release)",
        f"Pyroscope image: docker.io/grafana/pyroscope:1.15.0, {DIGEST} (running in pyroscope-0)",
        "Grafana: 12.4.4 (GET /api/health)",
    ]
    assert "stack export --stack dev" in asked
    # One read of the extension and one pod listing serve both the checks and the versions.
    extension_reads = [c for c in calls if any("/extensions/inspektor-gadget" in a for a in c["argv"])]
    assert len(extension_reads) == 1
    listed = (tmp_path / "kubectl-calls.txt").read_text().splitlines()
    assert sum(" get pods " in f" {line} " for line in listed) == 1


def test_versions_alone_as_json_make_no_check(tmp_path):
    """``--versions`` prints only the facts (``--json``: an object by name), reading nothing a check needs beyond
    them: no datasource, dashboard or Prometheus query; exit 0 even when a fact is unknown."""
    done, calls, _ = run_verify(tmp_path, [health(), *rules(ext=EXTENSION)], "--versions", "--json", exported=state())
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert document["stack"] == "dev"
    facts = {fact["name"]: fact for fact in document["versions"]}
    assert facts["Pulumi CLI"] == {"name": "Pulumi CLI", "value": "v3.277.0",
                                   "source": "the stack's last update, pulumi stack export"}
    assert facts["provider plugins"]["value"] == "azure-native 3.29.0, command 1.2.1, kubernetes 4.34.2"
    assert facts["Inspektor Gadget extension"]["value"] == (
        "0.46.0, release train preview, minor versions auto-upgraded")
    assert facts["Grafana"]["value"] == "12.4.4"
    urls = [c["argv"][c["argv"].index("--url") + 1] for c in calls if "--url" in c["argv"]]
    assert sorted(urls) == sorted([f"{OUTPUTS['extensionId']}?api-version=2023-05-01", f"{GRAFANA}/api/health"])


def test_a_fact_that_cannot_be_read_says_why_and_falls_back_to_what_the_stack_set(tmp_path):
    """Saved outputs (no state read), an extension ARM no longer has, a Grafana that hides its version, a cluster
    kubectl cannot read: each fact says why it is unknown; the image falls back to the release's values."""
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(OUTPUTS))
    gone = {"exit": 3, "stderr": "ERROR: (ResourceNotFound) The Resource was not found."}
    done, _, asked = run_verify(tmp_path, [health(""), *rules(ext=gone)], "--versions", "--outputs-file", str(path),
                                exported=state(), pods=None)
    assert done.returncode == 0, done.stdout + done.stderr
    block = versions_block(done.stdout)
    assert block[0] == ("Pulumi CLI: unknown (--outputs-file: the state is not read; without it verify reads "
                        "`pulumi stack export`)")
    assert block[2].startswith("provider plugins: unknown (--outputs-file")
    assert block[3] == "Inspektor Gadget extension: unknown (ERROR: (ResourceNotFound) The Resource was not found.)"
    assert block[4].startswith("Pyroscope chart: unknown (--outputs-file")
    assert block[5] == ("Pyroscope image: unknown (kubectl failed: error: You must be logged in to the server "
                        "(Unauthorized); verify reads the context named --kube-context)")
    assert block[6] == "Grafana: unknown (its /api/health hides the version)"
    assert asked == []  # the outputs came from the file: pulumi is not asked


def test_without_the_pods_the_image_is_the_one_the_release_set(tmp_path):
    """The pods cannot be read: the image is the one the stack's Helm release set, said to be set, not seen."""
    done, _, _ = run_verify(tmp_path, [health(), *rules(ext=EXTENSION)], "--versions", exported=state(), pods=None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert versions_block(done.stdout)[5] == (
        "Pyroscope image: grafana/pyroscope:1.15.0 (the state's Helm release values; not seen running: kubectl "
        "failed: error: You must be logged in to the server (Unauthorized); verify reads the context named "
        "--kube-context)")


def test_a_state_the_cli_cannot_export_leaves_the_others(tmp_path):
    done, _, _ = run_verify(tmp_path, [health(), *rules(ext=EXTENSION)], "--versions", exported=None)
    assert done.returncode == 0, done.stdout + done.stderr
    block = versions_block(done.stdout)
    assert block[0] == "Pulumi CLI: unknown (pulumi stack export --stack dev failed: error: no stack named dev found)"
    assert block[3].startswith("Inspektor Gadget extension: 0.46.0")


def test_secrets_in_the_state_and_outputs_are_never_printed(tmp_path):
    """The release's values secret in the state (a secret config value in them) is said to be secret, its ciphertext
    never printed; a secret output's plaintext (a cluster name set with --secret) is masked in the facts too."""
    secret_values = {SIG: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": CIPHERTEXT}
    masked = {key: "[secret]" if key == "clusterName" else value for key, value in OUTPUTS.items()}
    for extra in ([], ["--json"]):
        done, _, asked = run_verify(tmp_path, [health(), *rules(ext=EXTENSION)], "--versions", *extra,
                                    exported=state(values=secret_values), pods=None, show_secrets=masked)
        assert done.returncode == 0, done.stdout + done.stderr
        assert CIPHERTEXT not in done.stdout and "ciphertext" not in done.stdout
        image = (next(line.strip() for line in done.stdout.splitlines() if "Pyroscope image:" in line) if not extra
                 else next(f"Pyroscope image: {f['value'] or 'unknown'} ({f['source']})"
                           for f in json.loads(done.stdout)["versions"] if f["name"] == "Pyroscope image"))
        assert image.startswith("Pyroscope image: unknown (kubectl failed: ")
        assert image.endswith("; the state's Helm release values are secret)")
        assert OUTPUTS["clusterName"] not in done.stdout and OUTPUTS["clusterName"] not in done.stderr
    assert asked[:2] == ["stack output --json --stack dev", "stack output --json --show-secrets --stack dev"]


def test_drift_and_versions_together_are_refused_in_one_line(tmp_path):
    done, calls, asked = run_verify(tmp_path, rules(), "--drift", "--versions", exported=state())
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "error: --drift and --versions: expected one of them\n"
    assert calls == [] and asked == []
