"""Adversarial review (rev-b): cases the change's checks should refuse and do not. Each test here FAILS at 1984f44.

A. tests/test_workflows.py ``pull_request_reach`` is a text match on ``yaml.safe_dump(job)`` for
   ``vars.AZURE_CLIENT_ID`` / ``secrets.PULUMI_ACCESS_TOKEN`` / ``environment == "production"``; GitHub's expression
   language also reaches those through index syntax, ``format()``, ``toJSON(secrets)``, case-insensitive property
   names, environment names (case-insensitive) and expressions, workflow-level ``env``; and pull request code also runs
   on ``pull_request_review`` / ``pull_request_review_comment`` (GITHUB_REF refs/pull/N/merge, the merge commit).
B. policy/rules.py ``_pyroscope_unpinned`` accepts ``oci://.../pyroscope:1.15.0@sha256:<d>`` as pinned, the form the
   change itself says Helm 3.17.3 pulls by its tag (components/config.py ``_chart`` refuses it; the mandatory policy,
   the production gate, does not).
"""

from __future__ import annotations

import pytest

from tests import test_workflows as wf

HARMLESS = {"runs-on": "ubuntu-latest", "steps": [{"run": "true"}]}
PRODUCTION = {"on": {"workflow_call": {}}, "jobs": {"up": {"environment": "production", **HARMLESS}}}

REACHING = {
    "vars index syntax": {"on": "pull_request",
                          "jobs": {"x": {"env": {"C": "${{ vars['AZURE_CLIENT_ID'] }}"}, **HARMLESS}}},
    "vars via format()": {"on": "pull_request",
                          "jobs": {"x": {"env": {"C": "${{ vars[format('AZURE_{0}_ID', 'CLIENT')] }}"}, **HARMLESS}}},
    "all secrets via toJSON": {"on": "pull_request", "jobs": {"x": {"env": {"C": "${{ toJSON(secrets) }}"}, **HARMLESS}}},
    "secret name in lower case": {"on": "pull_request",
                                  "jobs": {"x": {"env": {"C": "${{ secrets.pulumi_access_token }}"}, **HARMLESS}}},
    "environment Production": {"on": "pull_request", "jobs": {"x": {"environment": "Production", **HARMLESS}}},
    "environment as expression": {"on": "pull_request",
                                  "jobs": {"x": {"environment": "${{ 'produc' }}tion", **HARMLESS}}},
    "workflow-level env": {"on": "pull_request", "env": {"T": "${{ secrets.PULUMI_ACCESS_TOKEN }}"}, "jobs": {"x": HARMLESS}},
    "pull_request_review trigger": {"on": "pull_request_review", "jobs": {"x": {"environment": "production", **HARMLESS}}},
    "pull_request_review_comment trigger": {"on": {"pull_request_review_comment": {}},
                                            "jobs": {"x": {"environment": "production", **HARMLESS}}},
}


@pytest.mark.parametrize("case", sorted(REACHING))
def test_reach_check_refuses_every_spelling_of_a_production_credential(case):
    found = wf.pull_request_reach({"prod.yml": PRODUCTION, "probe.yml": REACHING[case]})
    assert [f for f in found if f.startswith("probe.yml")], f"{case}: not caught"


def test_production_policy_refuses_a_tag_and_digest_chart_reference():
    from policy import rules
    from tests.test_policy import DIGEST, OCI, check, digest_release

    props = digest_release(chart=f"{OCI}:1.15.0@{DIGEST}")
    assert check(rules.pyroscope_pinned_by_digest_in_production, rules.RELEASE, props, production=True), (
        "oci://.../pyroscope:1.15.0@sha256:... passes the production gate though Helm 3.17.3 pulls it by tag")
