"""Read a stack file (``Pulumi.<stack>.yaml``) as the Pulumi CLI reads it, and refuse in one line what would go wrong.

Owns: the offline plan's half of the CLI's config loading (yaml.v3 parsing, bare keys put in the project's
namespace, null values, top-level keys, key syntax); the other half, what the program checks, is
``stack_config/``. Input: the file's path. Output: its config values and secret keys. Errors:
:class:`StackFileError`, one line ``<file>:<line>:<column>: <what is wrong and what is expected>``, saying whether
the real CLI refuses the file or silently reads it otherwise. Research: docs/decisions/offline-stack-file.md.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/sdk/go/common/workspace/loaders.go
"""

from __future__ import annotations

import base64
import copy
import difflib
import json
import re
from pathlib import Path

import yaml

from stack_config import cli_values

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
    ``MarshalString``): booleans and numbers as their JSON text (stack_config/cli_values.py
    ``go_json_number``), strings as
    they are, lists and maps kept as objects, a null as ``""`` (``loaders.go`` ``checkForEmptyConfig``: "treated as an
    empty string")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return value
    if isinstance(value, (int, float)):
        return cli_values.go_json_number(value)
    return str(value)


#: What ``pulumi config set --secret`` writes: the symmetric crypter's ``v1:<nonce>:<ciphertext>`` (a passphrase or a
#: cloud secrets provider such as ``azurekeyvault://``; a 12-byte nonce, a ciphertext of at least GCM's 16-byte tag)
#: or, with Pulumi Cloud's service crypter, the ciphertext in base64 (pulumi/pulumi v3.230.0
#: ``sdk/go/common/resource/config/crypt.go`` ``symmetricCrypter``, ``pkg/secrets/service/manager.go``; both decode
#: with Go's padded ``base64.StdEncoding``).
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _base64_bytes(text: str) -> int:
    """How many bytes ``text`` decodes to with Go's ``base64.StdEncoding``; -1 when it does not decode."""
    return len(base64.b64decode(text)) if _BASE64.fullmatch(text) else -1


def ciphertext_problem(value: object, symmetric: bool) -> str:
    """Why ``value`` (what follows ``secure:``) is not ciphertext the CLI could decrypt, or ``""``. ``symmetric``: the
    stack file names a passphrase or cloud secrets provider (``encryptionsalt`` or ``encryptedkey``), so only the
    ``v1:`` form will do."""
    if not isinstance(value, str) or not value:
        return "it must be the ciphertext string `pulumi config set --secret` writes"
    parts = value.split(":")
    if len(parts) == 3 and parts[0] == "v1" and _base64_bytes(parts[1]) == 12 and _base64_bytes(parts[2]) >= 16:
        return ""
    if not symmetric and ":" not in value and _base64_bytes(value) > 0:
        return ""
    return "it is not valid ciphertext (`pulumi config set --secret` writes v1:<nonce>:<ciphertext>" + (
        ")" if symmetric else ", or base64 on Pulumi Cloud)")


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


def _values(node) -> dict:
    """Mapping node -> {key: value node} of its scalar keys; {} for anything else."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _keys(node) -> dict:
    """Mapping node -> {key: start mark} of its scalar keys."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: k.start_mark for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


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


def read(path: Path, project: str, string_keys: frozenset = frozenset()) -> tuple[dict[str, object], list[str]]:
    """The config of the stack file at ``path`` as the CLI hands it on: namespaced key -> the value as the CLI
    holds it (:func:`cli_text`: a string, or a list/map for an object value), and the keys of ``secure:`` values
    (each :data:`SECRET_PLACEHOLDER`: the ciphertext cannot be decrypted offline). Raises StackFileError for: invalid
    YAML, a repeated key (also once bare keys are namespaced), a document or ``config`` that is not a mapping,
    a top-level key the CLI would ignore (a config key outside ``config:``, a misspelt setting), a config key
    that is not ``namespace:name``, a ``secure:`` value that is not ciphertext the CLI could decrypt
    (:func:`ciphertext_problem`), a YAML number for one of ``string_keys`` (project keys of type string) whose text
    the CLI would change (:func:`_check_number`)."""
    document, node = _load(path)
    if document is None:
        return {}, []
    if not isinstance(document, dict):
        raise StackFileError(f"{path.name}: expected a mapping with a `config:` section (got a "
                             f"YAML {type(document).__name__}); "
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
    nodes = _values(config_node)
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
        value_node = nodes.get(key)
        if isinstance(value, dict) and "secure" in value:  # ciphertext: not decryptable here
            problem = ciphertext_problem(value["secure"],
                                         bool(document.get("encryptionsalt") or document.get("encryptedkey")))
            if problem:
                secure_node = _values(value_node).get("secure", value_node)
                raise StackFileError(f"{_at(path, secure_node.start_mark) if secure_node else where}: {key}: the "
                                     "`secure:` value cannot be decrypted: "
                                     f"{problem}; the Pulumi CLI cannot decrypt it either: set it with `pulumi config "
                                     f"set --secret {key.split(':')[-1]} <value>`")
            values[full], secrets = SECRET_PLACEHOLDER, secrets + [full]
            continue
        values[full] = cli_text(value)
        if isinstance(value_node, yaml.ScalarNode) and value_node.style is None and not isinstance(value, bool) \
                and value is not None:  # a number as yaml.v3 reads it (PyYAML reads YAML 1.1 numbers)
            number = cli_values.yaml_v3_number(value_node.value)
            values[full] = cli_values.go_json_number(number) if number is not None else value_node.value
            if full.startswith(f"{project}:"):
                _check_number(path, full.split(":", 1)[1], value_node, values[full], string_keys)
    return values, secrets


def _check_number(path: Path, name: str, node, text: str, string_keys: frozenset) -> None:
    """A YAML number given for a project key of type string reaches the program as the number's JSON text
    (:func:`cli_text`), which is not what was written when YAML reads it as a number: ``pyroscopeImageTag: 1.20``
    becomes "1.2", ``1.0`` becomes "1". The CLI passes that on without a word (a string key takes any plain value:
    pulumi/pulumi v3.230.0 ``sdk/go/common/workspace/project.go`` ``ValidateConfigValue``), so it is refused here,
    naming the key and the quoted form to write. A number written as the CLI would pass it (``2``) is left alone."""
    if name in string_keys and node.style is None and node.value != text:
        raise StackFileError(f"{_at(path, node.start_mark)}: {cli_values.unquoted_number(name, node.value, text)}")


# --- `pulumi config set [--path] KEY VALUE`: what the CLI stores in the stack's config -------------------------
# pulumi/pulumi v3.230.0: pkg/cmd/pulumi/config/config.go (configSetCmd.Run: a value given without --secret or --type is
# config.NewTypedValue(value, TypeUnknown), stored with ps.Config.Set(key, v, --path)), io.go (ParseConfigKey: with
# --path only the segment before the first '[' or '.' is namespaced), sdk/go/common/resource/config/map.go (Map.Set,
# parseKeyPath), object.go (object.Set, newContainer, coerce), value.go (coerceObject), sdk/go/common/resource/
# properties_path.go (parsePropertyPath strict, PropertyPath.String). Without --path the value is stored as a string,
# whatever it looks like; with --path and a path of more than one segment, "true"/"false" become booleans and decimal
# integers (no leading 0) numbers, and the top key holds an object (a list or a map).


class ConfigSetError(ValueError):
    """What `pulumi config set` refuses; ``message`` is the CLI's own text (``map.go``, ``object.go``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def parse_property_path(text: str) -> list:
    """``resource.ParsePropertyPathStrict``: ``a.b``, ``a[0]``, ``a["b.c"]`` -> ``["a", "b"]``, ``["a", 0]``, ..."""
    elements: list = []
    if text.startswith("."):
        raise ConfigSetError("expected property path to start with a name or index")
    while text:
        if text[0] == ".":
            text = text[1:]
            if not text:
                raise ConfigSetError("expected property path to end with a name or index")
            if text[0] == "[":
                raise ConfigSetError("expected property name after '.'")
        elif text[0] == "[":
            if len(text) > 1 and text[1] == '"':
                key, i = [], 2
                while True:
                    if i >= len(text):
                        raise ConfigSetError("missing closing quote in property name")
                    if text[i] == '"':
                        i += 1
                        break
                    if text[i] == "\\" and i + 1 < len(text) and text[i + 1] == '"':
                        key.append('"')
                        i += 2
                    else:
                        key.append(text[i])
                        i += 1
                if i >= len(text) or text[i] != "]":
                    raise ConfigSetError("missing closing bracket in property access")
                element, text = "".join(key), text[i:]
            else:
                close = text.find("]")
                if close == -1:
                    raise ConfigSetError("missing closing bracket in array index")
                segment = text[1:close]
                if segment == "*":
                    element = "*"
                elif re.fullmatch(r"[+-]?[0-9]+", segment):
                    element = int(segment)
                    if not -2**63 <= element < 2**63:
                        raise ConfigSetError('invalid array index: strconv.ParseInt: parsing '
                                             f'"{segment}": value out of range')
                else:
                    raise ConfigSetError(f'invalid array index: strconv.ParseInt: parsing "{segment}": invalid syntax')
                text = text[close:]
            elements.append(element)
            text = text[1:]
        else:
            end = next((i for i, c in enumerate(text) if c in ".["), len(text))
            elements.append(text[:end])
            text = text[end:]
    return elements


def path_text(path: list) -> str:
    """``PropertyPath.String``: names joined by ``.``, indexes as ``[n]``, a name with any character other than a
    letter, digit or ``_`` as ``["..."]``."""
    out = ""
    for i, key in enumerate(path):
        if isinstance(key, int):
            out += f"[{key}]"
        elif all(c.isascii() and (c.isalnum() or c == "_") for c in key):
            out += key if i == 0 else f".{key}"
        else:
            out += '["' + key.replace('"', '\\"') + '"]'
    return out


def _coerce(text: str) -> object:
    """``coerce`` (object.go): "true"/"false" as booleans, base-10 integers that do not start with 0 as numbers."""
    if text in ("true", "false"):
        return text == "true"
    if len(text) > 1 and text[0] == "0":
        return text
    if re.fullmatch(r"[+-]?[0-9]+", text) and -2**63 <= int(text) < 2**63:  # strconv.ParseInt(v, 10, 64)
        return int(text)
    if re.fullmatch(r"[0-9]+", text) and int(text) < 2**64:  # strconv.ParseUint: no sign
        return int(text)
    return text


def _container(accessor: object) -> object:
    """``newContainer``: a list of ``accessor + 1`` nulls for an index, a map for a name."""
    return [None] * max(accessor + 1, 0) if isinstance(accessor, int) else {}


def _set(node: object, prefix: list, path: list, new: object) -> object:
    """``object.Set``: ``node`` with ``new`` at ``path`` (``prefix`` leads to ``node``), containers made as needed."""
    if not path:
        return new
    if node is None or (not isinstance(node, (list, dict)) and len(prefix) == 1):
        node = _container(path[0])  # COMPAT: a top-level value that is not a container is replaced
    elif not isinstance(node, (list, dict)):
        raise ConfigSetError(f"{path_text(prefix)}: expected {'an array' if isinstance(path[0], int) else 'a map'}")
    prefix = prefix + [path[0]]
    if isinstance(node, list):
        index = path[0]
        if not isinstance(index, int):
            raise ConfigSetError(f"{path_text(prefix)}: key for an array must be an int")
        if index < 0 or index > len(node):
            raise ConfigSetError(f"{path_text(prefix)}: array index out of range")
        if index == len(node):
            node.append(None)
        node[index] = _set(node[index], prefix, path[1:], new)
        return node
    key = path[0]
    if not isinstance(key, str):
        raise ConfigSetError(f"{path_text(prefix)}: key for a map must be a string")
    if len(path) == 1 and not node and key == "secure" and isinstance(new, str):
        raise ConfigSetError('maps with the single key "secure" are reserved')
    node[key] = _set(node.get(key), prefix, path[1:], new)
    return node


def config_key(key: str, path: bool, project: str) -> str:
    """``ParseConfigKey``: the namespaced key; with ``path``, only the segment before the first ``[`` or ``.`` is
    namespaced (``tags[0]`` -> ``<project>:tags[0]``). ConfigSetError for a key the CLI cannot parse."""
    cut = min((i for i in (key.find("["), key.find(".")) if i >= 0), default=-1)
    try:
        if path and cut > 0:
            return namespaced(key[:cut], project) + key[cut:]
        return namespaced(key, project)
    except ValueError as error:
        raise ConfigSetError(f"invalid configuration key: {error}") from None


def config_set(config: dict, key: str, value: str, path: bool, project: str) -> str:
    """Apply ``pulumi config set [--path] KEY VALUE`` to ``config`` (namespaced key -> a string, or a list or map for an
    object value, as :func:`read` gives them) in place, and return the top-level key it set. ConfigSetError (the CLI's
    message, as configSetCmd.Run wraps it) for what the CLI refuses."""
    full = config_key(key, path, project)
    try:
        return map_set(config, full, value, path)
    except ConfigSetError as error:
        raise ConfigSetError(f"could not set config: {error.message}") from None


def map_set(config: dict, key: str, value: str, path: bool) -> str:
    """``Map.Set`` of a plaintext value (``NewTypedValue(value, TypeUnknown)``) at ``key`` (``namespace:name``, the name
    a path with ``path``); returns the top-level key it set."""
    if not path:
        config[key] = value
        return key
    namespace, _, name = key.partition(":")
    try:
        elements = parse_property_path(name)
    except ConfigSetError as error:
        raise ConfigSetError(f"invalid config key path: {error.message}") from None
    if not elements:
        raise ConfigSetError("empty config key path")
    if not isinstance(elements[0], str):
        raise ConfigSetError("first path segement of config key must be a string")  # sic, map.go
    if elements[0] == "":
        raise ConfigSetError("config key is empty")
    top = f"{namespace}:{elements[0]}"
    if len(elements) == 1:
        config[top] = value
        return top
    root = copy.deepcopy(config[top]) if top in config else _container(elements[1])
    config[top] = _set(root, elements[:1], elements[1:], _coerce(value))
    return top
