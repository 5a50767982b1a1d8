""".ci/plan_diff.sh, run as pr.yml's step on two commits of a throwaway repository, and the comment pr.yml's
github-script step would post."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

from tests.support import ROOT
from tests.support.workflows import (
    load,
    steps,
    uses,
)

GIT = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.test", "-c", "commit.gpgsign=false"]


def throwaway_repository(path):
    """A git repository holding this checkout's files (tracked and new, not ignored), committed once."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                            check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source, target = ROOT / name, path / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=path, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True,
                          check=True).stdout.strip()


def run_diff_step(repo, base_sha):
    """The workflow's own step (its run line and env, from pr.yml) with the base sha GitHub would give it."""
    offline = load("pr.yml")["jobs"]["offline"]
    step = next(s for s in steps(offline) if s.get("name") == "Offline preview diff against the base")
    env = {"PATH": os.environ["PATH"], "HOME": str(repo), "LANG": "C.UTF-8", "STACK": offline["env"]["STACK"],
           "PYTHON": sys.executable,
           **{k: v.replace("${{ github.event.pull_request.base.sha }}", base_sha) for k, v in step["env"].items()}}
    return subprocess.run(["bash", "-c", step["run"]], cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def comment_body(repo):
    """The comment the workflow's github-script step would post, run in Node.js with stand-ins for the GitHub
    API (its script body, as in pr.yml); None when Node.js is not installed."""
    node = shutil.which("node")
    if node is None:
        return None
    script = uses(load("pr.yml")["jobs"]["comment"], "actions/github-script")["with"]["script"]
    harness = (
        "const posted = [];\n"
        "const github = { paginate: async () => [], rest: { issues: { listComments: null,"
        " createComment: async (a) => posted.push(a.body), updateComment: async (a) => posted.push(a.body) } } };\n"
        "const context = { repo: { owner: 'o', repo: 'r' }, issue: { number: 1 } };\n"
        f"(async () => {{\n{script}\n}})().then(() => process.stdout.write(posted[0]));\n")
    (repo / "comment.js").write_text(harness)
    done = subprocess.run([node, "comment.js"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_plan_diff_comments_the_change_between_two_commits(tmp_path):
    repo = tmp_path / "repo"
    base = throwaway_repository(repo)
    stack = repo / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("config:\n",
                                               "config:\n  aks-gpu-observability:managedPrivateEndpointName: "
                                               "pyro-mpe2\n", 1))
    subprocess.run([*GIT, "commit", "-qam", "head: rename the managed private endpoint"], cwd=repo, check=True)
    (repo / "plan.txt").write_text("the offline plan and policy report\n")
    done = run_diff_step(repo, base)
    assert done.returncode == 0, done.stderr
    comment = (repo / "plan-diff" / "comment.md").read_text()
    assert comment.startswith(f"### Offline preview diff (`dev`): base `{base[:12]}` -> head ")
    assert "**Resources: + 0 to create, ~ 2 to update, +-3 to replace, - 0 to delete, " in comment
    assert "grafana-private-link-approval-nonce  update" in comment  # a renamed endpoint, a nonce of its own
    assert "OFFLINE ESTIMATE" in comment and "not the cloud's answer" in comment
    assert comment.index("Replacements:") < comment.index("Updates:") < comment.index("Engine order (pulumi up):")
    assert "grafana-private-link-mpe  replace (delete-first)" in comment
    assert '~ managedPrivateEndpointName: "pyroscope-mpe" => "pyro-mpe2"' in comment
    graph = comment.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert graph.startswith("graph TD") and "+- grafana-private-link-mpe (delete-first)" in graph
    assert re.search(r"^ +class r\d+ replace$", graph, re.M)
    diff = json.loads((repo / "plan-diff" / "diff.json").read_text())
    assert diff["summary"]["replace"] == 3
    listed = subprocess.run(["git", "worktree", "list"], cwd=repo, capture_output=True, text=True).stdout
    assert len(listed.splitlines()) == 1, "the base's worktree is removed"
    body = comment_body(repo)
    if body is not None:
        assert body.startswith("<!-- aks-gpu-observability-plan -->\n" + comment)
        assert "the offline plan and policy report" in body and len(body) <= 65536


def test_plan_diff_without_a_base_plan_shows_the_head_graph(tmp_path):
    repo = tmp_path / "repo"
    throwaway_repository(repo)
    (repo / "Pulumi.dev.yaml").rename(repo / "Pulumi.dev.yaml.kept")
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "a base without the dev stack"], cwd=repo, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "Pulumi.dev.yaml.kept").rename(repo / "Pulumi.dev.yaml")
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "head adds it"], cwd=repo, check=True)
    done = run_diff_step(repo, base)
    assert done.returncode == 0, done.stderr
    comment = (repo / "plan-diff" / "comment.md").read_text()
    assert f"The base {base[:12]} has no offline plan (error: stack: no stack file Pulumi.dev.yaml" in comment
    assert "```mermaid\ngraph TD" in comment and "Replacements:" not in comment
    bad = run_diff_step(repo, "0" * 40)
    assert bad.returncode == 1 and "is not a commit in this clone" in bad.stderr
