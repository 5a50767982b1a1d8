#!/usr/bin/env bash
# Approve exactly the private endpoint connection that Grafana's managed private endpoint created on the
# private link service: the one whose privateEndpoint.id ends with /PRIVATE_ENDPOINT_NAME (Grafana names
# it grafana-<grafanaName>-<mpeName>), never "the first Pending". Already Approved is success. Waits
# (bounded) for the connection to appear. Prints the connection's name. The approval's own answer (the PUT
# returns the connection, azure-cli 2.91.0 aaz network/private_link_service/connection/_update.py: a plain
# PUT, 200, output flattened) ends the step when it says Approved: no second read.
# Environment: PLS_RESOURCE_GROUP, PLS_NAME, PRIVATE_ENDPOINT_NAME, DESCRIPTION, TIMEOUT_SECONDS;
# optional POLL_INITIAL_SECONDS, POLL_MAX_SECONDS.
# Mirrors: PUT .../privateLinkServices/{pls}/privateEndpointConnections/{name} with
# privateLinkServiceConnectionState.status=Approved (az network private-link-service connection update).
set -euo pipefail
STEP=approve-private-endpoint-connection
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_env PLS_RESOURCE_GROUP PLS_NAME PRIVATE_ENDPOINT_NAME DESCRIPTION TIMEOUT_SECONDS

# One row per connection: name, private endpoint id, status. Nulls become '' (az's tsv prints null as None).
query="(privateEndpointConnections || \`[]\`)[].[name, privateEndpoint.id || '', privateLinkServiceConnectionState.status || '']"
want=$(tr '[:upper:]' '[:lower:]' <<<"$PRIVATE_ENDPOINT_NAME")
log "looking for the connection from private endpoint ${PRIVATE_ENDPOINT_NAME} on ${PLS_NAME} (up to ${TIMEOUT_SECONDS}s)"
start_clock "$TIMEOUT_SECONDS"
while :; do
  if rows=$(az network private-link-service show --resource-group "$PLS_RESOURCE_GROUP" --name "$PLS_NAME" \
      --query "$query" --output tsv 2>"$ERRFILE"); then
    matches=()
    while IFS=$'\t' read -r name endpoint status; do
      [ -n "$name" ] || continue
      last=$(tr '[:upper:]' '[:lower:]' <<<"${endpoint##*/}")
      [ "$last" = "$want" ] && matches+=("${name}"$'\t'"${status}")
    done <<<"$rows"
    if [ "${#matches[@]}" -gt 1 ]; then
      die "${#matches[@]} connections on ${PLS_NAME} come from private endpoint ${PRIVATE_ENDPOINT_NAME}; refusing to guess"
    elif [ "${#matches[@]}" -eq 1 ]; then
      IFS=$'\t' read -r name status <<<"${matches[0]}"
      case "$status" in
        Approved)
          log "connection ${name} is Approved"
          printf '%s\n' "$name"
          exit 0
          ;;
        Pending)
          log "approving connection ${name}"
          if answer=$(az network private-link-service connection update --resource-group "$PLS_RESOURCE_GROUP" \
              --service-name "$PLS_NAME" --name "$name" --connection-status Approved \
              --description "$DESCRIPTION" --query "privateLinkServiceConnectionState.status || ''" \
              --output tsv 2>"$ERRFILE"); then
            if [ "$answer" = "Approved" ]; then
              log "connection ${name} is Approved"
              printf '%s\n' "$name"
              exit 0
            fi
            log "approval sent (answer: ${answer:-no status}); reading it back"
          else
            transient "$ERRFILE" || die "approving ${name} failed: $(last_error "$ERRFILE")"
            log "approval deferred ($(last_error "$ERRFILE" | cut -c1-120)); retrying"
          fi
          ;;
        *)
          die "connection ${name} is ${status:-in no state}; a ${status:-stateless} connection cannot be approved: replace the managed private endpoint (pulumi up --replace <its URN>) and run pulumi up again"
          ;;
      esac
    else
      log "no connection from ${PRIVATE_ENDPOINT_NAME} yet; waiting"
    fi
  elif transient "$ERRFILE"; then
    log "retrying after: $(last_error "$ERRFILE" | cut -c1-120)"
  else
    die "az network private-link-service show failed: $(last_error "$ERRFILE")"
  fi
  backoff || die "no connection from private endpoint ${PRIVATE_ENDPOINT_NAME} was approved on ${PLS_NAME} within ${TIMEOUT_SECONDS}s; check the managed private endpoint exists (az rest --method get --url <grafana id>/managedPrivateEndpoints?api-version=2024-10-01) and its connection state"
done
