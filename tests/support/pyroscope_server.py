"""A stand-in for the Pyroscope server's limits, SIMULATED: the registries refuse Pyroscope's server (AGPL, 403), so
the rules the tests need are restated from grafana/pyroscope at tag v1.15.0 (commit 38a40a93):

- :func:`validate_range`: the query frontend's ``ValidateRangeRequest`` (``pkg/validation/validate.go``), applied to
  every read (``pkg/frontend/frontend_*.go``): a range ending before now minus ``-querier.max-query-lookback`` is
  empty, an earlier start moves up to it, then a range longer than ``-querier.max-query-length`` is refused with
  ``QueryTooLongErrorMsg``; ``0`` disables either. Its upstream test table, ``Test_ValidateRangeRequest``, is
  replayed in tests/support's own test.
- :data:`DEFAULTS`: the flags' defaults (``pkg/validation/limits.go`` ``RegisterFlags``).
- :class:`RateLimiter`: the distributor's per-tenant ingestion limit (``pkg/distributor/distributor.go``
  ``rateLimit``: ``AllowN(now, tenant, bytes)`` per profile, its decompressed size and label bytes, on a token bucket
  of ``-distributor.ingestion-rate-limit-mb`` per second divided by the healthy distributors (``newGlobalRateStrategy``)
  and ``-distributor.ingestion-burst-size-mb`` (not divided); past it the profile is refused ``ResourceExhausted``
  (429 on the Connect push API, 422 on ``/ingest``: ``pkg/ingester/pyroscope/ingest_handler.go``) and
  ``pyroscope_discarded_samples_total{reason="rate_limited",tenant}`` grows by one per profile, whatever its name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

DEFAULTS = {"querier.max-query-lookback": "7d", "querier.max-query-length": "24h",
            "distributor.ingestion-rate-limit-mb": "4", "distributor.ingestion-burst-size-mb": "2"}
#: Prometheus ``model.Duration`` units, largest first, and whether ``Duration.String`` prints the unit only when it
#: divides the duration exactly (years and weeks: "90d" rather than "12w6d"; prometheus/common ``model/time.go``).
_UNITS = (("y", 365 * 86400_000), ("w", 7 * 86400_000), ("d", 86400_000), ("h", 3600_000), ("m", 60_000),
          ("s", 1000), ("ms", 1))
_EXACT = ("y", "w")
_DURATION = re.compile("".join(rf"(?:(\d+){unit})?" for unit, _ in _UNITS))
QUERY_TOO_LONG = "the query time range exceeds the limit (max_query_length, actual: {actual}, limit: {limit})"
BYTES_IN_MB = 1024 * 1024  # limits.go: bytesInMB = 1048576


class QueryLimitError(ValueError):
    """A range the query frontend refuses (connect ``InvalidArgument``, reason ``query_limit``)."""


def parse_duration(text: str) -> int:
    """A ``model.Duration`` (``14d``, ``3d1h``, ``0``) in milliseconds."""
    if text == "0":
        return 0
    found = _DURATION.fullmatch(text)
    if not text or not found:
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(count) * ms for count, (_, ms) in zip(found.groups(), _UNITS) if count)


def prometheus_duration(ms: int) -> str:
    """``model.Duration.String``: ``48h`` -> ``2d``, ``73h`` -> ``3d1h``, ``15d`` -> ``15d`` (not ``2w1d``), ``0`` ->
    ``0s``."""
    if ms == 0:
        return "0s"
    parts = []
    for unit, size in _UNITS:
        if ms >= size and not (unit in _EXACT and ms % size):
            parts.append(f"{ms // size}{unit}")
            ms %= size
    return "".join(parts)


def go_duration(ms: int) -> str:
    """``time.Duration.String`` for whole milliseconds: ``73h0m0s``, ``1m30.5s``, ``500ms``, ``0s``."""
    if 0 < ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "")
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def limits(flags: dict) -> dict:
    """The server's limits from its ``-flag=value`` extra args (``{"querier.max-query-length": "15d", ...}``),
    defaults where unset."""
    return {**DEFAULTS, **{key: str(value) for key, value in flags.items()}}


def validate_range(flags: dict, start_ms: int, end_ms: int, now_ms: int) -> tuple[int, int, bool]:
    """``ValidateRangeRequest``: (start, end, empty) as the query frontend runs the query; QueryLimitError when the
    range is too long, ValueError when it is missing or inverted."""
    if not start_ms or not end_ms:
        raise ValueError("missing time range in the query")
    if start_ms > end_ms:
        raise ValueError("query start time is after end time")
    set_ = limits(flags)
    lookback = parse_duration(set_["querier.max-query-lookback"])
    if lookback > 0:
        earliest = now_ms - lookback
        if end_ms < earliest:
            return start_ms, end_ms, True
        start_ms = max(start_ms, earliest)
    length = parse_duration(set_["querier.max-query-length"])
    if length > 0 and end_ms - start_ms > length:
        raise QueryLimitError(QUERY_TOO_LONG.format(actual=go_duration(end_ms - start_ms),
                                                    limit=prometheus_duration(length)))
    return start_ms, end_ms, False


@dataclass
class RateLimiter:
    """One distributor's token bucket per tenant (golang.org/x/time/rate ``Limiter.AllowN``: tokens refill at the rate
    divided by ``distributors`` bytes a second up to ``burst``; a profile takes its bytes or is refused whole)."""

    flags: dict
    distributors: int = 1
    tokens: dict = field(default_factory=dict)
    last: dict = field(default_factory=dict)
    discarded: dict = field(default_factory=dict)

    def allow(self, tenant: str, now_s: float, size_bytes: int, profiles: int = 1) -> bool:
        set_ = limits(self.flags)
        rate = float(set_["distributor.ingestion-rate-limit-mb"]) * BYTES_IN_MB / self.distributors
        burst = int(float(set_["distributor.ingestion-burst-size-mb"]) * BYTES_IN_MB)
        tokens = min(burst, self.tokens.get(tenant, burst) + rate * (now_s - self.last.get(tenant, now_s)))
        self.last[tenant] = now_s
        if size_bytes > tokens:
            self.tokens[tenant] = tokens
            self.discarded[tenant] = self.discarded.get(tenant, 0) + profiles
            return False
        self.tokens[tenant] = tokens - size_bytes
        return True

    def metrics(self) -> str:
        """The counter as ``/metrics`` exposes it (Prometheus text format)."""
        lines = ["# HELP pyroscope_discarded_samples_total The total number of samples that were discarded.",
                 "# TYPE pyroscope_discarded_samples_total counter"]
        lines += [f'pyroscope_discarded_samples_total{{reason="rate_limited",tenant="{tenant}"}} {count}'
                  for tenant, count in sorted(self.discarded.items())]
        return "\n".join(lines) + "\n"
