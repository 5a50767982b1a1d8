# shellcheck shell=bash
# Shared helpers for the step scripts. Sourced, not run. Bash 4+, the Azure CLI (az >= 2.72) on PATH.
# Every step logs to stderr with its name, prints its result (one line) on stdout, and never prints tokens.
# Nor secrets: MASK_VALUES (set by steps/command.py when config came in secret) holds the secret values, one
# per line, longest first; log masks each as [secret], wherever it appears (a node resource group or an ARM id carries the
# cluster's or Grafana's name). The result on stdout stays whole: it is the step's output, which the engine then
# keeps secret and does not log (steps/command.py with_secret_mask).

# What the Pulumi CLI hands every plugin, and pulumi-command each step, that nothing a step runs needs: the Pulumi
# Cloud login (CLI 3.247.0 and later, pulumi/pulumi#23589), a stack's passphrase, and what lets a process mint a new
# Azure or Pulumi token (steps/azcli.py DEPLOY_CREDENTIALS drops the same list; az uses its own login).
unset PULUMI_ACCESS_TOKEN PULUMI_API PULUMI_CONFIG_PASSPHRASE PULUMI_CONFIG_PASSPHRASE_FILE PULUMI_GITSSH_PASSPHRASE \
  ACTIONS_ID_TOKEN_REQUEST_TOKEN ACTIONS_ID_TOKEN_REQUEST_URL ARM_OIDC_TOKEN ARM_OIDC_REQUEST_TOKEN ARM_OIDC_REQUEST_URL \
  ARM_CLIENT_SECRET ARM_CLIENT_CERTIFICATE_PASSWORD

# mask TEXT...: TEXT with every line of MASK_VALUES replaced by [secret]. A first pass marks each occurrence
# with \x01 (never in a value), so a value found inside an earlier mask is not masked again.
mask() {
  local text="$*" value
  if [ -n "${MASK_VALUES:-}" ]; then
    while IFS= read -r value; do
      [ -z "$value" ] || text=${text//"$value"/$'\x01'}
    done <<<"$MASK_VALUES"
    text=${text//$'\x01'/[secret]}
  fi
  printf '%s' "$text"
}

log() { printf '%s: %s\n' "${STEP:-step}" "$(mask "$*")" >&2; }

die() {
  log "error: $*"
  exit 1
}

# require_env NAME...: fail with one line naming the first missing or empty variable.
require_env() {
  local name
  for name in "$@"; do
    [ -n "${!name:-}" ] || die "environment variable $name is required"
  done
}

# Polling, bounded by a deadline. A check starts DELAY seconds after the previous check started (not after it
# ended), so the check's own duration does not stretch the schedule: a wait notices its event at most one
# DELAY plus one check after it happens. DELAY is POLL_INITIAL_SECONDS (default 3) at first, doubling up to
# POLL_MAX_SECONDS (default 6): with checks of up to 4 s every event is noticed within 10 s, at one ARM read per
# 3-6 s per waiting step (bench/deploy_sim.py puts 50 stacks against ARM's documented read limits).
#   start_clock TIMEOUT_SECONDS  - start the deadline; the first check runs at once
#   backoff                      - sleep until the next check is due, never past the deadline; returns 1 once
#                                  the deadline has passed
# now_ms: milliseconds on the wall clock (bash 5 EPOCHREALTIME; whole seconds from SECONDS on bash 4).
now_ms() {
  local t=${EPOCHREALTIME:-}
  if [ -n "$t" ]; then
    t=${t/[.,]/}  # microseconds; the separator follows the locale
    printf '%s\n' $((10#$t / 1000))
  else
    printf '%s\n' $((SECONDS * 1000))
  fi
}

start_clock() {
  LAST_CHECK_MS=$(now_ms)
  DEADLINE_MS=$((LAST_CHECK_MS + $1 * 1000))
  DELAY=${POLL_INITIAL_SECONDS:-3}
}

backoff() {
  local now wait_ms
  now=$(now_ms)
  [ "$now" -lt "$DEADLINE_MS" ] || return 1
  wait_ms=$((LAST_CHECK_MS + DELAY * 1000 - now))
  [ "$wait_ms" -le $((DEADLINE_MS - now)) ] || wait_ms=$((DEADLINE_MS - now))
  [ "$wait_ms" -le 0 ] || sleep "$((wait_ms / 1000)).$(printf '%03d' $((wait_ms % 1000)))"
  DELAY=$((DELAY * 2))
  [ "$DELAY" -le "${POLL_MAX_SECONDS:-6}" ] || DELAY=${POLL_MAX_SECONDS:-6}
  LAST_CHECK_MS=$(now_ms)
  return 0
}

# transient FILE: true if an az error (its stderr in FILE) is worth retrying: ARM 409 ConflictInProcessing
# or AnotherOperationInProgress, 429 throttling, or a 5xx from the service.
transient() {
  grep -qiE 'ConflictInProcessing|AnotherOperationInProgress|Too ?Many ?Requests|\(429\)|TooManyRequests|Internal ?Server ?Error|Service ?Unavailable|Gateway ?Time-?out|Bad ?Gateway' "$1"
}

# not_found FILE: true if the az error says the resource itself does not exist (yet): ARM's
# ResourceNotFound, not ResourceGroupNotFound or SubscriptionNotFound, which no wait will cure.
not_found() {
  grep -qE '\(ResourceNotFound\)|Code: ResourceNotFound' "$1"
}

# last_error FILE: the last non-empty line of an az error, for one-line messages.
# last_error FILE: its last non-blank line, masked here (before any caller shortens it with cut: a secret cut in
# half no longer matches MASK_VALUES, and half a secret is still a secret).
last_error() { mask "$(grep -v '^[[:space:]]*$' "$1" | tail -n 1)"; }

ERRFILE=$(mktemp)
trap 'rm -f "$ERRFILE"' EXIT
