#!/usr/bin/env bash
# Wait (bounded; a check every 3 s, then every 6 s: scripts/lib.sh) for the private link service AKS creates
# from the Pyroscope Service's azure-pls-* annotations, then print its ARM id.
# Environment: PLS_RESOURCE_GROUP, PLS_NAME, TIMEOUT_SECONDS; optional POLL_INITIAL_SECONDS, POLL_MAX_SECONDS.
# Mirrors: GET .../Microsoft.Network/privateLinkServices/{name} (az network private-link-service show).
set -euo pipefail
STEP=wait-for-private-link-service
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_env PLS_RESOURCE_GROUP PLS_NAME TIMEOUT_SECONDS

log "waiting up to ${TIMEOUT_SECONDS}s for private link service ${PLS_NAME} in ${PLS_RESOURCE_GROUP} (AKS creates it after the internal load balancer)"
start_clock "$TIMEOUT_SECONDS"
while :; do
  if out=$(az network private-link-service show --resource-group "$PLS_RESOURCE_GROUP" --name "$PLS_NAME" \
      --query "[id, provisioningState || '']" --output tsv 2>"$ERRFILE"); then
    read -r pls_id state <<<"$(tr '\n' '\t' <<<"$out")"
    if [ "$state" = "Succeeded" ]; then
      log "found ${pls_id}"
      printf '%s\n' "$pls_id"
      exit 0
    fi
    [ "$state" != "Failed" ] || die "private link service ${PLS_NAME} exists but its provisioningState is Failed; see its activity log (az monitor activity-log list --resource-id ${pls_id}) and the Service's events (kubectl -n gadget get events)"
    found_state=$state
    log "found, provisioningState ${state:-unknown}; waiting"
  elif not_found "$ERRFILE" || transient "$ERRFILE"; then
    log "not there yet ($(last_error "$ERRFILE" | cut -c1-120))"
  else
    die "az network private-link-service show failed: $(last_error "$ERRFILE")"
  fi
  if ! backoff; then
    [ -z "${found_state:-}" ] || die "private link service ${PLS_NAME} exists but stayed in provisioningState ${found_state} for ${TIMEOUT_SECONDS}s; run pulumi up again later"
    die "private link service ${PLS_NAME} did not appear in ${PLS_RESOURCE_GROUP} within ${TIMEOUT_SECONDS}s; check the Service's annotations and EXTERNAL-IP (kubectl -n gadget get svc pyroscope -o yaml), load balancer events (kubectl -n gadget get events), and that the cluster identity may create private link services in that resource group"
  fi
done
