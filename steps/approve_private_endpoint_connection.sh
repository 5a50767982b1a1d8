#!/usr/bin/env bash
# Approve exactly the private endpoint connection that this stack's Grafana managed private endpoint (MPE) created on the
# private link service, and no other. Prints the connection's name. Waits (bounded) for the connection to appear.
#
# Which connection is ours (docs/how-it-works.md, "Whose connection is approved"): its privateEndpoint.id ends with /PRIVATE_ENDPOINT_NAME (Grafana names it
# grafana-<grafanaName>-<mpeName>) AND it proves it comes from this stack's MPE. A name proves nothing: with PLS
# visibility '*' anyone who knows the PLS alias can make, in their own subscription, a private endpoint of that name.
# The proof: the MPE's requestMessage carries APPROVAL_NONCE (a per-stack Pulumi secret), which the PLS owner sees while
# the connection is Pending as privateLinkServiceConnectionState.description (MicrosoftDocs/azure-docs
# articles/private-link/manage-private-endpoint.md @ 024c6fae: with a manual request "service consumer can also specify
# a message with the request to provide more context to the service provider"; the PLS-side PrivateEndpointConnection
# has no other free-text property: Azure/azure-rest-api-specs specification/network/resource-manager/Microsoft.Network/
# stable/2024-05-01/privateLinkService.json). Approving replaces the description with ours, which carries
# APPROVAL_MARKER (an HMAC of the nonce, not the nonce), so a re-run recognises the connection it approved.
#   - Pending with the nonce: ours, approved.     - Approved with the marker (or the nonce): ours, success, no write.
#   - Pending without the nonce, or Approved without marker or nonce (a stranger, approved by hand or by an earlier
#     version of this step that matched the name only): rejected, one line naming its private endpoint's subscription.
#   - Gone between the listing and its rejection (the rejection's GET answers 404 NotFound): nothing to reject, one
#     line; the step goes on with ours.
#   - Rejected by this step earlier (its description starts with REJECTED_BY): ignored.
#   - Any other state (Rejected by hand, Disconnected) without the nonce or the marker: not ours (a stranger's, rejected
#     by its owner or by the PLS owner with a description of their own), ignored, one line the first time; the wait goes
#     on. Ours rejected by hand with a new description cannot be told from it: the wait then times out, naming it.
#   - Ours (nonce or marker) in any other state, while no approvable one of ours is listed: an error saying what to do.
#   - More than one approvable connection with the nonce: someone who can read the managed private endpoint's
#     requestMessage forged one (docs/security.md); an error naming them and the az command to reject the foreign one.
# Each connection's description is read on its own (the whole output is the description): a description is the
# requester's free text, and tsv output does not escape tabs or line breaks (knack 0.14.0 knack/output.py _TsvOutput),
# so in a table it could forge rows. Connection names are <private endpoint name>.<guid> (ARM names: letters, digits,
# '.', '_', '-'), safe inside a JMESPath literal; any other name is skipped.
# The nonce is never printed and never on a command line: it is added to MASK_VALUES (steps/lib.sh mask).
# Environment: PLS_RESOURCE_GROUP, PLS_NAME, PRIVATE_ENDPOINT_NAME, DESCRIPTION, APPROVAL_NONCE, APPROVAL_MARKER,
# TIMEOUT_SECONDS; optional POLL_INITIAL_SECONDS, POLL_MAX_SECONDS.
# Mirrors: PUT .../privateLinkServices/{pls}/privateEndpointConnections/{name} with
# privateLinkServiceConnectionState.status=Approved or Rejected (az network private-link-service connection update;
# Azure/azure-cli src/azure-cli/azure/cli/command_modules/network/aaz/latest/network/private_link_service/connection/
# _update.py @ 32fa2ae5: it GETs the connection and PUTs it back with the new state, 200, output flattened; azure-cli
# 2.91.0 registers the command as azure/cli/command_modules/network/custom.py PrivateEndpointConnectionUpdate
# (commands.py), which makes --connection-status required and restricts it to Approved, Rejected or Removed). The PUT's
# own answer ends the step when it says Approved.
set -euo pipefail
STEP=approve-private-endpoint-connection
# shellcheck source=steps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_env PLS_RESOURCE_GROUP PLS_NAME PRIVATE_ENDPOINT_NAME DESCRIPTION APPROVAL_NONCE APPROVAL_MARKER TIMEOUT_SECONDS
MASK_VALUES="${APPROVAL_NONCE}"$'\n'"${MASK_VALUES:-}"
# shellcheck disable=SC2153 # DESCRIPTION is the environment's (require_env above), not a misspelt local
APPROVED_DESCRIPTION="${DESCRIPTION} (approval ${APPROVAL_MARKER})"
REJECTED_BY="Rejected by aks-gpu-observability"
REJECTED_DESCRIPTION="${REJECTED_BY}: not from the managed private endpoint ${PRIVATE_ENDPOINT_NAME} of this stack"

# One row per connection: name, private endpoint id, status. Nulls become '' (az's tsv prints null as None).
query="(privateEndpointConnections || \`[]\`)[].[name, privateEndpoint.id || '', privateLinkServiceConnectionState.status || '']"
want=$(tr '[:upper:]' '[:lower:]' <<<"$PRIVATE_ENDPOINT_NAME")

# describe NAME: the description of connection NAME on the PLS (stdout); fails as az fails.
describe() {
  az network private-link-service show --resource-group "$PLS_RESOURCE_GROUP" --name "$PLS_NAME" \
    --query "(privateEndpointConnections || \`[]\`)[?name=='$1'] | [0].privateLinkServiceConnectionState.description || ''" \
    --output tsv 2>"$ERRFILE"
}

# update NAME STATUS DESCRIPTION: set the connection's state; prints the state the PUT answers with.
update() {
  az network private-link-service connection update --resource-group "$PLS_RESOURCE_GROUP" \
    --service-name "$PLS_NAME" --name "$1" --connection-status "$2" \
    --description "$3" --query "privateLinkServiceConnectionState.status || ''" --output tsv 2>"$ERRFILE"
}

# gone: true if the last az error says the connection does not exist (any more): the Network RP's NotFound or ARM's
# ResourceNotFound (not ResourceGroupNotFound: that no wait cures, and the next listing fails on it).
gone() { grep -qE '\((Resource)?NotFound\)|Code: (Resource)?NotFound$' "$ERRFILE"; }

# az_failed WHAT: after a failed az call, go on (return 0) for a transient error, else die.
az_failed() {
  transient "$ERRFILE" || die "$1 failed: $(last_error "$ERRFILE")"
  log "retrying after: $(last_error "$ERRFILE" | cut -c1-120)"
}

log "looking for the connection from private endpoint ${PRIVATE_ENDPOINT_NAME} on ${PLS_NAME} (up to ${TIMEOUT_SECONDS}s)"
declare -A ignored=()  # same-name connections not ours in a state no approval changes: name -> one line about it
start_clock "$TIMEOUT_SECONDS"
while :; do
  if rows=$(az network private-link-service show --resource-group "$PLS_RESOURCE_GROUP" --name "$PLS_NAME" \
      --query "$query" --output tsv 2>"$ERRFILE"); then
    ours=()
    other=""
    deferred=false
    while IFS=$'\t' read -r name endpoint status; do
      [ -n "$name" ] || continue
      last=$(tr '[:upper:]' '[:lower:]' <<<"${endpoint##*/}")
      [ "$last" = "$want" ] || continue
      if ! [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]]; then
        log "skipping a connection whose name is no ARM name"
        continue
      fi
      if ! description=$(describe "$name"); then
        az_failed "reading connection ${name}"
        deferred=true
        break
      fi
      subscription=$(cut -d/ -f3 <<<"$endpoint")
      nonce=false marker=false
      [[ "$description" == *"$APPROVAL_NONCE"* ]] && nonce=true
      [[ "$description" == *"(approval ${APPROVAL_MARKER})"* ]] && marker=true
      case "$status" in
        Pending)
          if $nonce; then ours+=("${name}"$'\t'"${status}"$'\t'"${subscription}"); continue; fi
          why="its request does not carry this stack's approval nonce"
          ;;
        Approved)
          if $nonce || $marker; then ours+=("${name}"$'\t'"${status}"$'\t'"${subscription}"); continue; fi
          why="it was Approved without this stack's approval marker (by hand, or by a version of this step that matched the name only)"
          ;;
        *)
          if $nonce || $marker; then
            other="${name}"$'\t'"${status}"
          elif [[ "$description" != "$REJECTED_BY"* && -z "${ignored[$name]:-}" ]]; then
            ignored[$name]="${name} (${status:-no state}, from subscription ${subscription})"
            log "ignoring connection ${name} from private endpoint ${endpoint##*/} in subscription ${subscription}: it is ${status:-in no state} and carries neither this stack's approval nonce nor its marker"
          fi
          continue
          ;;
      esac
      if answer=$(update "$name" Rejected "$REJECTED_DESCRIPTION"); then
        log "rejected connection ${name} from private endpoint ${endpoint##*/} in subscription ${subscription}: ${why}"
      elif gone; then
        log "connection ${name} from subscription ${subscription} is gone (deleted before its rejection): nothing to reject"
      else
        az_failed "rejecting connection ${name} (from subscription ${subscription})"
      fi
    done <<<"$rows"
    if $deferred; then
      :  # a read failed transiently: look again at the next check
    elif [ "${#ours[@]}" -gt 1 ]; then
      found=""
      for entry in "${ours[@]}"; do
        IFS=$'\t' read -r name status subscription <<<"$entry"
        found+="${found:+, }${name} (${status}, subscription ${subscription})"
      done
      die "${#ours[@]} connections on ${PLS_NAME} come from private endpoint ${PRIVATE_ENDPOINT_NAME} with this stack's approval nonce; refusing to guess: ${found}. All but Grafana's were made by someone who can read the managed private endpoint's requestMessage (docs/security.md); reject each foreign one by hand (az network private-link-service connection update --resource-group ${PLS_RESOURCE_GROUP} --service-name ${PLS_NAME} --name <connection name> --connection-status Rejected) and run pulumi up again"
    elif [ "${#ours[@]}" -eq 1 ]; then
      IFS=$'\t' read -r name status subscription <<<"${ours[0]}"
      if [ "$status" = Approved ]; then
        log "connection ${name} is Approved"
        printf '%s\n' "$name"
        exit 0
      fi
      log "approving connection ${name}"
      if answer=$(update "$name" Approved "$APPROVED_DESCRIPTION"); then
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
    elif [ -n "$other" ]; then
      IFS=$'\t' read -r name status <<<"$other"
      die "connection ${name} is ${status:-in no state}; a ${status:-stateless} connection cannot be approved: replace the managed private endpoint (pulumi up --replace <its URN>) and run pulumi up again"
    else
      log "no connection from ${PRIVATE_ENDPOINT_NAME} with this stack's approval nonce yet; waiting"
    fi
  elif transient "$ERRFILE"; then
    log "retrying after: $(last_error "$ERRFILE" | cut -c1-120)"
  else
    die "az network private-link-service show failed: $(last_error "$ERRFILE")"
  fi
  if ! backoff; then
    seen=""
    # ${a[@]+...}: an empty array is unbound under set -u before bash 4.4.
    for entry in ${ignored[@]+"${ignored[@]}"}; do seen+="${seen:+, }${entry}"; done
    [ -z "$seen" ] || seen="; ignored, as they carry neither this stack's approval nonce nor its marker: ${seen} (if one of them is Grafana's, rejected by hand with a new description, replace the managed private endpoint: pulumi up --replace <its URN>)"
    die "no connection from private endpoint ${PRIVATE_ENDPOINT_NAME} was approved on ${PLS_NAME} within ${TIMEOUT_SECONDS}s; check the managed private endpoint exists (az rest --method get --url <grafana id>/managedPrivateEndpoints?api-version=2024-10-01) and its connection state; if it exists and no connection from it with this stack's approval nonce was listed, Grafana may not pass the requestMessage on to its private endpoint (docs/how-it-works.md, \"Whose connection is approved\")${seen}"
  fi
done
