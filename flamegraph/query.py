"""Asking Pyroscope through Grafana: the flame-graph query ``--stack`` sends, and which profile type to ask for.

Owns: :func:`query_body` (the dashboard flame-graph panel's own query, ``POST <grafanaEndpoint>/api/ds/query``),
:func:`label_selector` and :func:`label_url` (the selector, and Grafana's label API for ``--by``),
:func:`selector_problem` (``--namespace``/``--pod`` as names or RE2 regexes), :func:`pick_profile_type` and
:func:`matching_profile_types` (the GPU-memory ID Pyroscope holds), :func:`profile_types_url`,
:func:`dashboard_profile_type` (the ID the stack's dashboard asks for, from its outputs) and :class:`StackQuery`
(``az rest`` with the Azure Managed Grafana audience, :mod:`steps.azcli`). Inputs: the stack's outputs
(:func:`stack.outputs.read_outputs`). Outputs: Grafana's JSON answers. Errors: ``FrameError``, ``OutputsError``,
``ValueError`` (no ``az``), one line each. Upstream: grafana/grafana ``pkg/tsdb/grafana-pyroscope-datasource``;
why: docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

import re
import time
from typing import Any, Optional, Sequence

from flamegraph.model import FrameError
from stack import profile_types
from stack.outputs import read_outputs
from steps.azcli import AzError, rest

#: What --namespace and --pod name (Kubernetes API conventions, "Object Names and IDs": a namespace is an RFC 1123
#: label, at most 63 characters; a pod name an RFC 1123 subdomain, at most 253), and what a regex over them may hold.
NAMESPACE = ("namespace", 63, r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", "lowercase letters, digits and '-'", "ml-.*")
POD = ("pod name", 253, r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*",
       "lowercase letters, digits, '-' and '.'", "vllm-.*")
#: Regex syntax a label matcher takes (Pyroscope's =~ is Go's RE2, fully anchored): no lookaround, no backreference.
_NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]")


def selector_problem(value: str, what: tuple) -> str:
    """Why ``value`` cannot select Kubernetes objects of kind ``what`` (:data:`NAMESPACE`, :data:`POD`) in the
    flame-graph query (``k8s_namespace=~"..."``), or ``""``. Without regex syntax it must be a valid name (a typo
    would match nothing, silently); with it, a regex RE2 accepts."""
    kind, longest, pattern, allowed, example = what
    if not re.search(r"[\\.*+?()\[\]{}|^$]", value.replace(".", "") if kind == "pod name" else value):
        if len(value) <= longest and re.fullmatch(pattern, value):
            return ""
        return (f"expected a {kind} (up to {longest} {allowed}, starting and ending with a letter or digit) or a regex "
                f"over them such as '{example}' (got {value!r})")
    try:
        re.compile(value)
    except re.error as error:
        return (f"not a valid regular expression ({error}); expected a {kind} or a regex such as '{example}' "
                f"(got {value!r})")
    if _NOT_RE2.search(value):
        return f"lookarounds and backreferences are not RE2, which Pyroscope's label matcher uses (got {value!r})"
    return ""


def _regex_value(text: Optional[str]) -> str:
    return (text or ".*").replace("\\", "\\\\").replace('"', '\\"')


#: ``--by``'s names for the Kubernetes labels the Inspektor Gadget exporter attaches to each sample (its enrichment
#: fields ``k8s.podName`` ..., their dots made underscores by Pyroscope v1.15.0's ``SanitizeLabelName``).
#: ``process`` is the one the stock profile_cuda gadget exports (its ``proc.comm``, the only field it annotates
#: ``profiles.sample-attribute``); the Kubernetes ones reach Pyroscope where the gadget's run annotates them too.
BY_LABELS = {"pod": "k8s_podName", "namespace": "k8s_namespace", "container": "k8s_containerName", "node": "k8s_node",
             "process": "proc_comm"}


def _exact_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def label_selector(namespace: Optional[str], pod: Optional[str], match: Optional[dict] = None,
                   profile_type: Optional[str] = None) -> str:
    """The dashboard panel's selector (``k8s_namespace`` and ``k8s_podName`` regexes, ``.*`` when not given), with
    ``match`` (label -> one value, ``=``) after it. With ``profile_type``, the label API's: ``__profile_type__`` and
    only the regexes given (Grafana's labelNames leaves out every label its selector names)."""
    matchers = [f'__profile_type__="{profile_type}"'] if profile_type else []
    matchers += [f'{label}=~"{_regex_value(value)}"' for label, value in (("k8s_namespace", namespace),
                                                                           ("k8s_podName", pod))
                 if value is not None or not profile_type]
    matchers += [f'{label}="{_exact_value(value)}"' for label, value in (match or {}).items()]
    return "{" + ",".join(matchers) + "}"


def query_body(uid: str, namespace: Optional[str], pod: Optional[str], since: str, until: Optional[str] = None,
               max_nodes: Optional[int] = None, profile_type: str = profile_types.PUBLISHED,
               match: Optional[dict] = None) -> dict:
    """The /api/ds/query body: the dashboard panel's target with its variables filled in; from now-``since`` to
    now-``until`` (or now); ``maxNodes`` only when given (as Grafana sends it only when the panel sets it);
    ``profile_type`` the panel's unless Pyroscope holds the GPU memory under another ID; ``match``: one value of a
    label more (``--by``)."""
    body = {
        "from": f"now-{since}",
        "to": f"now-{until}" if until else "now",
        "queries": [{
            "refId": "A",
            "datasource": {"type": "grafana-pyroscope-datasource", "uid": uid},
            "queryType": "profile",
            "profileTypeId": profile_type,
            "labelSelector": label_selector(namespace, pod, match),
            "groupBy": [],
            "spanSelector": [],
        }],
    }
    if max_nodes is not None:
        body["queries"][0]["maxNodes"] = max_nodes
    return body


def label_url(grafana: str, uid: str, resource: str, selector: str, since_seconds: int, until_seconds: int = 0,
              label: Optional[str] = None) -> str:
    """``GET /api/datasources/uid/{uid}/resources/labelValues?label=&query=&start=&end=`` (or ``labelNames``
    without ``label``): the values of a label, or the label names, of the series ``selector`` matches over
    now-``since_seconds`` to now-``until_seconds``, in milliseconds (grafana/grafana 3e9248b7
    pkg/tsdb/grafana-pyroscope-datasource/instance.go ``labelValues``, ``labelNames``)."""
    from urllib.parse import urlencode

    now = int(time.time() * 1000)
    query = ({"label": label} if label else {}) | {"query": selector, "start": now - since_seconds * 1000,
                                                   "end": now - until_seconds * 1000}
    return f"{grafana}/api/datasources/uid/{uid}/resources/{resource}?{urlencode(query)}"


def matching_profile_types(available: Sequence[str], sample_type: Optional[str] = None) -> list[str]:
    """The well-formed IDs in ``available`` whose sample type (and unit, when given) is ``sample_type``
    (``TYPE[:UNIT]``, default ``malloc:bytes``), in their order."""
    kind, _, unit = (sample_type or "malloc:bytes").partition(":")
    return [i for i in available if profile_types.ID.fullmatch(i) and i.split(":")[1] == kind
            and (not unit or i.split(":")[2] == unit)]


def pick_profile_type(available: Sequence[str], sample_type: Optional[str] = None,
                      preferred: Optional[str] = None) -> str:
    """The profile type ID ``--stack`` queries, among the IDs Pyroscope holds (``available``, the datasource's
    ``profileTypes`` resource). ``sample_type``: ``TYPE[:UNIT]`` (``--sample-type``), default Inspektor Gadget's GPU
    memory ``malloc:bytes``. Of the IDs with that sample type (and unit): ``preferred`` when held (the ID the stack's
    dashboard panel asks for, :func:`dashboard_profile_type`), else the published panel's
    :data:`stack.profile_types.PUBLISHED` when held, else the only one. FrameError, one line, when none or several
    match (naming them and ``--profile-type``)."""
    kind, _, unit = (sample_type or "malloc:bytes").partition(":")
    matches = matching_profile_types(available, sample_type)
    held = ", ".join(available) or "none"
    for wanted in (preferred, profile_types.PUBLISHED):
        if wanted and wanted in matches:
            return wanted
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise FrameError(f"Pyroscope holds no {kind}{':' + unit if unit else ''} profile in this time range (it holds: "
                         f"{held}); is a GPU workload running, or pick one with --sample-type or --profile-type")
    raise FrameError(f"several {kind}{':' + unit if unit else ''} profile types ({', '.join(matches)}): "
                     "pick one with --profile-type")


def profile_types_url(grafana: str, uid: str, since_seconds: int, until_seconds: int = 0) -> str:
    """``GET /api/datasources/uid/{uid}/resources/profileTypes?start=&end=`` over now-``since_seconds`` to
    now-``until_seconds``, in milliseconds. The range is always sent: Grafana reads ``start``/``end`` (grafana/grafana
    PR 77523, 2023); without them Grafanas before PR 110277 (2025) pass 0 and 0, for which Pyroscope v1.15.0 answers
    from the ingesters' head block only (api/querier/v1/querier.proto ``ProfileTypesRequest``: "If missing or zero,
    only the ingesters will be queried"), and later ones ask now-1h..now+1h (instance.go @ 3e9248b7
    ``profileTypes``)."""
    now = int(time.time() * 1000)
    return (f"{grafana}/api/datasources/uid/{uid}/resources/profileTypes"
            f"?start={now - since_seconds * 1000}&end={now - until_seconds * 1000}")


def dashboard_profile_type(outputs: dict) -> str:
    """The profile type ID the stack's dashboard flame graph asks for, from its outputs: ``dashboardDefinition.
    profileType`` (config ``dashboardProfileType``, which the dashboard step sets in the panel), or
    :data:`stack.profile_types.PUBLISHED` for the outputs of a stack from before that key (it uploaded the published
    dashboard's ID unchanged) or one that exports no well-formed ID there."""
    definition = outputs.get("dashboardDefinition")
    asked = definition.get("profileType") if isinstance(definition, dict) else None
    return asked if isinstance(asked, str) and profile_types.ID.fullmatch(asked) else profile_types.PUBLISHED


class StackQuery:
    """Grafana's API for the stack's Pyroscope datasource, through ``az rest`` (outputs read once);
    ``dashboard_profile_type``: the ID the stack's dashboard asks for (:func:`dashboard_profile_type`)."""

    def __init__(self, stack: str, outputs_file: Optional[str]):
        self.outputs = read_outputs(stack, outputs_file, needed=("grafanaEndpoint", "pyroscopeDatasourceUid"))
        self.grafana = self.outputs["grafanaEndpoint"].rstrip("/")
        self.uid = self.outputs["pyroscopeDatasourceUid"]
        self.dashboard_profile_type = dashboard_profile_type(self.outputs)

    def _rest(self, method: str, url: str, body: Optional[dict] = None) -> Any:
        try:
            return rest(method, url, body)
        except AzError as error:
            if error.kind == "missing":  # no az on PATH: say what to install
                raise ValueError(error.last_line) from None
            # A secret Grafana name is in the endpoint: the error line says it masked (stack.outputs.StackOutputs).
            raise FrameError(self.outputs.mask(f"querying Grafana failed: {error.last_line}")) from None

    def profile_types(self, since: str, until: Optional[str] = None) -> list[str]:
        """The profile type IDs Pyroscope holds from now-``since`` to now-``until`` (or now): :func:`profile_types_url`;
        the answer is ``[{"id", "label"}]`` (grafana/grafana 041993ff pkg/tsdb/grafana-pyroscope-datasource/
        pyroscopeClient.go ``ProfileType``)."""
        url = profile_types_url(self.grafana, self.uid, seconds(since), seconds(until) if until else 0)
        answer = self._rest("get", url)
        if not isinstance(answer, list):
            raise FrameError("Grafana's profileTypes answer is not a list")
        return [t["id"] for t in answer if isinstance(t, dict) and isinstance(t.get("id"), str)]

    def label_values(self, label: str, selector: str, since: str) -> list[str]:
        """The values of ``label`` on the series ``selector`` matches over now-``since`` to now (:func:`label_url`);
        Grafana answers a list of strings."""
        return self._strings("labelValues", selector, since, label)

    def label_names(self, selector: str, since: str) -> list[str]:
        """The label names of the series ``selector`` matches (Grafana leaves out those the selector names)."""
        return self._strings("labelNames", selector, since)

    def _strings(self, resource: str, selector: str, since: str, label: Optional[str] = None) -> list[str]:
        answer = self._rest("get", label_url(self.grafana, self.uid, resource, selector, seconds(since), label=label))
        if not isinstance(answer, list) or not all(isinstance(item, str) for item in answer):
            raise FrameError(f"Grafana's {resource} answer is not a list of strings")
        return answer

    def flame_graph(self, body_args: dict) -> Any:
        return self._rest("post", f"{self.grafana}/api/ds/query", query_body(self.uid, **body_args))


DURATION = re.compile(r"[1-9]\d*[smhdw]")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def seconds(duration: str) -> int:
    """A :data:`DURATION` (``30m``, ``2d``) in seconds."""
    return int(duration[:-1]) * _UNITS[duration[-1]]
