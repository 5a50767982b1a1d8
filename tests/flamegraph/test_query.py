"""flamegraph.query: the flame-graph query sent to Grafana and the profile type it asks for."""

from __future__ import annotations

import json

import pytest

from flamegraph.model import MAX_NODES_DEFAULT, MAX_NODES_MAX, FrameError
from flamegraph.query import dashboard_profile_type, pick_profile_type, query_body
from offline.program import run
from stack import profile_types
from tests.support.flamegraphs import CPU_TYPE, GADGET_054_TYPE


def test_dashboard_type_wins_when_both_are_held_and_sample_type_picks_another():
    held = ["process_cpu:malloc:bytes:process_cuda:bytes", "process_cpu:malloc:bytes::",
            "memory:alloc_space:bytes:space:bytes", "not-an-id"]
    assert pick_profile_type(held) == "process_cpu:malloc:bytes::"
    assert pick_profile_type(held, "alloc_space") == "memory:alloc_space:bytes:space:bytes"
    assert pick_profile_type(held, "alloc_space:bytes") == "memory:alloc_space:bytes:space:bytes"
    with pytest.raises(FrameError, match="no alloc_space:count profile"):
        pick_profile_type(held, "alloc_space:count")


def test_the_stacks_configured_id_is_preferred_when_held_and_the_default_is_unchanged():
    """pick_profile_type's ``preferred``: the ID the stack's dashboard asks for (dashboardProfileType), before the
    published panel's; without it, as before."""
    held = ["process_cpu:malloc:bytes::", "process_cpu:malloc:bytes:process_cuda:bytes"]
    assert pick_profile_type(held) == "process_cpu:malloc:bytes::"
    assert pick_profile_type(held, preferred="process_cpu:malloc:bytes:process_cuda:bytes") == held[1]
    assert pick_profile_type(held[:1], preferred=held[1]) == held[0]  # not held: the usual choice
    # A preferred ID of another sample type does not change what --sample-type picks.
    assert pick_profile_type([*held, CPU_TYPE["id"]], "cpu", preferred=held[1]) == CPU_TYPE["id"]


def test_the_dashboards_id_comes_from_the_outputs_with_the_published_one_for_older_stacks():
    outputs = run("dev", {"dashboardProfileType": GADGET_054_TYPE["id"]}).outputs
    assert dashboard_profile_type(outputs) == GADGET_054_TYPE["id"]
    assert dashboard_profile_type(run("dev").outputs) == profile_types.PUBLISHED
    older = {**outputs,
             "dashboardDefinition": {k: v for k, v in outputs["dashboardDefinition"].items() if k != "profileType"}}
    assert dashboard_profile_type(older) == profile_types.PUBLISHED
    assert dashboard_profile_type({}) == profile_types.PUBLISHED
    assert dashboard_profile_type({"dashboardDefinition": {"profileType": "[secret]"}}) == profile_types.PUBLISHED


def test_query_matches_the_dashboard_panel():
    from tests.support import reference

    dashboard = json.loads(reference("grafana-dashboards/AdvancedGPUObservability.json").read_text())
    target = next(p for p in dashboard["panels"] if p["type"] == "flamegraph")["targets"][0]
    sent = query_body("uid", None, None, "1h")["queries"][0]
    for key in ("queryType", "profileTypeId", "groupBy", "spanSelector"):
        assert sent[key] == target[key], key
    assert target["labelSelector"] == '{k8s_namespace=~"${namespace:regex}",k8s_podName=~"${pod:regex}"}'
    assert sent["labelSelector"] == '{k8s_namespace=~".*",k8s_podName=~".*"}'


def test_max_nodes_is_sent_only_when_given():
    assert "maxNodes" not in query_body("uid", None, None, "1h")["queries"][0]  # as Grafana: Pyroscope's default
    body = query_body("uid", None, None, "3h", until="2h", max_nodes=65536)
    assert body["queries"][0]["maxNodes"] == 65536 and (body["from"], body["to"]) == ("now-3h", "now-2h")
    assert MAX_NODES_DEFAULT == 8192 and MAX_NODES_MAX == 1048576


def test_profile_types_are_always_asked_with_a_start_and_end_in_milliseconds(monkeypatch):
    """grafana/grafana#110277: the Pyroscope datasource's profileTypes resource call needs start and end (without
    them older Grafanas pass 0/0 and Pyroscope answers from the ingesters' head block only). profile_types_url always
    sends both: now - since .. now - until, in milliseconds."""
    from urllib.parse import parse_qs, urlsplit

    from flamegraph import query

    monkeypatch.setattr(query.time, "time", lambda: 1_796_040_000.5)
    now = 1_796_040_000_500
    for since, until in ((3600, 0), (7 * 86400, 0), (3 * 3600, 2 * 3600)):
        url = urlsplit(query.profile_types_url("https://g.example", "local-pyroscope", since, until))
        assert url.path == "/api/datasources/uid/local-pyroscope/resources/profileTypes"
        assert parse_qs(url.query) == {"start": [str(now - since * 1000)], "end": [str(now - until * 1000)]}


def test_the_gpu_memory_is_found_whatever_name_pyroscope_gives_the_profile():
    """inspektor-gadget/inspektor-gadget#5459: the otel-profiles exporter names profile_cuda's profile
    ``process_cuda``, and Pyroscope 1.16.0+ derives the ID's name from the period type, so the ID of the GPU memory
    moves from ``process_cpu:malloc:bytes:process_cuda:bytes`` (1.15.0) to ``process_cuda:malloc:bytes:...``. The
    reader picks by sample type and unit (``malloc:bytes``), not by name."""
    for held in (["process_cpu:malloc:bytes:process_cuda:bytes"], ["process_cuda:malloc:bytes:process_cuda:bytes"]):
        assert pick_profile_type([CPU_TYPE["id"], *held]) == held[0]
