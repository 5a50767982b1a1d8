"""The Pulumi wire format as the offline plan reads it: the signatures of secrets, outputs, resource references,
assets and archives, and what the plan prints of them.

Owns: :func:`plain` (a wire value as plain JSON: ``"[secret]"``, ``"[unknown]"``, a reference's URN), :func:`mask`
(plaintext of secret values hidden in invoke arguments), :func:`join_path` (a property path as pulumi-kubernetes
writes it) and :func:`secret_fingerprints` (what tells a changed secret from an unchanged one). Input: property maps
as the SDK serialises them (protobuf ``Struct`` as a dict). Output: plain JSON. Errors: none raised.
Upstream: https://github.com/pulumi/pulumi/blob/v3.230.0/sdk/go/common/resource/sig/sig.go
"""

from __future__ import annotations

from typing import Any, Mapping

from offline import replacement

SECRET = "[secret]"
UNKNOWN = "[unknown]"

# Signatures of the Pulumi wire format (sdk/go/common/resource/sig).
SIG = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"
ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7"
OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
COMPUTED = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def plain(value: Any) -> Any:
    """Turn a wire-format property value into plain JSON: secrets become ``"[secret]"``, unknowns
    ``"[unknown]"``, resource references their URN, assets and archives a short description."""
    if isinstance(value, dict):
        sig = value.get(SIG)
        if sig == SECRET_SIG:
            return SECRET
        if sig == OUTPUT_SIG:
            if value.get("secret"):
                return SECRET
            return plain(value["value"]) if "value" in value else UNKNOWN
        if sig == RESOURCE_SIG:
            return value.get("urn")
        if sig in (ASSET_SIG, ARCHIVE_SIG):
            return {k: v for k, v in value.items() if k != SIG}
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if value == COMPUTED:
        return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        return int(value)  # protobuf Struct numbers are doubles; the program sent an int
    return value


def mask(value: Any, secrets) -> Any:
    """``value`` (plain JSON) with every string that contains one of ``secrets`` replaced by ``"[secret]"``. For
    invoke arguments: an invoke's arguments carry no secret marking (the SDK unwraps them; the engine neither stores
    nor shows them), but the plan prints them, and a value that came in secret must not appear there."""
    if isinstance(value, str):
        return SECRET if any(secret in value for secret in secrets) else value
    if isinstance(value, dict):
        return {key: mask(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [mask(item, secrets) for item in value]
    return value


#: The characters that make pulumi-kubernetes write a key bracketed and quoted (``convertPatchToDiff``'s
#: ``addPatchValueToDiff``: ``strings.ContainsAny(v, `."[]`)``, provider/pkg/provider/provider.go @ 94977969).
_BRACKETED = frozenset('."[]')


def join_path(parent: str, key: Any) -> str:
    """A property path as pulumi-kubernetes writes a detailed-diff path (``convertPatchToDiff``, module constant above):
    ``a.b``, ``a[0]``, and ``a["b.c"]`` for a key holding ``.``, ``"``, ``[`` or ``]``, only ``"`` escaped (``\\"``);
    any other key, ``a/b`` or ``a b`` too, is written plain. Each parses back (``offline.engine
    .parse_property_path``) to the same keys."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if _BRACKETED.intersection(key):
        escaped = key.replace('"', '\\"')
        return f'{parent}["{escaped}"]'
    return f"{parent}.{key}" if parent else key


def secret_fingerprints(type_: str, wire: Mapping[str, Any]) -> dict[str, str]:
    """Property path -> fingerprint of every secret in a wire-format property map, plus the parts the provider's
    diff looks at on their own (:func:`offline.replacement.secret_parts`). The plan prints secrets as ``[secret]``;
    the fingerprints let two plans tell a changed secret from an unchanged one."""
    found: dict[str, str] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            sig = value.get(SIG)
            if sig == SECRET_SIG or (sig == OUTPUT_SIG and value.get("secret") and "value" in value):
                inner = reveal(value.get("value"))
                found[path] = replacement.fingerprint(inner)
                found.update(replacement.secret_parts(type_, path, inner))
            elif sig is None:
                for key, item in value.items():
                    walk(item, join_path(path, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, join_path(path, index))

    for key, item in wire.items():
        walk(item, join_path("", key))
    return found


def reveal(value: Any) -> Any:
    """A wire value with secret wrappers removed (the plaintext, for fingerprints only; never printed)."""
    if isinstance(value, dict):
        if value.get(SIG) in (SECRET_SIG, OUTPUT_SIG):
            return reveal(value.get("value"))
        return {key: reveal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [reveal(item) for item in value]
    return value
