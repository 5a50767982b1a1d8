#!/usr/bin/env bash
# Refresh Grafana's managed private endpoints after the approval (mandatory: Grafana re-syncs its network
# only then), retrying 409 ConflictInProcessing, 429 and 5xx with backoff; then wait until the endpoint
# reports Approved with a private IP, refreshing again every 4th poll. Prints the private IP.
# Reads the endpoint first, and again before each retry: Approved with a private IP means a refresh after this
# approval already ran (the refresh is workspace-wide: another stack's, in the fleet's Grafana phase), so it
# posts none; Grafana shows an approval only after a refresh that follows it (docs/fleet.md, "The floor").
# Environment: GRAFANA_ID (ARM id), MPE_NAME, API_VERSION, TIMEOUT_SECONDS; optional POLL_INITIAL_SECONDS,
# POLL_MAX_SECONDS.
# Mirrors: POST {grafana}/refreshManagedPrivateEndpoints (long-running, no body) and
# GET {grafana}/managedPrivateEndpoints/{name} (properties.connectionState.status, privateLinkServicePrivateIP).
# Queries map null to '' because az's tsv output prints a null as the word None.
set -euo pipefail
STEP=refresh-managed-private-endpoints
# shellcheck source=steps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_env GRAFANA_ID MPE_NAME API_VERSION TIMEOUT_SECONDS

refresh_url="${GRAFANA_ID}/refreshManagedPrivateEndpoints?api-version=${API_VERSION}"
endpoint_url="${GRAFANA_ID}/managedPrivateEndpoints/${MPE_NAME}?api-version=${API_VERSION}"
start_clock "$TIMEOUT_SECONDS"

# refresh: one POST; 0 on success, 1 on a transient failure (logged), exits on any other failure.
refresh() {
  if az rest --method post --url "$refresh_url" --output none 2>"$ERRFILE"; then
    log "refresh requested"
    return 0
  fi
  transient "$ERRFILE" || die "refreshManagedPrivateEndpoints failed: $(last_error "$ERRFILE")"
  log "refresh deferred ($(last_error "$ERRFILE" | cut -c1-120))"
  return 1
}

# refreshed: 0 when the endpoint already reads Approved with a private IP (printed); 1 otherwise, errors included
# (the wait below reports those).
refreshed() {
  local out status ip
  out=$(az rest --method get --url "$endpoint_url" \
      --query "[properties.connectionState.status || '', properties.privateLinkServicePrivateIP || '']" --output tsv 2>"$ERRFILE") || return 1
  read -r status ip <<<"$(tr '\n' '\t' <<<"$out")"
  [ "$status" = "Approved" ] && [ -n "$ip" ] || return 1
  log "managed private endpoint ${MPE_NAME} is Approved with private IP ${ip} already: no refresh needed"
  printf '%s\n' "$ip"
}

log "refreshing managed private endpoints of ${GRAFANA_ID##*/} (up to ${TIMEOUT_SECONDS}s)"
if refreshed; then exit 0; fi
until refresh; do
  backoff || die "refreshManagedPrivateEndpoints kept failing for ${TIMEOUT_SECONDS}s: $(last_error "$ERRFILE"); another Grafana operation may be running, run pulumi up again later"
  if refreshed; then exit 0; fi
done

polls=0
while :; do
  if out=$(az rest --method get --url "$endpoint_url" \
      --query "[properties.connectionState.status || '', properties.privateLinkServicePrivateIP || '']" --output tsv 2>"$ERRFILE"); then
    read -r status ip <<<"$(tr '\n' '\t' <<<"$out")"
    if [ "$status" = "Approved" ] && [ -n "$ip" ]; then
      log "managed private endpoint ${MPE_NAME} is Approved with private IP ${ip}"
      printf '%s\n' "$ip"
      exit 0
    fi
    log "managed private endpoint ${MPE_NAME}: status ${status:-unknown}, private IP ${ip:-none yet}"
  elif transient "$ERRFILE"; then
    log "retrying after: $(last_error "$ERRFILE" | cut -c1-120)"
  else
    die "reading managed private endpoint ${MPE_NAME} failed: $(last_error "$ERRFILE")"
  fi
  polls=$((polls + 1))
  if [ $((polls % 4)) -eq 0 ]; then refresh || true; fi
  backoff || die "managed private endpoint ${MPE_NAME} has no private IP after ${TIMEOUT_SECONDS}s (status ${status:-unknown}); check its connection on the private link service is Approved, then run pulumi up again"
done
