"""Review 20: the fleet rollout (ops/fleet.py, deploy-stacks.yml, docs/fleet.md) against upstream.

Every test here FAILS on the code as merged (31d6d84 'fleet', 649ccb4): each docstring says what upstream says (file
and tag/commit, or the GitHub page) and what our code does. No fix is made here."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from tests.support import ROOT

from ops import fleet

from tests.test_fleet import P, URNS, classify, grafana_phase, outputs, preview, sh  # noqa: E402

WORKFLOW = ROOT / ".github" / "workflows" / "deploy-stacks.yml"


def _dev_plan():
    from offline.program import run

    return {r.urn.rsplit("::", 1)[1]: r for r in run("dev").resources}


@pytest.mark.parametrize("cause", ["release", "namespace"])
def test_a_delete_first_replacement_upstream_of_the_endpoint_is_not_run_in_the_parallel_phase(cause):
    """Upstream (pulumi/pulumi v3.230.0, commit ae2e2698, pkg/resource/deploy/step_generator.go):

    - L1888-1975, ``continueStepsFromDiff``, ``if deleteBeforeReplace {``: before a delete-first replacement of X the
      engine calls ``findResourcesReplacedWith(X)`` (L1915, L3114: every new *and old* state whose ``ReplaceWith``
      names X) and emits a ``NewDeleteReplacementStep`` for each (L1965). There is no ``isExcludedFromUpdate`` /
      ``isIncludedInOperation`` check anywhere in that loop.
    - L962 ``_, recreating := sg.deletes[urn]`` and L1364 ``if recreating {``: a resource so deleted is re-created
      (``NewReplaceStep`` + ``NewCreateReplacementStep``) when the program registers it, and that branch comes *before*
      the exclude bookkeeping (L1399) and before the ``if !isTargeted`` SameStep of case 3; for an untargeted
      resource the check is stubbed to the OLD inputs (L1186-1191), so it is re-created from the old inputs.
    - The engine's own tests cover the cascade (pkg/engine/lifecycletest/replace_with_test.go
      ``TestReplaceWithDeleteBeforeReplace``: replacing A delete-first deletes and re-creates B, whose ReplaceWith
      names A) but no test combines it with ``Excludes`` (target_test.go ``TestExcludeTarget``/``TestExcludeChildren``
      use plain updates).

    Ours: the Pyroscope release is ``delete_before_replace=True`` with ``replace_with=[namespace, identity]``
    (components/pyroscope.py), and the MPE has ``replace_with=[release]`` (components/grafana_private_link.py). A
    preview that replaces the release (or the namespace, which replaces the release) shows the MPE replaced too, so
    ``fleet.classify`` says ``grafana`` and the ``cluster`` job runs ``pulumi up --exclude <MPE, Grafana, refresh>
    --exclude-dependents`` *in parallel with every other stack*. The release is not excluded, its delete-first
    replacement deletes the MPE (ARM DELETE on Microsoft.Dashboard) and the engine re-creates it (PUT) right there:
    the very writes docs/fleet.md says must never overlap on one Grafana (409 ConflictInProcessing, not retried).
    Nothing in fleet.py routes such a stack wholly to the serialized phase (nor excludes the cause)."""
    plan = _dev_plan()
    mpe, release = plan["grafana-private-link-mpe"], plan["pyroscope-release"]
    assert release.urn in mpe.replace_with, "precondition: the MPE is replaced with the release"
    assert release.options.get("deleteBeforeReplace"), "precondition: the release is delete-before-replace"
    ops = {"release": "replace", "mpe": "replace", "wait": "replace", "approve": "replace", "refresh": "replace",
           "pyroscope": "replace"}
    digest = preview(**ops)
    if cause == "namespace":
        digest["steps"].insert(0, {"op": "replace", "urn": P.format(s="a") + (
            "aks-gpu-observability:index:GadgetNamespace$kubernetes:core/v1:Namespace::gadget-namespace")})
    kind, _ = fleet.classify_preview(digest)
    release_urn = P.format(s="a") + URNS["release"]
    phase1_runs_up = kind in ("parallel", "grafana")
    cause_kept_out_of_phase1 = any(fleet.glob_match(glob, release_urn) for glob in fleet.CONFLICTING)
    assert not phase1_runs_up or cause_kept_out_of_phase1, (
        f"class {kind!r}: phase 1 runs `pulumi up --exclude {' --exclude '.join(fleet.CONFLICTING)} "
        "--exclude-dependents` in parallel, and the release's delete-first replacement deletes and re-creates the "
        "excluded MPE anyway (step_generator.go findResourcesReplacedWith + recreating)")


def test_the_plan_job_can_download_an_earlier_attempts_records_on_a_partial_rerun():
    """Upstream: GitHub Docs, "Re-running workflows and jobs": "When you re-run failed jobs or a specific job, GitHub
    also re-runs the jobs that depend on them. Jobs that aren't included keep their outputs from the previous attempt".
    So after one ``cluster`` job fails, "Re-run failed jobs" re-runs it and ``plan``, but not the other ``cluster``
    jobs: their ``fleet-<stack>-attempt-1`` artifacts are from attempt 1. actions/download-artifact without
    ``github-token`` uses the runner's internal artifact service, which resolves downloads against the *current* run
    attempt: folo-rs/folo#423 (``actions/download-artifact@v4``, "(404) Not Found: workflow run not found" whenever a
    subset of jobs was re-run), actions/download-artifact#486 (ListArtifacts lists what GetSignedArtifactURL then
    refuses), and MeshInspector/MeshLib#6474 (the fix: pass ``github-token`` and ``run-id`` so the action uses the
    REST API, where artifacts are scoped to the run; needs ``actions: read``). Also orgs/community discussion #52505:
    with a reusable workflow called from a matrix (deploy.yml -> deploy-stacks.yml) "Re-run failed jobs" has been
    seen to re-run only the failed jobs, not their dependents.

    Ours: deploy-stacks.yml's ``plan`` job downloads ``fleet-*`` with actions/download-artifact v4.3.0, no
    ``github-token``/``run-id``, and the job has only ``contents: read``. docs/fleet.md ("Failures and re-runs") and
    tests/test_fleet.py::test_a_rerun_redoes_only_what_failed rely on that download succeeding on a re-run; the plan
    job fails instead (then ``grafana`` is skipped: ``endpoints`` empty), and docs/fleet.md's own Limits say this
    was assumed, not verified."""
    plan = yaml.safe_load(WORKFLOW.read_text())["jobs"]["plan"]
    download = [s for s in plan["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@")]
    assert download, "the plan job downloads the records"
    inputs = download[0].get("with", {})
    assert "github-token" in inputs and "run-id" in inputs, (
        "download-artifact without github-token/run-id cannot read an earlier attempt's artifacts on a partial re-run")
    assert plan.get("permissions", {}).get("actions") in ("read", "write")


def test_rerunning_the_failed_grafana_job_redoes_only_the_stacks_that_failed(tmp_path):
    """Upstream: GitHub Docs, "Re-running workflows and jobs": a re-run of failed jobs re-runs them and their
    dependents; "Jobs that aren't included keep their outputs from the previous attempt, which the newly run jobs can
    use". When every ``cluster`` job passed and only ``grafana`` failed, the re-run re-runs ``grafana`` alone, and it
    reads ``needs.plan.outputs.endpoints`` of attempt 1: no preview runs again.

    Ours: docs/fleet.md ("Failures and re-runs") says "a stack that already converged previews as **none** and is
    skipped, so only what failed is redone". In this path nothing previews: ``fleet.py endpoints`` gets attempt 1's
    whole list and runs ``pulumi up --target`` (pass 1, one stack after another, each with a re-login) and the full
    ``pulumi up`` + verify for the stacks that had already converged too, inside the same 120-minute job budget that
    docs/fleet.md's Limits already finds too small for ~35+ stacks."""
    first = {k: "create" for k in URNS}
    for stack in "abcd":
        classify(tmp_path, stack, preview(stack, **first))
    sh("plan", "--stacks", json.dumps(list("abcd")), str(tmp_path / "records"),
       env={"GITHUB_OUTPUT": str(tmp_path / "p1")})
    stale = json.loads(outputs(tmp_path / "p1")["endpoints"])
    done, calls, got, _ = grafana_phase(tmp_path, stale, fail="b:target")
    assert done.returncode == 1 and json.loads(got["ok"]) == ["a", "c", "d"]
    # "Re-run failed jobs": only `grafana` re-runs, with plan's outputs from attempt 1 (GitHub Docs above), in run
    # attempt 2 (GitHub Docs, "Variables reference": GITHUB_RUN_ATTEMPT "increments with each re-run").
    # [fix20] The re-run is now run as GitHub runs it, with GITHUB_RUN_ATTEMPT=2 (as written, the test ran both
    # calls as attempt 1, which no code can tell apart from the first run); the fix previews each listed stack on a
    # re-run, so previews of a, c, d are expected: what must not happen again is their writes and verify.
    done, calls, got, _ = grafana_phase(tmp_path, stale, attempt="2")
    writes = [c for c in calls if c["kind"] != "preview"]
    assert {c["stack"] for c in writes} == {"b"}, (
        f"the re-run redid {sorted({c['stack'] for c in writes})}, not only the failed stack b")
    assert sorted(c["stack"] for c in calls if c["kind"] == "preview") == list("abcd")
    assert done.returncode == 0 and json.loads(got["ok"]) == ["b"] and json.loads(got["skipped"]) == ["a", "c", "d"]
