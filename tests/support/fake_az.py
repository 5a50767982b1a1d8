"""A scripted stand-in for the Azure CLI, put on PATH as ``az`` by the script tests. SIMULATED: no Azure.

Scenario file (YAML, path in ``FAKE_AZ_SCENARIO``): a list of rules, first match wins::

    - match: [network, private-link-service, show]   # tokens found in argv in this order; a token
      responses:                                      # matches an argument equal to it or containing it
        - {exit: 3, stderr: "ERROR: (ResourceNotFound) ..."}
        - {json: {id: "/subscriptions/...", provisioningState: Succeeded}, delay: 0.2}

Responses are used in order; the last one repeats. A response is ``json`` (a body: the stand-in applies the
call's ``--query`` with JMESPath, as az does, and renders ``--output`` json/tsv/none with knack's own
formatters, the library az prints through) or
``stdout``, plus optional ``stderr``, ``exit`` (default 0) and ``delay`` (seconds). A call no rule matches
exits 2 with "fake az: no rule for ...", so an unexpected call fails the test.

A response may also carry ``output_file`` (a path): its bytes are copied to the call's ``--output-file``.
A response ``{last_of: N}`` answers with the response rule N gave last (a second read of the same resource within one
poll, e.g. the approval step reading one connection's description from the PLS it has just listed: ARM answers both
GETs from the same state); the call's own ``--query`` and ``--output`` then apply to it.
Every call is appended to ``FAKE_AZ_LOG`` (JSON lines: argv, the rule index, and the JSON ``body`` read from
``--body @file``); per-rule counters live in ``FAKE_AZ_STATE``.

With ``FAKE_AZ_WORLD`` (a JSON file) set instead, answers come from the stateful world of tests/support/fake_world.py,
rendered the same way (rule index ``world``).
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time

import jmespath
import latency  # its sibling, as fake_world
from knack.output import format_json, format_tsv
from knack.util import CommandResultItem

#: az's output formats, rendered by the real knack (azure-cli's CLI framework) formatters.
FORMATTERS = {"json": format_json, "tsv": format_tsv, "none": lambda _: ""}


def _option(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg in names and i + 1 < len(argv):
            return argv[i + 1]
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def matches(tokens: list[str], argv: list[str]) -> bool:
    position = 0
    for token in tokens:
        while position < len(argv) and not (argv[position] == token or token in argv[position]):
            position += 1
        if position == len(argv):
            return False
        position += 1
    return True


def _from_rules(argv: list[str]) -> tuple:
    """(rule index or None, response) from the scenario file's rules."""
    import yaml  # only here: the world mode is called often and needs no YAML

    with open(os.environ["FAKE_AZ_SCENARIO"], encoding="utf-8") as fh:
        rules = yaml.safe_load(fh) or []
    state_path = os.environ["FAKE_AZ_STATE"]
    state = json.load(open(state_path)) if os.path.exists(state_path) else {}
    index = next((i for i, rule in enumerate(rules) if matches(rule["match"], argv)), None)
    if index is None:
        return None, {"exit": 2, "stderr": f"fake az: no rule for {' '.join(argv)}"}
    count = state.get(str(index), 0)
    state[str(index)] = count + 1
    with open(state_path, "w") as fh:
        json.dump(state, fh)
    responses = rules[index]["responses"]
    response = responses[min(count, len(responses) - 1)]
    if "last_of" in response:
        response = state.get("last", {}).get(str(response["last_of"]), {"exit": 2,
                                                                        "stderr": "fake az: nothing to repeat"})
    else:
        state.setdefault("last", {})[str(index)] = response
    with open(state_path, "w") as fh:
        json.dump(state, fh)
    return index, response


def _from_world(argv: list[str]) -> tuple:
    """("world", response) from the stateful world, which the call may change (under the world's lock: other az calls,
    the provider plugins and the cloud-side loop may be changing it too)."""
    import fake_world

    with fake_world.locked(os.environ["FAKE_AZ_WORLD"]) as world:
        response = fake_world.answer(argv, world)
    return "world", response


def main(argv: list[str]) -> int:
    body = _option(argv, "--body", "-b")
    if body and body.startswith("@"):
        with open(body[1:], encoding="utf-8") as fh:
            body = json.load(fh)
    latency.delay(*latency.az_entry(argv))  # Azure's time for the call, when a factor is set (before its effect)
    index, response = _from_world(argv) if os.environ.get("FAKE_AZ_WORLD") else _from_rules(argv)
    if os.environ.get("FAKE_AZ_LOG"):
        with open(os.environ["FAKE_AZ_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps({"argv": argv, "rule": index, "body": body}) + "\n")
    time.sleep(float(response.get("delay", 0)))
    if "output_file" in response:
        with open(response["output_file"], "rb") as src, open(_option(argv, "--output-file"), "wb") as dst:
            dst.write(src.read())
    if "stderr" in response:
        sys.stderr.write(response["stderr"].rstrip("\n") + "\n")
    if "json" in response:
        result = response["json"]
        query = _option(argv, "--query")
        if query:  # knack 0.14.0 knack/query.py: the compiled expression's search, OrderedDict maps
            result = jmespath.compile(query).search(result, jmespath.Options(collections.OrderedDict))
        output = _option(argv, "--output", "-o") or "json"
        # knack 0.14.0 knack/cli.py: nothing is printed for a None result; else the format's formatter.
        if result is not None and output in FORMATTERS:
            sys.stdout.write(FORMATTERS[output](CommandResultItem(result)))
    elif "stdout" in response:
        sys.stdout.write(response["stdout"])
    return int(response.get("exit", 0))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
