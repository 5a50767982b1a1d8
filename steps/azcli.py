"""Helpers for the Python step scripts (Grafana datasources and dashboard): run ``az``, classify its
errors, retry transient ones with bounded exponential backoff.

Owns: :func:`az` and :func:`rest` (every HTTP call, ARM or Grafana's API with the Azure Managed Grafana audience),
:func:`download`, :class:`AzError` (``kind``: not_found, conflict, transient, ...) and :class:`AzNotInstalled`,
:class:`Step` (one-line failures, retries, the "workspace already gone" check before a delete), :class:`Owner` (the
owner id stamped under :data:`OWNER_KEY`) and the URL masking of log lines. Inputs: the step's environment. Outputs:
az's parsed JSON. Errors: :class:`AzError`; a step's failure is one ``error:`` line and exit 1. Standard library only
(any ``python3`` 3.9+). Upstream: Azure/azure-cli ``az rest``; why az only: docs/decisions/az-cli-steps.md.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.parse
from typing import Any, Callable, Mapping, Optional, TypeVar

GRAFANA_AUDIENCE = "ce34e7e5-485f-4d76-964f-b3d2b16d1e4f"
#: Microsoft.Dashboard API version for the workspace check when API_VERSION is unset (steps/command.py
#: DASHBOARD_API_VERSION; tests/steps/test_azcli.py holds them equal).
DASHBOARD_API_VERSION = "2024-10-01"
#: Where a step stamps its owner id: a key of a datasource's jsonData, a top-level key of the dashboard JSON.
OWNER_KEY = "aksGpuObservabilityOwner"
T = TypeVar("T")

_TRANSIENT = re.compile(
    r"Too ?Many ?Requests|\(429\)|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out|"
    r"ConflictInProcessing|AnotherOperationInProgress|Connection (?:aborted|reset|refused)|timed out",
    re.IGNORECASE,
)
#: Grafana's answer to a PUT or DELETE of a provisioned datasource (grafana/grafana pkg/api/datasources.go @ 001e0d76,
#: ``updateDataSourceByID`` and ``DeleteDataSourceByUID``: 403 "Cannot update/delete read-only data source").
_READ_ONLY = re.compile(r"Cannot (?:update|delete) read-only data source", re.IGNORECASE)
#: The host did not answer at all (name resolution or connection failure): requests/urllib3 as az reports them.
_UNREACHABLE = re.compile(r"NameResolutionError|Failed to resolve|Name or service not known|getaddrinfo failed|"
                          r"Max retries exceeded|Failed to establish a new connection", re.IGNORECASE)


class AzError(Exception):
    """A failed az call. ``kind``: ``read_only`` (Grafana's 403 for a provisioned datasource: never retried),
    ``unreachable`` (the host did not answer: name resolution or connection failure), ``transient`` (429, 5xx,
    ARM's ConflictInProcessing, a reset or timed-out connection), ``not_found`` (404), ``conflict`` (409, not a
    retryable one), ``forbidden`` (401/403), ``missing`` (no ``az`` at all, :class:`AzNotInstalled`) or ``other``.
    ``last_line``: the line that says what went wrong (for az's "unexpected error" traceback, the ``ERROR:`` line
    naming the exception, not the trailer)."""

    def __init__(self, argv: list[str], stderr: str) -> None:
        self.argv, self.stderr = argv, stderr
        lines = [line for line in stderr.splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR: ") and "Here is the traceback" not in line]
        if errors and "Here is the traceback" in stderr:
            self.last_line = errors[0]
        else:
            self.last_line = lines[-1] if lines else "az exited with an error and printed nothing"
        super().__init__(self.last_line)

    @property
    def kind(self) -> str:
        if _READ_ONLY.search(self.stderr):
            return "read_only"
        if _UNREACHABLE.search(self.stderr):
            return "unreachable"
        if _TRANSIENT.search(self.stderr):
            return "transient"
        if re.search(r"Not Found|ResourceNotFound|\(404\)", self.stderr):
            return "not_found"
        if re.search(r"ERROR: Conflict|\(409\)", self.stderr):
            return "conflict"
        if re.search(r"ERROR: (?:Unauthorized|Forbidden)|\(40[13]\)", self.stderr):
            return "forbidden"
        return "other"


#: The one line for a machine without ``az``: the steps and tools call nothing else.
AZ_MISSING = ("the Azure CLI (az) is not on PATH; install Azure CLI 2.72 or newer "
              "(https://learn.microsoft.com/cli/azure/install-azure-cli) and sign in with `az login`")


class AzNotInstalled(AzError):
    """``az`` is not on PATH: kind ``missing``, never retried; its message is :data:`AZ_MISSING`."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv, AZ_MISSING)

    @property
    def kind(self) -> str:
        return "missing"


#: The environment variable with the values a step must never print, one per line, longest first
#: (steps/command.py ``with_secret_mask``; steps/lib.sh ``mask`` reads the same).
MASK_VALUES = "MASK_VALUES"


def mask(text: str, environ: Optional[dict] = None) -> str:
    """``text`` with every value listed in ``MASK_VALUES`` replaced by ``[secret]``, in one pass (longest first, so a
    value inside a longer one is masked with it, and a mask is never masked again)."""
    values = sorted({line for line in (environ if environ is not None else os.environ).get(MASK_VALUES, "").splitlines()
                     if line}, key=lambda v: (-len(v), v))
    return re.sub("|".join(map(re.escape, values)), "[secret]", text) if values else text


def brief(text: str, limit: int) -> str:
    """At most ``limit`` characters of ``text``, masked first (:func:`mask`): a secret cut short no longer matches
    ``MASK_VALUES``, and part of a secret is still secret."""
    return mask(text)[:limit]


def shown_url(url: str) -> str:
    """``url`` as a log may show it: ``scheme://host[:port]/path``, without userinfo, query string or fragment (a
    SAS URL's ``sig=`` is the credential itself; Azure Storage, "Grant limited access with shared access
    signatures": "treat the SAS token as you would the account key"). Not a URL: returned unchanged."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"


def mask_url_secrets(url: str, environ: Optional[dict] = None) -> None:
    """Add what ``url`` carries beyond :func:`shown_url` (its query string, fragment, userinfo and each query value
    of 8 characters or more, as written and decoded) to ``MASK_VALUES`` in ``environ`` (default ``os.environ``),
    so that an error line that quotes the URL (urllib3's "Max retries exceeded with url: /path?query") is masked."""
    env = environ if environ is not None else os.environ
    if shown_url(url) == url:
        return
    parts = urllib.parse.urlsplit(url)
    hidden = [url, parts.query, parts.fragment]
    if "@" in parts.netloc:
        hidden.append(parts.netloc.rsplit("@", 1)[0])
    for pair in parts.query.split("&"):
        raw = pair.split("=", 1)[1] if "=" in pair else ""
        hidden += [raw, urllib.parse.unquote_plus(raw)]
    hidden = sorted({v for v in hidden if len(v) >= 8 and "\n" not in v}, key=lambda v: (-len(v), v))
    if hidden:
        env[MASK_VALUES] = "\n".join([*hidden, *env.get(MASK_VALUES, "").splitlines()])


class Step:
    """Logging and failing for one step: lines on stderr prefixed with the step name, with the secret values masked
    (:func:`mask`). What a step prints on stdout (its result) is not masked: it is the step's output."""

    def __init__(self, name: str) -> None:
        self.name = name

    def log(self, message: str) -> None:
        print(f"{self.name}: {mask(message)}", file=sys.stderr, flush=True)

    def fail(self, message: str) -> "NoReturn":  # noqa: F821
        self.log(f"error: {message}")
        raise SystemExit(1)

    def env(self, name: str) -> str:
        value = os.environ.get(name, "")
        if not value:
            self.fail(f"environment variable {name} is required")
        return value

    def delete(self, what: str, url: str, timeout: float) -> None:
        """DELETE ``url`` (Grafana API), retrying transient errors; an object already gone is success."""
        try:
            self.retry(f"deleting {what}", lambda: rest("delete", url), timeout)
            self.log(f"deleted {what}")
        except AzError as error:
            if error.kind != "not_found":
                self.fail(f"deleting {what} failed: {error.last_line}")
            self.log(f"{what} already gone")

    def delete_owned(self, what: str, url: str, timeout: float, marker: Callable[[Any], Optional[str]],
                     owner: "Owner", foreign: Callable[[Any], Optional[str]] = lambda _: None) -> None:
        """Delete the object at ``url`` unless it carries another step's owner id (``marker(object)``) or is not
        this stack's at all (``foreign(object)`` returns why, e.g. a provisioned datasource); an object already
        gone, or one that carries no owner id or this step's, is deleted (as :meth:`delete`). A Grafana workspace
        that no longer exists (:meth:`grafana_gone`) holds nothing to delete."""
        if self.grafana_gone(timeout):
            return
        existing = self.read(what, url, timeout)
        if existing is None:
            self.log(f"{what} already gone")
            return
        reason = foreign(existing)
        if reason:
            self.log(f"{what} {reason}; left in place")
            return
        holder = marker(existing)
        if owner.held_by_another(holder):
            self.log(f"{what} now belongs to another step (owner {holder}, a replacement created before this "
                     "delete); left in place")
            return
        self.delete(what, url, timeout)

    def grafana_gone(self, timeout: float) -> bool:
        """True when the Grafana workspace named by ``GRAFANA_ID`` (ARM id; ``API_VERSION``, default
        :data:`DASHBOARD_API_VERSION`) no longer exists: ARM answers its GET with 404 (``ResourceNotFound``, or
        ``ResourceGroupNotFound`` when its resource group went with it). Logs why and returns True then. False
        when ``GRAFANA_ID`` is unset (a state written before the step had it) or ARM answers anything else (the
        Grafana API then answers for itself); transient errors are retried up to ``timeout`` seconds. Reading the
        workspace needs ARM read on it, which the stack's own lookup (``dashboard.getGrafana``) already needs."""
        grafana_id = os.environ.get("GRAFANA_ID", "")
        if not grafana_id:
            return False
        url = f"{grafana_id}?api-version={os.environ.get('API_VERSION') or DASHBOARD_API_VERSION}"
        name = grafana_id.rstrip("/").rsplit("/", 1)[-1]
        try:
            self.retry(f"reading Grafana workspace {name}", lambda: rest("get", url, audience=None), timeout)
        except AzError as error:
            if error.kind == "not_found":
                self.log(f"Grafana workspace {name} no longer exists ({brief(error.last_line, 120)}); "
                         "nothing to delete")
                return True
            self.log(f"could not tell whether Grafana workspace {name} exists ({brief(error.last_line, 120)}); "
                     "asking Grafana")
        return False

    def read(self, what: str, url: str, timeout: float) -> Any:
        """GET ``url`` (Grafana API), retrying transient errors; None when it does not exist."""
        try:
            return self.retry(f"reading {what}", lambda: rest("get", url), timeout)
        except AzError as error:
            if error.kind != "not_found":
                self.fail(f"reading {what} failed: {error.last_line}")
            return None

    def retry(self, what: str, call: Callable[[], T], timeout: float) -> T:
        """``call()`` until it returns or raises a non-transient AzError; transient and unreachable errors (a new
        workspace's name may take a while to resolve), and 401/403 when RETRY_FORBIDDEN=true (while a role assignment
        the stack just made propagates; never Grafana's read-only 403), are retried until ``timeout`` seconds have
        passed, then the step fails with the last error. Attempts start POLL_INITIAL_SECONDS (default 3) apart,
        doubling up to POLL_MAX_SECONDS (default 6), counted from the start of the previous attempt, as
        steps/lib.sh's ``backoff`` does: a role that has propagated is noticed within one delay plus one call."""
        retried = {"transient", "unreachable"}
        if os.environ.get("RETRY_FORBIDDEN") == "true":
            retried.add("forbidden")
        deadline = time.monotonic() + timeout
        delay = float(os.environ.get("POLL_INITIAL_SECONDS", "3"))
        ceiling = float(os.environ.get("POLL_MAX_SECONDS", "6"))
        while True:
            started = time.monotonic()
            try:
                return call()
            except AzError as error:
                if error.kind not in retried:
                    raise
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.fail(f"{what} kept failing for {timeout:.0f}s: {error.last_line}")
                self.log(f"{what}: retrying after {brief(error.last_line, 160)}")
                time.sleep(max(0.0, min(started + delay - time.monotonic(), remaining)))
                delay = min(delay * 2, ceiling)


class Owner:
    """This step instance's owner id (steps/command.py).

    ``previous``: the owner id in ``PULUMI_COMMAND_STDOUT`` (``owner=<16 hex>``, printed by this step's last create
    or update; pulumi-command passes it to updates and deletes), None on a create. ``id``: ``previous`` or a
    fresh one. ``claim``: true on a create (or a state from before owner ids): write even an up-to-date object,
    so that a create-first replacement's old delete finds it stamped by another step."""

    def __init__(self, environ: Optional[dict] = None) -> None:
        found = re.search(r"\bowner=([0-9a-f]{16})\b",
                          (environ if environ is not None else os.environ).get("PULUMI_COMMAND_STDOUT", ""))
        self.previous = found.group(1) if found else None
        self.id = self.previous or secrets.token_hex(8)
        self.claim = self.previous is None

    def line(self, uid: str) -> str:
        """What the step prints on stdout: ``<uid> owner=<id>``."""
        return f"{uid} owner={self.id}"

    def held_by_another(self, marker: Optional[str]) -> bool:
        """True if an object stamped ``marker`` belongs to another step instance."""
        return bool(marker) and marker != self.previous


#: What the Pulumi CLI hands every plugin, and pulumi-command each step, that nothing ``az`` runs needs: the Pulumi
#: Cloud login (CLI 3.247.0 and later, pulumi/pulumi#23589), a stack's passphrase, and what lets a process mint a new
#: Azure or Pulumi token (GitHub's OIDC request pair, in a job with ``id-token: write``; the azure-native provider's
#: OIDC token and client secret). ``az`` uses its own login.
DEPLOY_CREDENTIALS = ("PULUMI_ACCESS_TOKEN", "PULUMI_API", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE",
                      "PULUMI_GITSSH_PASSPHRASE", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL",
                      "ARM_OIDC_TOKEN", "ARM_OIDC_REQUEST_TOKEN", "ARM_OIDC_REQUEST_URL", "ARM_CLIENT_SECRET",
                      "ARM_CLIENT_CERTIFICATE_PASSWORD")


def without_deploy_credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less :data:`DEPLOY_CREDENTIALS`."""
    return {k: v for k, v in environ.items() if k not in DEPLOY_CREDENTIALS}


def az(*args: str) -> str:
    """Run ``az <args>`` without :data:`DEPLOY_CREDENTIALS` in its environment; return stdout; raise AzError on a
    non-zero exit, AzNotInstalled when ``az`` is not on PATH."""
    argv = ["az", *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=without_deploy_credentials(os.environ))
    except FileNotFoundError:
        raise AzNotInstalled(argv) from None
    if done.returncode != 0:
        raise AzError(argv, done.stderr)
    return done.stdout


def rest(method: str, url: str, body: Optional[Any] = None, audience: Optional[str] = GRAFANA_AUDIENCE) -> Any:
    """``az rest`` with a JSON body (sent from a temporary file, keys sorted) and the token audience;
    returns the parsed JSON response, or None when the response is empty."""
    args = ["rest", "--method", method, "--url", url]
    if audience:
        args += ["--resource", audience]
    path = None
    try:
        if body is not None:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
                json.dump(body, fh, sort_keys=True)
                path = fh.name
            args += ["--body", f"@{path}"]
        out = az(*args, "--output", "json")
    finally:
        if path:
            os.unlink(path)
    return json.loads(out) if out.strip() else None


def download(url: str, path: str) -> None:
    """Save the bytes at a public https ``url`` to ``path`` exactly as served (no token is sent)."""
    az("rest", "--method", "get", "--url", url, "--skip-authorization-header", "--output-file", path,
       "--output", "none")


def contains(actual: Any, desired: Any) -> bool:
    """True if every key in ``desired`` (recursively, for objects) has the same value in ``actual``."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(key in actual and contains(actual[key], value)
                                                for key, value in desired.items())
    return actual == desired
