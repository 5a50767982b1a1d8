"""How the Pulumi CLI, Go and yaml.v3 read config values, re-created so the program and the offline plan read alike.

Owns: :func:`cli_value` and :func:`cli_defaults` (defaults written as the CLI writes them), :func:`check_cli_types`
(the CLI's type check), :func:`yaml_v3_number`, :func:`go_json_number`, :func:`check_stack_file_numbers` (a YAML
number the CLI would change), :func:`check_known` (keys the program would ignore) and :func:`provider_keys`.
Inputs: namespaced keys and the values as the CLI holds them, a stack file. Outputs: strings as the CLI passes them.
Errors: :class:`~stack_config.schema.ConfigError` naming the key. Upstream: pulumi/pulumi v3.230.0
``sdk/go/common/workspace/config.go`` and ``project.go``; the research: docs/decisions/config-defaults.md.
"""

from __future__ import annotations

import decimal
import difflib
import importlib.util
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping, Optional

import yaml

from stack_config.schema import PROJECT, ConfigError, declared


def cli_value(value: object) -> str:
    """A ``Pulumi.yaml`` default as the CLI writes it into the stack's config: ``createConfigValue`` in pulumi
    v3.230.0 ``sdk/go/common/workspace/config.go`` formats a primitive with Go's ``%v`` (``true``/``false``,
    integers in decimal, strings as they are) and marshals anything else to compact JSON (an object
    value, e.g. ``[]``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def cli_defaults(values: Mapping[str, str]) -> dict[str, str]:
    """``values`` (namespaced key -> string, as the stack file gives them) plus every ``Pulumi.yaml`` default
    of a key they leave out, written as the CLI writes it (``mergeConfig``, same file: a key found on the
    stack is kept, a key with a default is set, a project key with neither is missing)."""
    merged = dict(values)
    for key, decl in declared().items():
        full = f"{PROJECT}:{key}"
        if full not in merged and "default" in decl:
            merged[full] = cli_value(decl["default"])
    return merged


def check_cli_types(values: Mapping[str, object]) -> None:
    """Refuse what the Pulumi CLI refuses before the program runs: a project key's value not of its declared
    type (pulumi v3.230.0 ``sdk/go/common/workspace/project.go`` ``ValidateConfigValue``, called by
    ``validateStackConfigValues`` in ``config.go``). ``values``: namespaced key -> the value as the CLI holds
    it, a string for a plain value (YAML booleans and numbers become their JSON text, ``object.go``
    ``MarshalString``; `pulumi config set KEY VALUE` stores VALUE as a string, whatever it looks like) or a list or
    map for an object value (a YAML list or map, or what `pulumi config set --path` builds). boolean: exactly
    ``true`` or ``false``; integer: what Go's ``strconv.Atoi`` parses; string: a plain value; array of strings: a
    list of strings, never a string (``validateStackConfigValue`` decodes JSON only for an object value). Raises
    ConfigError naming the key; for an array, the message shows the ``--path`` form that stores a list."""
    schema = declared()
    for full, value in values.items():
        namespace, _, key = full.partition(":")
        kind = (schema.get(key) or {}).get("type") if namespace == PROJECT else None
        ok = {
            "string": isinstance(value, str),
            "boolean": value in ("true", "false"),
            "integer": isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value) is not None,
            "array": isinstance(value, list) and all(isinstance(item, str) for item in value),
        }.get(kind, True)
        if not ok:
            name = "array<string>" if kind == "array" else kind
            got = json.dumps(value) if isinstance(value, (list, dict)) else repr(value)
            message = f"must be of type '{name}' (got {got}); the Pulumi CLI refuses this before the program runs"
            if kind == "array" and isinstance(value, str):
                message += (f" (`pulumi config set {key} VALUE` stores a string): set each item with "
                            f"`pulumi config set --path '{key}[0]' <item>`, offline --set-path '{key}[0]=<item>'")
            elif kind == "array" and isinstance(value, list) and None in value:
                message += (f": item {value.index(None)} was never set (`--path '{key}[N]'` fills a list from index 0, "
                            "one item after another)")
            elif kind == "array" and isinstance(value, dict):
                message += f": a list is set by index, `pulumi config set --path '{key}[0]' <item>`, not by name"
            elif kind == "array":
                message += " (`pulumi config set --path` stores true, false and integers as booleans and numbers)"
            raise ConfigError(key, message)


#: The provider whose configuration the stack relies on (``azure-native:location``, credentials).
PROVIDER = "azure-native"


@lru_cache(maxsize=None)
def provider_keys() -> frozenset:
    """The config keys azure-native declares, read from its installed SDK: ``pulumi_azure_native/config/vars.py``
    (generated from the provider schema's config variables) reads each one with ``__config__.get*('<key>')``.
    Found without importing the package."""
    spec = importlib.util.find_spec("pulumi_azure_native")
    if spec is None or not spec.origin:  # pragma: no cover - the SDK is a requirement of the program
        raise RuntimeError("pulumi_azure_native is not installed; run `pip install --require-hashes -r "
                           "requirements.lock`")
    text = (Path(spec.origin).parent / "config" / "vars.py").read_text(encoding="utf-8")
    return frozenset(re.findall(r"__config__\.get\w*\('(\w+)'\)", text))


def check_known(keys: Iterable[str]) -> None:
    """Raise ConfigError for the first key (sorted) that the program would otherwise ignore without a word (the
    Pulumi CLI hands every key of the stack's config to the program and checks none of these itself):

    - a key in the project's namespace that Pulumi.yaml does not declare (its default would be used); the error
      names the key and suggests the closest declared one;
    - an ``azure-native:`` key the provider does not declare (:func:`provider_keys`; the provider's CheckConfig
      accepts any key), e.g. ``azure-native:locaton``; the error names the full key and suggests one;
    - a key in a namespace that is neither but close to one of them (a misspelt ``aks-gpu-observabilty:``), whose
      key would never be read; the error names the full key and suggests it in the right namespace.
    Other namespaces (other providers, policies) are left alone."""
    names = declared()
    known = {PROJECT: list(names), PROVIDER: sorted(provider_keys())}
    for full in sorted(keys):
        namespace, _, key = full.partition(":")
        if namespace == PROJECT and key not in names:
            close = difflib.get_close_matches(key, list(names), n=1)
            hint = f"did you mean {close[0]}?" if close else "docs/configuration.md lists every key"
            head = re.split(r"[.\[]", key, maxsplit=1)[0]
            if head != key and head in names:  # a property path given as a key
                hint = f"a path into {head}: set it with `pulumi config set --path '{key}' ...`, offline --set-path"
            raise ConfigError(key, f"unknown config key ({hint}); the keys are declared in Pulumi.yaml")
        if namespace == PROVIDER and key not in known[PROVIDER]:
            close = difflib.get_close_matches(key, known[PROVIDER], n=1)
            hint = f"did you mean {PROVIDER}:{close[0]}?" if close else f"its keys: {', '.join(known[PROVIDER])}"
            raise ConfigError(full, f"unknown {PROVIDER} config key ({hint}); the provider declares its keys in "
                                    "pulumi_azure_native/config/vars.py")
        if namespace not in known:
            close = difflib.get_close_matches(namespace, list(known), n=1, cutoff=0.8)
            if close:
                raise ConfigError(full, f"unknown namespace '{namespace}', so nothing reads this key (did you mean "
                                        f"{close[0]}:{key}? this project's keys are in namespace {PROJECT})")


def go_json_number(value) -> str:
    """A YAML number as Go's ``encoding/json`` writes the float64 or int64 yaml.v3 decodes it to, which is how the CLI
    passes a stack file's number on (pulumi/pulumi v3.230.0 ``sdk/go/common/resource/config/object.go``
    ``MarshalString``; Go ``encoding/json`` ``floatEncoder``: the shortest digits that round-trip, fixed notation for
    1e-6 <= |x| < 1e21, else an exponent without a leading zero, ``e-7``): ``1.20`` -> ``1.2``, ``1.0`` -> ``1``,
    ``1e3`` -> ``1000``."""
    if isinstance(value, int):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return repr(value)  # NaN and infinities: json.Marshal refuses them, so does the CLI
    if value == 0 or 1e-6 <= abs(value) < 1e21:
        text = format(decimal.Decimal(repr(value)), "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    return re.sub(r"e([+-])0(\d)$", r"e\1\2", repr(value))


_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")


_GO_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _go_parse_int(text: str, signed: bool) -> Optional[int]:
    """Go's ``strconv.ParseInt(text, 0, 64)`` (``ParseUint`` when not ``signed``): a sign (ParseInt only), then a
    ``0x``/``0o``/``0b`` prefix or a leading ``0`` (octal) picks the base; None where Go answers an error."""
    sign, body = (text[0], text[1:]) if signed and text[:1] in "+-" else ("", text)
    base = 10
    if body[:2].lower() in ("0x", "0o", "0b"):
        base, body = {"x": 16, "o": 8, "b": 2}[body[1].lower()], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, body = 8, body[1:]
    if not body or any(c not in _GO_DIGITS[base] for c in body):
        return None
    value = int(body, base) * (-1 if sign == "-" else 1)
    low, high = (-2**63, 2**63 - 1) if signed else (0, 2**64 - 1)
    return value if low <= value <= high else None


def yaml_v3_number(text: str) -> Optional[object]:
    """The number gopkg.in/yaml.v3 decodes a plain scalar ``text`` to (an int or a float), as the CLI reads a stack
    file; None when yaml.v3 reads it as anything else. go-yaml ``resolve.go`` ``resolve``: ``.inf``/``.nan`` forms; a
    scalar starting with ``.`` parsed as a float; one starting with a digit or sign, underscores removed, as
    ``ParseInt``/``ParseUint`` with base prefixes (``0x1F``, ``0o17``, ``017``, ``0b101``), else a decimal float
    (``1.20``, ``1e3``); a date (``2024-01-31``) is a timestamp, not a number."""
    special = {".nan": float("nan"), ".inf": float("inf"), "+.inf": float("inf"), "-.inf": float("-inf")}
    if text.lower() in special and text[-3:] in ("nan", "NaN", "NAN", "inf", "Inf", "INF"):
        return special[text.lower()]
    if text[:1] == ".":
        try:
            return float(text)
        except ValueError:
            return None
    if not text or text[0] not in "+-0123456789" or re.fullmatch(r"\d{4}-.*", text):
        return None
    plain = text.replace("_", "")
    for signed in (True, False):
        number = _go_parse_int(plain, signed)
        if number is not None:
            return number
    return float(plain) if _YAML_STYLE_FLOAT.fullmatch(plain) else None


def unquoted_number(key: str, written: str, passed: str) -> str:
    """The one-line reason to refuse a YAML number ``written`` for string key ``key``, which the CLI passes as
    ``passed``."""
    return (f"{key}: {written} is a YAML number, which the Pulumi CLI passes on as \"{passed}\"; quote it to keep it "
            f"as "
            f"written: {key}: \"{written}\"")


def check_stack_file_numbers(path: Path) -> None:
    """Refuse a YAML number given in the stack file ``path`` for a project key of type string whose text the CLI
    changes when it passes it on (:func:`go_json_number`): ``pyroscopeImageTag: 1.20`` would deploy image tag "1.2".
    The CLI takes any plain value for a string key (v3.230.0 ``sdk/go/common/workspace/project.go``
    ``ValidateConfigValue``), so the program reads its own stack file to tell; ConfigError naming the key, the file,
    line and column, and the quoted form. A file that is missing or not YAML is left to the CLI."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return
    if not isinstance(root, yaml.MappingNode):
        return
    config = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "config"), None)
    strings = {key for key, decl in declared().items() if decl.get("type", "string") == "string"}
    for key_node, value_node in config.value if isinstance(config, yaml.MappingNode) else []:
        name = str(key_node.value)
        namespace, _, rest = name.rpartition(":")
        key = rest if namespace in ("", PROJECT, f"{PROJECT}:config") else None
        if key in strings and isinstance(value_node, yaml.ScalarNode) and value_node.style is None:
            number = yaml_v3_number(value_node.value)
            passed = go_json_number(number) if number is not None else value_node.value
            if passed != value_node.value:
                mark = value_node.start_mark
                raise ConfigError(key, f"{path.name}:{mark.line + 1}:{mark.column + 1}: "
                                       f"{unquoted_number(key, value_node.value, passed).split(': ', 1)[1]}")
