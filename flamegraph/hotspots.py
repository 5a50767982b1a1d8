"""Who allocates the GPU memory: the flame-graph reading recipe as a command.

    python -m flamegraph.hotspots --stack NAME [--namespace NS] [--pod POD] [--since 1h] [--top N]
                             [--by pod|namespace|container|node|process[=VALUE]]
                             [--sample-type TYPE[:UNIT] | --profile-type ID]
                             [--hide-trampolines] [--json] [--svg FILE [--palette blue-orange|classic]]
    python -m flamegraph.hotspots --from-file FILE [--sample-type TYPE[:UNIT]] [...]
                             [--baseline FILE | --baseline 3h..2h with --stack] [--max-nodes N with --stack]

The text report lists the top self allocators with their chains, the top by total and the orchestrators. "Top by
total" leaves out the carriers, frames that only pass the memory on (they stay in the chains and the picture): a
frame allocating under 10 % of its total itself that hands more than half of it to one callee per call, or is named
<module> or <unknown>. A GPU-memory byte is one requested from the CUDA driver in the time range, summed: frees are
not subtracted.

Owns the command line only: a profile from the stack's Grafana (:mod:`flamegraph.query`), one per label value
(``--by``, :mod:`flamegraph.by_label`), or a saved file (:mod:`flamegraph.formats`), read by
:mod:`flamegraph.analysis`, printed by :mod:`flamegraph.text` or as JSON, drawn by :mod:`flamegraph.svg`. Exit
status 0, or 2 with one line ``error: ...`` on stderr. Why it reads as it does: docs/decisions/flamegraph-reading.md.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Optional, Sequence

from cli import OneLineParser, exit_code
from flamegraph.analysis import CARRIED_SHARE, CARRIER_NAMES, OWN_SHARE, diff_report, report, without
from flamegraph.formats import find_frame, parse_frame, read_file
from flamegraph.model import MAX_NODES_DEFAULT, MAX_NODES_MAX, TRAMPOLINE, TRUNCATED, FrameError
from flamegraph.svg import DEFAULT_PALETTE, PALETTES, diff_svg, flame_svg
from flamegraph.text import TITLE, render, render_by, render_diff
from stack import profile_types


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = OneLineParser(prog="python -m flamegraph.hotspots", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="query the deployed stack's Grafana (outputs from `pulumi stack output`)")
    source.add_argument("--from-file", metavar="FILE", help="read a saved profile: a Grafana /api/ds/query response "
                        "(or a bare frame), a Pyroscope render JSON, or a pprof profile (.pb.gz or .pb)")
    parser.add_argument("--outputs-file", metavar="FILE",
                        help="with --stack: outputs saved with `pulumi stack output --json`")
    parser.add_argument("--namespace", help="with --stack: a namespace, or a regex over namespaces such as 'ml-.*' "
                        "(default: all)")
    parser.add_argument("--pod", help="with --stack: a pod name, or a regex over pod names such as 'vllm-.*' "
                        "(default: all)")
    parser.add_argument("--since", help="with --stack: time range back from now: 30m, 1h, 2d ... (default 1h)")
    parser.add_argument("--max-nodes", type=int, help=f"with --stack: the query's node limit (default: Grafana's, none "
                        f"sent, so Pyroscope's {MAX_NODES_DEFAULT}; at most {MAX_NODES_MAX}); the rest folds into "
                        f"'{TRUNCATED}'")
    parser.add_argument("--sample-type", metavar="TYPE[:UNIT]", help="the sample type to read: of a pprof profile, or "
                        "with --stack of the profile types Pyroscope holds (default malloc:bytes, Inspektor Gadget's "
                        "GPU memory; of a pprof profile declaring one type, that one)")
    parser.add_argument("--profile-type", metavar="ID", help="with --stack: the Pyroscope profile type ID to query, "
                        "name:type:unit:periodType:periodUnit (default: the GPU-memory one Pyroscope holds, the one "
                        "the stack's dashboard asks for when held: dashboardProfileType, "
                        f"{profile_types.PUBLISHED} unless set)")
    parser.add_argument("--by", metavar="LABEL[=VALUE]", help="with --stack: the report per value of a label the "
                        "exporter attaches, pod, namespace, container, node or process (from Pyroscope's label API, "
                        "one query per value, the widest first); LABEL=VALUE: that value's whole report (and --svg)")
    parser.add_argument("--baseline", metavar="FILE|FROM..TO", help="compare with a baseline: a second file (any "
                        "format), or with --stack a second time range back from now such as 2h..1h; lists who grew "
                        "and shrank")
    parser.add_argument("--all-frames", action="store_true", help="a pprof file's every frame: ignore the "
                        "drop_frames and keep_frames it declares (pprof's -all_frames; by default they apply, as in "
                        "pprof)")
    parser.add_argument("--top", type=int, default=10, help="how many functions per list (default 10); 'top by "
                        "total' leaves out the frames that only carry the memory (they stay in the chains and --svg): "
                        f"those allocating under {OWN_SHARE * 100:.0f}%% of their total themselves that hand more "
                        f"than {CARRIED_SHARE * 100:.0f}%% of it to one callee per call, or are named "
                        f"{' or '.join(sorted(CARRIER_NAMES))}")
    parser.add_argument("--hide-trampolines", action="store_true",
                        help=f"fold {TRAMPOLINE} frames out of the chains, the lists and the --svg picture")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--svg", metavar="FILE", help="also write the flame graph as a self-contained SVG (the --top "
                        "self allocators highlighted; with --baseline, coloured by the change in each frame's share "
                        "of its side's total)")
    parser.add_argument("--palette", choices=sorted(PALETTES), help="with --baseline and --svg: the picture's colours, "
                        f"{DEFAULT_PALETTE} (the default: told apart with colour-blindness) or classic (Pyroscope's "
                        "green to red)")
    args = parser.parse_or_report(argv)
    if args is None:
        return 2

    def bad(message: str) -> int:
        print(f"error: {message}", file=sys.stderr)
        return 2

    if args.stack or any(value is not None for value in (args.since, args.namespace, args.pod)):
        from flamegraph import query  # the Grafana client, and its options' rules, load only for a query

        if args.since is not None and not query.DURATION.fullmatch(args.since):
            return bad(f"--since: expected a duration such as 30m, 1h or 2d (got {args.since!r})")
        for flag, value, what in (("--namespace", args.namespace, query.NAMESPACE), ("--pod", args.pod, query.POD)):
            problem = query.selector_problem(value, what) if value is not None else ""
            if problem:
                return bad(f"{flag}: {problem}")
    ignored = [flag for flag, value in (("--namespace", args.namespace), ("--pod", args.pod), ("--since", args.since),
                                        ("--max-nodes", args.max_nodes), ("--profile-type", args.profile_type))
               if value is not None]
    if args.from_file and args.outputs_file:
        return bad("--outputs-file: gives --stack the stack's outputs; --from-file reads a saved profile and needs "
                   "none")
    if args.from_file and args.by is not None:
        return bad("--by: needs --stack (it asks Pyroscope's label API for each value's profile); a --from-file "
                   "profile holds every value merged")
    if args.from_file and ignored:
        return bad(f"{ignored[0]}: shapes the query --stack sends to Grafana; a --from-file profile is read as it "
                   "was saved (save it with that setting instead)")
    by_name = by_value = None
    if args.by is not None and args.stack:
        from flamegraph import by_label  # with --stack: the Grafana client is loaded already

        try:
            by_name, by_value = by_label.parse(args.by)
        except FrameError as error:
            return bad(str(error))
        if args.baseline is not None:
            return bad("--baseline: compares one profile with another; --by reads one per value (compare one pod's "
                       "ranges with --pod NAME --baseline FROM..TO)")
        if args.svg and by_value is None:
            return bad(f"--svg: draws one profile; with --by, name one value: --by {by_name}=VALUE")
    if args.palette is not None and not (args.baseline is not None and args.svg):
        return bad("--palette: colours the before-and-after picture; give it with --baseline and --svg")
    if args.top < 1:
        return bad(f"--top: expected a positive number (got {args.top})")
    if args.max_nodes is not None and not 1 <= args.max_nodes <= MAX_NODES_MAX:
        return bad(f"--max-nodes: expected 1 to {MAX_NODES_MAX}, Pyroscope's -querier.max-flamegraph-nodes-max "
                   f"(got {args.max_nodes})")
    if args.profile_type is not None and not profile_types.ID.fullmatch(args.profile_type):
        return bad(f"--profile-type: expected a Pyroscope profile type ID name:type:unit:periodType:periodUnit such as "
                   f"{profile_types.PUBLISHED} (got {args.profile_type!r})")
    if args.profile_type and args.sample_type:
        return bad("--sample-type: --profile-type already names the sample type; give one of them")
    window = re.fullmatch(r"([1-9]\d*[smhdw])\.\.([1-9]\d*[smhdw])", args.baseline or "")
    if args.baseline is not None and not os.path.exists(args.baseline):
        if not (args.stack and window):
            return bad(f"--baseline: expected a profile file{' or a time range such as 2h..1h' if args.stack else ''} "
                       f"(got {args.baseline!r}: no such file{'; a time range needs --stack' if window else ''})")
        if query.seconds(window.group(1)) <= query.seconds(window.group(2)):
            return bad("--baseline: FROM..TO counts back from now, so FROM must be further back "
                       f"(got {args.baseline!r})")
    try:
        profile_type, also_held, baseline_type, asked = None, [], None, profile_types.PUBLISHED
        if args.from_file:
            profile = read_file(args.from_file, args.sample_type, all_frames=args.all_frames)
        else:
            grafana = query.StackQuery(args.stack, args.outputs_file)
            asked = grafana.dashboard_profile_type

            def choose(since: str, until: Optional[str] = None) -> tuple[str, list[str]]:
                """The ID to query over a range, and the other IDs of the same sample type held in it (the gadget
                changed version in it, and each ID holds its own part). Each range is looked up on its own: across
                an upgrade the baseline's and the current range's IDs differ."""
                if args.profile_type:
                    return args.profile_type, []
                held = grafana.profile_types(since, until)
                chosen = query.pick_profile_type(held, args.sample_type, asked)
                return chosen, [i for i in query.matching_profile_types(held, args.sample_type) if i != chosen]

            since = args.since or "1h"
            profile_type, also_held = choose(since)
            selector = {"namespace": args.namespace, "pod": args.pod, "max_nodes": args.max_nodes}
            if by_name:
                read = by_label.profiles(grafana, by_name, by_value, selector, since, profile_type)
                by_result = None if by_value else by_label.report(by_name, read, args.top, args.hide_trampolines)
                profile = read[0][1]
            else:
                profile = parse_frame(find_frame(grafana.flame_graph({**selector, "since": since,
                                                                       "profile_type": profile_type})))
        baseline = None
        if args.baseline is not None:
            if os.path.exists(args.baseline):
                baseline = read_file(args.baseline, args.sample_type, "--baseline", args.all_frames)
            else:
                baseline_type, _ = choose(window.group(1), window.group(2))
                baseline = parse_frame(find_frame(grafana.flame_graph({
                    **selector, "since": window.group(1), "until": window.group(2), "profile_type": baseline_type})))
        kind = (profile_type.split(":")[1:3] if profile_type else (profile.sample_type or "").split(":"))
        gpu_memory = kind in (["malloc", "bytes"], [""])  # Inspektor Gadget's profile_cuda, or a frame of no type
        title = TITLE if gpu_memory else f"Profile {profile_type or profile.sample_type}"
        if profile.default_sample_type and not profile_type:  # say why this one of the profile's types was read
            title += ", its default sample type (no malloc:bytes in it)"
        if profile.pruned:  # frames the file asks readers to leave out are left out, as pprof does
            title += f", without the frames its {profile.pruned} drops (--all-frames keeps them)"
        if baseline is not None and baseline.pruned != profile.pruned:  # two sides read differently: say so
            title += f"; the baseline {'declares ' + baseline.pruned if baseline.pruned else 'drops no frames'}"
        if by_value is not None:
            title += f" of {by_name} {by_value}"
        try:
            if by_name and by_value is None:
                result, picture = by_result, None
            elif baseline is None:
                result = report(profile, args.top, args.hide_trampolines)
                drawn = without(profile) if args.hide_trampolines else profile
                picture = flame_svg(drawn, args.top, title) if args.svg else None
            else:
                # An empty side compares with nothing: every function would read as grown from, or shrunk to, 0.
                sides = ((baseline, f"--baseline {args.baseline}"), (profile, args.from_file or f"--since {since}"))
                for side, name in sides:
                    if not side.total:
                        raise FrameError(f"{name}: no samples (an empty time range, or an empty export?); "
                                         "nothing to compare")
                if args.hide_trampolines:
                    baseline, profile = without(baseline), without(profile)
                try:
                    result = diff_report(baseline, profile, args.top)
                except FrameError as error:  # name the baseline file it is about
                    if os.path.exists(args.baseline) and str(error).startswith("--baseline: "):
                        raise FrameError(f"--baseline {args.baseline}: {str(error)[len('--baseline: '):]}") from None
                    raise
                picture = (diff_svg(baseline, profile, title, args.palette or DEFAULT_PALETTE) if args.svg
                           else None)
        except FrameError as error:  # name the file it is in
            raise FrameError(f"{args.from_file}: {error}" if args.from_file and not str(error).startswith("--")
                             and not str(error).startswith(args.from_file) else str(error)) from None
    except ValueError as error:  # FrameError, OutputsError: one line
        return bad(str(error))
    if profile_type is not None:
        result["profileType"] = profile_type
        result["alsoHeld"] = also_held
        if baseline_type is not None:
            result["baselineProfileType"] = baseline_type
    if profile.pruned:
        result["prunedBy"] = profile.pruned
    if baseline is not None and baseline.pruned:
        result["baselinePrunedBy"] = baseline.pruned
    if picture is not None:
        try:
            with open(args.svg, "wb") as out:
                out.write(picture)
        except OSError as error:
            return bad(f"--svg: cannot write {args.svg}: {error.strerror or error}")
    if args.json:
        import json

        print(json.dumps(result, indent=2))
    else:
        if profile_type not in (None, asked) and title == TITLE and not args.profile_type:
            print(f"Profile type {profile_type}: Pyroscope holds the GPU memory under this ID; the dashboard's flame "
                  f"graph asks for {asked} (`pulumi config set dashboardProfileType {profile_type} && pulumi up` "
                  "makes it ask for this one).")
        if also_held:
            print(f"Also held in this range: {', '.join(also_held)} (another Inspektor Gadget version wrote it); this "
                  f"report reads {profile_type} only, --profile-type {also_held[0]} reads that part.")
        if baseline_type not in (None, profile_type):
            print(f"The baseline range holds it as {baseline_type} (Inspektor Gadget changed version between the "
                  "ranges): each range is read under its own ID.")
        if by_name and by_value is None:
            print(render_by(result, title, max_nodes=args.max_nodes))
        else:
            print(render(result, title, max_nodes=args.max_nodes, gpu_memory=gpu_memory) if baseline is None
                  else render_diff(result, title, max_nodes=args.max_nodes))
    return 0


if __name__ == "__main__":
    sys.exit(exit_code(main))
