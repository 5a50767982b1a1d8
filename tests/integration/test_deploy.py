"""Opt-in end-to-end test on a real subscription: up -> verify -> re-run preview (no changes) -> destroy
(nothing left). Uses Pulumi's Automation API and the Pulumi CLI.

Runs only when ARM_SUBSCRIPTION_ID is set and AKS_GPU_OBS_INTEGRATION=1; otherwise it is skipped, saying
which is missing. Stack config comes from AKS_GPU_OBS_CONFIG (JSON object of config keys, e.g.
{"clusterName": "...", ...}) on a stack named AKS_GPU_OBS_STACK (default "integration"), in whatever
backend `pulumi login` points at. It creates and deletes real Azure resources and costs money.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.support import ROOT

MARKER = "AKS_GPU_OBS_INTEGRATION"


def _why_skipped() -> str:
    missing = [name for name in ("ARM_SUBSCRIPTION_ID",) if not os.environ.get(name)]
    if os.environ.get(MARKER) != "1":
        missing.append(f"{MARKER}=1")
    if not shutil.which("pulumi"):
        missing.append("the Pulumi CLI on PATH")
    return ("integration test needs " + ", ".join(missing)) if missing else ""


pytestmark = pytest.mark.skipif(bool(_why_skipped()), reason=_why_skipped() or "ready")


def test_up_verify_rerun_destroy(tmp_path):
    from pulumi import automation as auto

    stack = auto.create_or_select_stack(stack_name=os.environ.get("AKS_GPU_OBS_STACK", "integration"),
                                        work_dir=str(ROOT))
    for key, value in json.loads(os.environ.get("AKS_GPU_OBS_CONFIG", "{}")).items():
        stack.set_config(key, auto.ConfigValue(value=str(value)))
    try:
        up = stack.up(on_output=print, policy_packs=[str(ROOT / "policy")])
        outputs = tmp_path / "outputs.json"
        outputs.write_text(json.dumps({k: v.value for k, v in up.outputs.items()}))
        verify = subprocess.run([sys.executable, "-m", "ops.verify", "--stack", stack.name, "--outputs-file",
                                 str(outputs)],
                                cwd=ROOT, capture_output=True, text=True)
        print(verify.stdout)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        rerun = stack.preview(on_output=print)
        changes = {op: n for op, n in rerun.change_summary.items() if getattr(op, "value", op) != "same" and n}
        assert changes == {}, f"a re-run would change {changes}"
    finally:
        stack.destroy(on_output=print)
    left = [r for r in stack.export_stack().deployment.get("resources", []) if r.get("type") != "pulumi:pulumi:Stack"]
    assert left == [], f"destroy left {[r['urn'] for r in left]}"
