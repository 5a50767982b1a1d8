#!/usr/bin/env bash
# CI: the offline preview diff of a pull request, for its comment. No credentials, no network: both plans are
# `python -m offline.plan` (mocked engine, canned Azure answers), an estimate from the engine's and providers' rules.
#
# Usage: .ci/plan_diff.sh BASE_REF [OUT_DIR]      (run from the head's checkout, the repository root)
#   BASE_REF  the commit the pull request goes into (github.event.pull_request.base.sha); it must be in the
#             clone (actions/checkout with fetch-depth: 0)
#   OUT_DIR   where the results go (default: plan-diff)
# Environment: STACK (default dev); PYTHON (default .venv/bin/python: the head's environment runs both plans).
# Writes to OUT_DIR: base.json (the base's plan; a `git worktree` of BASE_REF evaluates it), diff.txt and
#   diff.json (offline.plan --diff-against), graph.mmd (the head's Mermaid graph, changed nodes marked),
#   comment.md (the comment body: summary, replacements first with their order and reasons, field diffs, the
#   engine's order, the graph).
# Exit status: 0, also when the base has no plan (the comment then says why and shows the head's graph alone);
#   1 when the head's plan fails (its one-line error is in comment.md too).
set -euo pipefail
STEP=plan-diff
# shellcheck source=steps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../steps/lib.sh"

if [ $# -lt 1 ] || [ -z "$1" ]; then
  die "usage: .ci/plan_diff.sh BASE_REF [OUT_DIR]"
fi
base_ref=$1
out=${2:-plan-diff}
stack=${STACK:-dev}
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || die "PYTHON: ${python} is not an executable python; create the venv (README, the first command) or set PYTHON"
python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python")
mkdir -p "$out"
base_sha=$(git rev-parse --verify --quiet "${base_ref}^{commit}") ||
  die "BASE_REF: ${base_ref} is not a commit in this clone; check out with fetch-depth: 0"

worktree=$(mktemp -d)
cleanup() {
  git worktree remove --force "$worktree" >/dev/null 2>&1 || true
  rm -rf "$worktree" "$ERRFILE"
  git worktree prune
}
trap cleanup EXIT

plan() { "$python" -m offline.plan --stack "$stack" "$@"; }

base_note=""
git worktree add --detach --quiet "$worktree" "$base_sha"
if (cd "$worktree" && "$python" -m offline.plan --stack "$stack" --json) >"$out/base.json" 2>"$ERRFILE"; then
  log "planned the base ${base_sha:0:12}"
else
  base_note="The base ${base_sha:0:12} has no offline plan ($(last_error "$ERRFILE")); the head's graph alone follows."
  log "$base_note"
  rm -f "$out/base.json"
fi

head_failed=""
if [ -f "$out/base.json" ]; then
  plan --diff-against "$out/base.json" >"$out/diff.txt" 2>"$ERRFILE" &&
    plan --diff-against "$out/base.json" --json >"$out/diff.json" 2>>"$ERRFILE" &&
    plan --diff-against "$out/base.json" --graph mermaid >"$out/graph.mmd" 2>>"$ERRFILE" || head_failed=$(last_error "$ERRFILE")
else
  plan --graph mermaid >"$out/graph.mmd" 2>"$ERRFILE" || head_failed=$(last_error "$ERRFILE")
fi

{
  echo "### Offline preview diff (\`${stack}\`): base \`${base_sha:0:12}\` -> head \`$(git rev-parse --short=12 HEAD)\`"
  echo
  if [ -n "$head_failed" ]; then
    echo "The head has no offline plan: \`${head_failed}\`"
  else
    if [ -n "$base_note" ]; then
      echo "$base_note"
    else
      echo "**$(grep -m1 '^Resources: ' "$out/diff.txt")**"  # also in the text below, after the estimate's label
      echo
      echo '```'
      # From a file, not a pipe: under pipefail, head's early exit would fail the step on a long diff.
      head -c 40000 "$out/diff.txt"
      echo '```'
    fi
    echo
    echo '```mermaid'
    cat "$out/graph.mmd"
    echo '```'
  fi
} >"$out/comment.md"
[ -z "$head_failed" ] || die "the head's plan failed: ${head_failed}"
log "wrote ${out}/comment.md"
