# Shared helpers for the step scripts. Sourced, not run. Bash 4+, the Azure CLI (az >= 2.72) on PATH.
# Every step logs to stderr with its name, prints its result (one line) on stdout, and never prints tokens.

log() { printf '%s: %s\n' "${STEP:-step}" "$*" >&2; }

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

# Polling with exponential backoff, bounded by a deadline.
#   start_clock TIMEOUT_SECONDS  - start the deadline (POLL_INITIAL_SECONDS, default 5, doubles up to
#                                  POLL_MAX_SECONDS, default 30)
#   backoff                      - sleep the next delay, never past the deadline; returns 1 once it has passed
start_clock() {
  DEADLINE=$((SECONDS + $1))
  DELAY=${POLL_INITIAL_SECONDS:-5}
}

backoff() {
  local remaining=$((DEADLINE - SECONDS))
  [ "$remaining" -gt 0 ] || return 1
  local wait=$((DELAY < remaining ? DELAY : remaining))
  sleep "$wait"
  DELAY=$((DELAY * 2))
  [ "$DELAY" -le "${POLL_MAX_SECONDS:-30}" ] || DELAY=${POLL_MAX_SECONDS:-30}
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
last_error() { grep -v '^[[:space:]]*$' "$1" | tail -n 1; }

ERRFILE=$(mktemp)
trap 'rm -f "$ERRFILE"' EXIT
