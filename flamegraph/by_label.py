"""``--by LABEL[=VALUE]``: which pod (namespace, container, node, process) holds the GPU memory, from the label API.

Owns: :func:`parse` (the option: a name of :data:`flamegraph.query.BY_LABELS`, optionally ``=VALUE``),
:func:`profiles` (the label's values Pyroscope holds for the profile type under the query's namespace and pod, then
each value's flame graph through Grafana, and that of the samples without the label, value ``""``) and
:func:`report` (each value's :func:`flamegraph.analysis.report`, the widest total first). Inputs: a
:class:`flamegraph.query.StackQuery`. Outputs: ``[(value, Profile)]`` and ``{"by", "label", "values": [{"value",
...report}]}``. Errors: ``FrameError``, one line: a label no sample carries
(naming the labels they do carry), a value not held, more values than :data:`MAX_VALUES`. Why per value:
docs/decisions/flamegraph-reading.md ("Which pod").
"""

from __future__ import annotations

from typing import Optional

from flamegraph import analysis
from flamegraph.formats import find_frame, parse_frame
from flamegraph.model import FrameError, Profile
from flamegraph.query import BY_LABELS, StackQuery, label_selector

#: The most values ``--by`` reads one flame graph each for; more asks for a narrower query.
MAX_VALUES = 50


def parse(option: str) -> tuple[str, Optional[str]]:
    """``pod`` or ``pod=NAME`` as (name, value or None); FrameError naming what is expected."""
    name, equals, value = option.partition("=")
    if name not in BY_LABELS or (equals and not value):
        raise FrameError(f"--by: expected {', '.join(BY_LABELS)}, optionally =VALUE such as pod=vllm-0 "
                         f"(got {option!r})")
    return name, value if equals else None


def profiles(grafana: StackQuery, name: str, value: Optional[str], selector: dict, since: str,
             profile_type: str) -> list[tuple[str, Profile]]:
    """Each value of label ``name`` (only ``value`` when given) with its flame graph over now-``since`` to now;
    ``selector``: the query's namespace, pod and node limit."""
    label = BY_LABELS[name]
    scope = label_selector(selector.get("namespace"), selector.get("pod"), profile_type=profile_type)
    held = grafana.label_values(label, scope, since)
    if not held:
        carried = sorted(n for n in grafana.label_names(scope, since) if not n.startswith("__"))
        known = [by for by, other in BY_LABELS.items() if other in carried]
        hint = (f"the gadget exports only the fields its run annotates profiles.sample-attribute; try --by {known[0]}"
                if known else "the gadget exports only the fields its run annotates profiles.sample-attribute"
                ) if carried else "is a GPU workload running there?"
        raise FrameError(f"--by {name}: no {profile_type} sample in the last {since} carries the label {label} "
                         f"(they carry: {', '.join(carried) or 'none'}; {hint})")
    if value is not None:
        if value not in held:
            shown = ", ".join(sorted(held)[:10]) + (f" and {len(held) - 10} more" if len(held) > 10 else "")
            raise FrameError(f"--by {name}={value}: Pyroscope holds no {profile_type} for {label}={value} in the last "
                             f"{since} (it holds: {shown})")
        held = [value]
    elif len(held) > MAX_VALUES:
        raise FrameError(f"--by {name}: {len(held)} values, more than the {MAX_VALUES} read one query each; narrow it "
                         f"with --namespace or --pod, or read one: --by {name}=VALUE")
    def read(value: str) -> Profile:
        return parse_frame(find_frame(grafana.flame_graph({**selector, "since": since, "profile_type": profile_type,
                                                           "match": {label: value}})))

    read_values = [(v, read(v)) for v in held]
    if value is None:  # LABEL="" matches the samples without the label: their memory is in the total too
        unlabelled = read("")
        if unlabelled.total:
            read_values.append(("", unlabelled))
    return read_values


def report(name: str, read: list[tuple[str, Profile]], top: int, hide_trampolines: bool) -> dict:
    """The --json shape of ``--by``: per value its report, the widest total first (then by value)."""
    values = [{"value": value, **analysis.report(profile, top, hide_trampolines)} for value, profile in read]
    values.sort(key=lambda entry: (-entry["total"], entry["value"]))
    return {"by": name, "label": BY_LABELS[name], "values": values}
