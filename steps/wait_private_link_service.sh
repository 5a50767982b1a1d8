#!/usr/bin/env bash
# Wait (bounded; a check every 3 s, then every 6 s: steps/lib.sh) for the private link service AKS creates
# from the Pyroscope Service's azure-pls-* annotations, check that it is this cluster's, then print its ARM id.
# Environment: PLS_RESOURCE_GROUP, PLS_NAME, TIMEOUT_SECONDS, LOAD_BALANCER_SCOPE (the cluster's load balancers:
# /subscriptions/<id>/resourceGroups/<node resource group>/providers/Microsoft.Network/loadBalancers/), OWNER_SERVICE
# (<namespace>/<name> of the Pyroscope Service), IP_CONFIGURATION_COUNT (the Service's
# azure-pls-ip-configuration-ip-address-count); optional PLS_SUBNET (its azure-pls-ip-configuration-subnet),
# POLL_INITIAL_SECONDS, POLL_MAX_SECONDS.
#
# NAT IPs as annotated: the stack admits the PLS's NAT IPs to Pyroscope (components/pyroscope.py, "Who can reach
# Pyroscope") from the lookup that follows this step. A changed count or subnet makes the cloud provider rebuild every
# IP configuration, dynamic ones with new addresses, after the Service's update and in its own time
# (kubernetes-sigs/cloud-provider-azure pkg/provider/azure_privatelinkservice.go reconcilePLSIpConfigs at 7b31c76c). So
# the PLS is ready only with IP_CONFIGURATION_COUNT configurations, each with its privateIPAddress, and each in the
# subnet the cloud provider uses: PLS_SUBNET, else (getPLSSubnetName falls back to the cloud config's subnet, the one the
# internal load balancer's frontend is in) the subnet of the PLS's load balancer frontend (az network lb frontend-ip
# show, GET .../loadBalancers/{lb}/frontendIPConfigurations/{name}). The two are in this step's environment, so a
# change of either runs it again.
# Mirrors: GET .../Microsoft.Network/privateLinkServices/{name} (az network private-link-service show).
#
# Whose PLS: a name can be taken in a resource group several clusters share (privateLinkServiceResourceGroup). The AKS
# cloud provider makes a Service's PLS for that Service's load balancer frontend and tags it k8s-azure-owner-service
# <namespace>/<name> (kubernetes-sigs/cloud-provider-azure pkg/provider/azure_privatelinkservice.go
# reconcilePrivateLinkService, reconcilePLSTags at 7b31c76c). Its k8s-azure-cluster-name tag is the cloud provider's
# own --cluster-name, not the AKS resource's name, so it is not compared. A PLS is this cluster's when its frontend is
# on a load balancer in the cluster's node resource group and its owner is the Pyroscope Service; any other is refused
# before anything connects to it.
set -euo pipefail
STEP=wait-for-private-link-service
# shellcheck source=steps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_env PLS_RESOURCE_GROUP PLS_NAME TIMEOUT_SECONDS LOAD_BALANCER_SCOPE OWNER_SERVICE IP_CONFIGURATION_COUNT

# Whether the IP configurations are as the Service's annotations ask (the header): count, addresses, subnet.
frontend_subnet=""
as_annotated() {
  local id
  if [ -z "${PLS_SUBNET:-}" ] && [ -z "$frontend_subnet" ]; then  # looked up once: the frontend stays
    # /subscriptions/<s>/resourceGroups/<g>/providers/Microsoft.Network/loadBalancers/<lb>/frontendIPConfigurations/<n>:
    # the command takes no --ids for a frontend (the real azure-cli parser asks for --lb-name, -g and -n).
    local parts
    IFS=/ read -r -a parts <<<"$frontend"
    frontend_subnet=$(az network lb frontend-ip show --subscription "${parts[2]}" -g "${parts[4]}" --lb-name "${parts[8]}" \
        -n "${parts[10]}" --query "subnet.id" --output tsv 2>"$ERRFILE") \
      || die "az network lb frontend-ip show failed for ${frontend}: $(last_error "$ERRFILE")"
    [ -n "$frontend_subnet" ] || die "load balancer frontend ${frontend} has no subnet; is the Service's load balancer internal?"
  fi
  [ "$configs" = "$IP_CONFIGURATION_COUNT" ] && [ "$addressed" = "$IP_CONFIGURATION_COUNT" ] || return 1
  shopt -s nocasematch
  for id in $subnets; do
    if [ -n "${PLS_SUBNET:-}" ]; then
      [[ "$id" == */subnets/"$PLS_SUBNET" ]] || { shopt -u nocasematch; return 1; }
    else
      [[ "$id" == "$frontend_subnet" ]] || { shopt -u nocasematch; return 1; }
    fi
  done
  shopt -u nocasematch
}

log "waiting up to ${TIMEOUT_SECONDS}s for private link service ${PLS_NAME} in ${PLS_RESOURCE_GROUP} (AKS creates it after the internal load balancer)"
start_clock "$TIMEOUT_SECONDS"
while :; do
  if out=$(az network private-link-service show --resource-group "$PLS_RESOURCE_GROUP" --name "$PLS_NAME" \
      --query "[id, provisioningState || '', loadBalancerFrontendIpConfigurations[0].id || '', tags.\"k8s-azure-owner-service\" || '', length(ipConfigurations || \`[]\`), length(ipConfigurations[?privateIPAddress] || \`[]\`), join(' ', ipConfigurations[].subnet.id || \`[]\`)]" \
      --output tsv 2>"$ERRFILE"); then
    mapfile -t fields <<<"$out"  # one line per item; an empty field stays a (possibly missing) empty line
    pls_id=${fields[0]:-} state=${fields[1]:-} frontend=${fields[2]:-} owner=${fields[3]:-}
    configs=${fields[4]:-0} addressed=${fields[5]:-0} subnets=${fields[6]:-}
    if [ "$state" = "Succeeded" ]; then
      shopt -s nocasematch  # ARM ids and the owner tag compare case-insensitively (the cloud provider's EqualFold)
      if [[ -z "$frontend" || "$frontend" != "$LOAD_BALANCER_SCOPE"* || "$owner" != "$OWNER_SERVICE" ]]; then
        die "private link service ${PLS_NAME} in ${PLS_RESOURCE_GROUP} is not this cluster's: it serves load balancer frontend ${frontend:-none} (k8s-azure-owner-service ${owner:-none}), not a load balancer under ${LOAD_BALANCER_SCOPE} for Service ${OWNER_SERVICE}; nothing was connected to it. Another cluster or Service holds the name: give this stack its own privateLinkServiceName (left empty, it is derived per cluster with multiCluster or a privateLinkServiceResourceGroup)"
      fi
      shopt -u nocasematch
      if as_annotated; then
        log "found ${pls_id}, this cluster's (frontend ${frontend##*/}, owner ${owner}), ${configs} NAT IP configuration(s)"
        printf '%s\n' "$pls_id"
        exit 0
      fi
      found_state="with ${addressed} of ${configs} NAT IP configurations addressed (${IP_CONFIGURATION_COUNT} wanted, in subnet ${PLS_SUBNET:-${frontend_subnet##*/}})"
      log "found, but its NAT IP configurations are not yet as the Service's annotations ask: ${found_state}; waiting"
    else
      [ "$state" != "Failed" ] || die "private link service ${PLS_NAME} exists but its provisioningState is Failed; see its activity log (az monitor activity-log list --resource-id ${pls_id}) and the Service's events (kubectl -n gadget get events)"
      found_state="in provisioningState ${state:-unknown}"
      log "found, provisioningState ${state:-unknown}; waiting"
    fi
  elif not_found "$ERRFILE" || transient "$ERRFILE"; then
    log "not there yet ($(last_error "$ERRFILE" | cut -c1-120))"
  else
    die "az network private-link-service show failed: $(last_error "$ERRFILE")"
  fi
  if ! backoff; then
    [ -z "${found_state:-}" ] || die "private link service ${PLS_NAME} exists but stayed ${found_state} for ${TIMEOUT_SECONDS}s; run pulumi up again later"
    die "private link service ${PLS_NAME} did not appear in ${PLS_RESOURCE_GROUP} within ${TIMEOUT_SECONDS}s; check the Service's annotations and EXTERNAL-IP (kubectl -n gadget get svc pyroscope-private-link -o yaml), load balancer events (kubectl -n gadget get events), and that the cluster identity may create private link services in that resource group"
  fi
done
