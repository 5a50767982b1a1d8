"""Read a stack file (``Pulumi.<stack>.yaml``) as the Pulumi CLI reads it, and refuse in one line what would go
wrong: the offline plan's half of the CLI's config loading (the other half, what the program itself checks, is
``components/config.py``).

Sources, pulumi/pulumi v3.230.0: ``sdk/go/common/workspace/loaders.go`` (``LoadProjectStackBytes``: yaml.v3 into
an untyped value, bare config keys put in the project's namespace by ``stackConfigNamespacedWithProject``, a
null value warned about by ``checkForEmptyConfig`` and "treated as an empty string"), ``project.go``
(``ProjectStack``: the top-level keys a stack file may have), ``sdk/go/common/encoding/marshal.go`` (a YAML
syntax error is "invalid YAML file: yaml: line N: ..."), ``sdk/go/common/resource/config/key.go`` (``ParseKey``:
``namespace:name`` or the old ``namespace:config:name``), ``pkg/cmd/pulumi/operations/up.go`` (either error
stops ``pulumi up`` as "getting stack configuration: ..."); gopkg.in/yaml.v3 v3.0.1 ``decode.go``
(``decoder.mapping``: a repeated key is "mapping key ... already defined at line N").

Every error is a :class:`StackFileError` whose text is one line, ``<file>:<line>:<column>: <what is wrong and
what is expected>``, and says whether the real CLI refuses the same file itself or silently reads it otherwise.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import yaml

#: The keys of ``ProjectStack`` (pulumi v3.230.0 ``sdk/go/common/workspace/project.go``); yaml.v3 drops any
#: other top-level key without a word, so a config key there would be ignored.
TOP_LEVEL = ("secretsprovider", "encryptedkey", "encryptionsalt", "config", "environment")


SECRET_PLACEHOLDER = "offline-placeholder-for-secret"


class StackFileError(ValueError):
    """A stack file that cannot be read as the user meant (``str(error)`` is one line naming file and position)."""


class _Yaml12Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 booleans, as the CLI's yaml.v3 reads a stack file into an untyped
    value: ``yes``/``no``/``on``/``off`` stay strings (gopkg.in/yaml.v3 README, "YAML 1.1 bools ... decoded
    into a typed bool value. Otherwise they behave as a string"), and a key repeated in one mapping is an
    error, as yaml.v3's is (v3.0.1 ``decode.go`` ``decoder.mapping``), where PyYAML would keep the last."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    if key_node.value in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {key_node.value} (first at line {seen[key_node.value] + 1}); "
                            "keep one (the Pulumi CLI refuses the file too: yaml.v3 \"mapping key already defined\")",
                            key_node.start_mark)
                    seen[key_node.value] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def cli_text(value) -> object:
    """A stack file value as the CLI holds it (pulumi v3.230.0 ``sdk/go/common/resource/config/object.go``
    ``MarshalString``): booleans and numbers as their JSON text, strings as they are, lists and maps kept
    as objects, a null as ``""`` (``loaders.go`` ``checkForEmptyConfig``: "treated as an empty string")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return value
    return str(value)


def _at(path: Path, mark) -> str:
    return f"{path.name}:{mark.line + 1}:{mark.column + 1}"


def _load(path: Path) -> tuple[object, object]:
    """(the document, its node tree) of a YAML file; StackFileError for a syntax error or a repeated key."""
    loader = _Yaml12Loader(path.read_text(encoding="utf-8"))
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = (error.problem or error.context or "not YAML").replace("\n", " ")
        if "duplicate key" in problem:
            raise StackFileError(f"{_at(path, mark)}: {problem}") from None
        raise StackFileError(f"{_at(path, mark)}: invalid YAML: {problem}; the Pulumi CLI refuses the file too "
                             "(\"invalid YAML file\")") from None
    except yaml.YAMLError as error:  # a reader error (a character YAML does not allow), no mark
        raise StackFileError(f"{path.name}: invalid YAML: {str(error).splitlines()[0]}") from None
    finally:
        loader.dispose()


def _keys(node) -> dict:
    """Mapping node -> {key: start mark} of its scalar keys."""
    return {k.value: k.start_mark for k, _ in node.value if isinstance(k, yaml.ScalarNode)} if isinstance(node, yaml.MappingNode) else {}


def namespaced(key: str, project: str) -> str:
    """A stack file's config key as the CLI keys it: a bare key in ``project``'s namespace, ``ns:config:name``
    as ``ns:name`` (``config.ParseKey``); ValueError (the CLI's own refusal) for any other key with colons."""
    parts = key.split(":")
    if len(parts) == 1:
        return f"{project}:{key}"
    if len(parts) == 2 and all(parts):
        return key
    if len(parts) == 3 and parts[1] == "config" and parts[0] and parts[2]:
        return f"{parts[0]}:{parts[2]}"
    raise ValueError(f"{key}: not a configuration key; expected <namespace>:<name> (the Pulumi CLI refuses it too: "
                     "\"could not parse ... as a configuration key\")")


def read(path: Path, project: str) -> tuple[dict[str, object], list[str]]:
    """The config of the stack file at ``path`` as the CLI hands it on: namespaced key -> the value as the CLI
    holds it (:func:`cli_text`: a string, or a list/map for an object value), and the keys of ``secure:`` values
    (each :data:`SECRET_PLACEHOLDER`: the ciphertext cannot be decrypted offline). Raises StackFileError for: invalid
    YAML, a repeated key (also once bare keys are namespaced), a document or ``config`` that is not a mapping,
    a top-level key the CLI would ignore (a config key outside ``config:``, a misspelt setting), a config key
    that is not ``namespace:name``."""
    document, node = _load(path)
    if document is None:
        return {}, []
    if not isinstance(document, dict):
        raise StackFileError(f"{path.name}: expected a mapping with a `config:` section (got a YAML {type(document).__name__}); "
                             "the Pulumi CLI refuses it too (\"expected project to be an object\")")
    for key, mark in _keys(node).items():
        if key in TOP_LEVEL:
            continue
        if ":" in key:
            hint = "a config key outside `config:`; indent it under `config:`"
        else:
            close = difflib.get_close_matches(key, TOP_LEVEL, n=1, cutoff=0.6)
            hint = f"not a stack file setting (did you mean {close[0]}?)" if close else "not a stack file setting"
        raise StackFileError(f"{_at(path, mark)}: {key}: {hint}; the Pulumi CLI would ignore it without a word "
                             f"(a stack file holds {', '.join(TOP_LEVEL)})")
    config = document.get("config")
    if config is None:
        return {}, []
    config_node = next(v for k, v in node.value if k.value == "config")
    if not isinstance(config, dict):
        raise StackFileError(f"{_at(path, config_node.start_mark)}: config: expected a mapping of keys to values "
                             f"(got a YAML {type(config).__name__}); the Pulumi CLI refuses it too")
    marks = _keys(config_node)
    values: dict[str, object] = {}
    secrets: list[str] = []
    first: dict[str, str] = {}
    for key, value in config.items():
        where = _at(path, marks[key]) if key in marks else path.name
        if not isinstance(key, str):
            raise StackFileError(f"{where}: {json.dumps(key)}: a config key must be a string <namespace>:<name>")
        try:
            full = namespaced(key, project)
        except ValueError as error:
            raise StackFileError(f"{where}: {error}") from None
        if full in first:
            raise StackFileError(f"{where}: {key}: the same key as {first[full]} once in the project's namespace; "
                                 "keep one (the Pulumi CLI would keep either, at random)")
        first[full] = key
        if isinstance(value, dict) and "secure" in value:  # ciphertext: not decryptable here
            values[full], secrets = SECRET_PLACEHOLDER, secrets + [full]
            continue
        values[full] = cli_text(value)
    return values, secrets
