"""Reading and validating the stack's configuration: ``pulumi.Config`` -> :class:`~stack_config.schema.StackConfig`.

Owns: :func:`load` (the program's entry), :func:`parse` (raw strings -> a validated StackConfig, list and map keys
parsed into typed values at this boundary), :func:`with_values` (filling empty keys from elsewhere), :func:`hide`.
Inputs: the stack's config as the CLI passes it (strings; arrays as JSON). Output: a frozen StackConfig. Errors:
:class:`~stack_config.schema.ConfigError` (``"<key>: ..."``) for the first bad key, in ``Pulumi.yaml`` order;
:class:`~stack_config.schema.SecretValueError` when the bad value is secret. Upstream: pulumi/pulumi v3.230.0
``sdk/python/lib/pulumi/config.py``; the defaults: docs/decisions/config-defaults.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields, replace
from typing import Iterable, Mapping, Optional

import pulumi

from stack_config import masking, rules
from stack_config.cli_values import check_known, check_stack_file_numbers, cli_value
from stack_config.rules import REQUIRED_UNLESS, RULES
from stack_config.schema import PROJECT, PROJECT_FILE, ConfigError, SecretValueError, StackConfig, declared, snake


def _typed(key: str, kind: str, text: str) -> object:
    """Convert the CLI's string form of a value to its declared Pulumi config type (arrays arrive as JSON;
    they become tuples of strings)."""
    if kind == "array":
        try:
            items = json.loads(text) if text.strip() else []
        except json.JSONDecodeError:
            items = None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ConfigError(key, f"expected a list of strings, e.g. [\"costCenter=1234\"] (got {text!r})")
        return tuple(items)
    if kind == "integer":
        if not re.fullmatch(r"[+-]?\d+", text.strip()):
            raise ConfigError(key, f"expected an integer (got {text!r})")
        return int(text)
    if kind == "boolean":  # what pulumi.Config.get_bool accepts
        if text not in ("true", "True", "false", "False"):
            raise ConfigError(key, f"expected true or false (got {text!r})")
        return text in ("true", "True")
    return text


#: The list and map keys, parsed once their items passed their rule (field -> parser): the program reads maps and lists.
PARSED = {
    "tags": rules.tag_map,
    "private_link_visibility": lambda text: tuple(str(text).split()),
    "pyroscope_resources": rules.resources,
    "pyroscope_node_selector": rules.node_selector,
    "pyroscope_tolerations": lambda items: tuple(rules.tolerations(items)),
    "grafana_viewers": rules.grafana_viewers,
}


def parse(raw: Mapping[str, Optional[str]], secret_keys: Iterable[str] = ()) -> StackConfig:
    """Validate raw values (key -> the string the CLI would pass, or None if unset) into a StackConfig;
    ``secret_keys``: the keys whose value is secret config.

    Unset keys take their Pulumi.yaml default. Keys are checked in Pulumi.yaml order; the first failure
    raises :class:`ConfigError`. Raises ConfigError for: a required key (no default) missing or empty,
    a value of the wrong type, or a value outside its rule.
    """
    schema = declared()
    secret_keys = frozenset(secret_keys)
    values: dict[str, object] = {}
    for key, decl in schema.items():
        text = raw.get(key)
        if text is None:
            if "default" not in decl:
                raise ConfigError(key, f"required; set it with `pulumi config set {key} <value>`")
            text = cli_value(decl["default"])  # what the CLI would have written
        text = str(text)
        if "default" not in decl and text.strip() == "":
            raise ConfigError(key, f"required and must not be empty; set it with `pulumi config set {key} <value>`")
        try:
            value = _typed(key, decl.get("type", "string"), text)
            if key in REQUIRED_UNLESS and str(value).strip() == "":
                value = ""  # checked by check_required, once stack references had their say
            if key in RULES and not (key in REQUIRED_UNLESS and value == ""):
                RULES[key](key, value)
        except ConfigError as error:
            if key not in secret_keys:
                raise
            raise SecretValueError(key, f"{hide(error.message, text)} (the value is secret)") from None
        values[snake(key)] = value
    known = {f.name for f in fields(StackConfig) if f.name != "secret_keys"}
    missing = known - set(values)
    if missing:  # Pulumi.yaml and StackConfig drifted apart: a programming error, not user input.
        raise RuntimeError(f"Pulumi.yaml declares no key for StackConfig fields {sorted(missing)}")
    rules.check_mode_keys(values["pyroscope_mode"], values["pyroscope_resources"])
    rules.check_pyroscope_majors(values["pyroscope_chart_version"], values["pyroscope_image_tag"])
    values.update({name: parse_value(values[name]) for name, parse_value in PARSED.items()})
    config = StackConfig(**{name: values[name] for name in known}, secret_keys=frozenset(secret_keys))
    rules.check_dashboard_file(config)
    return config if (config.cluster_stack or config.grafana_stack) else rules.check_required(config)


def hide(message: str, value: str) -> str:
    """``message`` with ``value`` (as a rule quotes it: ``repr``, JSON, or bare) replaced by ``[secret]``."""
    for shown in sorted({repr(value), json.dumps(value), value} - {""}, key=len, reverse=True):
        message = message.replace(shown, "[secret]")
    return message


def with_values(config: StackConfig, values: Mapping[str, str], source: str, secret: Iterable[str] = ()) -> StackConfig:
    """``config`` with ``values`` (config key -> string) filled in where the key is empty (its default, ``""``,
    means "derive"), each checked by its rule; a key the stack sets to a non-empty value wins. ``source``
    names where the values come from, for the error message; ``secret``: the keys among ``values`` whose value came
    in secret (added to ``secret_keys`` when filled in)."""
    changes: dict = {}
    secret = set(secret)
    for key, value in values.items():
        if getattr(config, snake(key)) not in ("", None):
            continue
        try:
            if key in RULES:
                RULES[key](key, value)
        except ConfigError as error:
            if key in secret:
                message = f"{hide(error.message, value)} (from {source}; the value is secret)"
                raise SecretValueError(key, message) from None
            raise ConfigError(key, f"{error.message} (from {source})") from None
        changes[snake(key)] = value
        if key in secret:
            changes["secret_keys"] = frozenset(changes.get("secret_keys", config.secret_keys) | {key})
    return replace(config, **changes)


def _all_keys() -> set[str]:
    """Every config key the engine handed this program: set at run time (mocks, RunRequest) or through
    the PULUMI_CONFIG environment variable the language host sets."""
    from pulumi.runtime import config as runtime_config

    return set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())


def load() -> StackConfig:
    """Read every declared key from the stack's config (namespace ``aks-gpu-observability``) and parse it; every
    secret config value, of any namespace, becomes known to stack_config/masking.py (a new run: nothing else is).
    Raises ConfigError for an undeclared key in that namespace or any invalid value."""
    from pulumi.runtime.config import get_config, is_config_secret

    masking.forget()
    masking.know(get_config(key) for key in _all_keys() if is_config_secret(key))
    check_known(_all_keys())
    check_stack_file_numbers(PROJECT_FILE.parent / f"Pulumi.{pulumi.get_stack()}.yaml")
    config = pulumi.Config(PROJECT)
    return parse({key: config.get(key) for key in declared()},
                 [key for key in declared() if is_config_secret(f"{PROJECT}:{key}")])
