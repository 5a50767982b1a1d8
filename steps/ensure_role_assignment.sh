#!/usr/bin/env bash
# Make sure PRINCIPAL_ID holds ROLE_DEFINITION_ID on SCOPE; never remove it (the step has no delete). For an
# assignment shared by several stacks (multiCluster): whichever stack runs first creates it, named ASSIGNMENT_NAME;
# an assignment of that role to that principal on that scope that already exists, under any name, is success:
# azure-cli 2.91.0 azure/cli/command_modules/role/custom.py create_role_assignment answers ARM's 409
# RoleAssignmentExists with the existing assignment ("for idempotent"). Which one: azure-cli 2.91.0 lists the assignments
# of the role on the scope to the principal (list_role_assignments(cmd, assignee_object_id=object_id, role, scope)[0]);
# older azure-cli lists them with assignee=None, so with --assignee-object-id its [0] is the first assignment of the role
# on the scope, maybe another principal's (Azure/azure-cli src/azure-cli/azure/cli/command_modules/role/custom.py
# @ 01ce0346, create_role_assignment). ARM's 409 itself says the principal holds the role; the answer's principal is
# checked, and when it is another's, the principal's own assignment is read (az role assignment list, without the
# Microsoft Graph and role definition look-ups). Both 409 paths list the role definitions at the scope
# (roleDefinitions/read: docs/deployer-role.md). Retries 429/5xx and PrincipalNotFound (a new identity not replicated
# yet). Prints the principal's assignment's ARM id.
# Environment: SCOPE, ROLE_DEFINITION_ID, PRINCIPAL_ID, PRINCIPAL_TYPE, ASSIGNMENT_NAME, DESCRIPTION,
# TIMEOUT_SECONDS; optional POLL_INITIAL_SECONDS, POLL_MAX_SECONDS.
# Mirrors: PUT {scope}/providers/Microsoft.Authorization/roleAssignments/{name} (az role assignment create with
# --assignee-object-id and --assignee-principal-type, so no Microsoft Graph lookup).
set -euo pipefail
STEP=ensure-role-assignment
# shellcheck source=steps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_env SCOPE ROLE_DEFINITION_ID PRINCIPAL_ID PRINCIPAL_TYPE ASSIGNMENT_NAME DESCRIPTION TIMEOUT_SECONDS

log "making sure principal ${PRINCIPAL_ID} holds role ${ROLE_DEFINITION_ID##*/} on ${SCOPE} (up to ${TIMEOUT_SECONDS}s)"
start_clock "$TIMEOUT_SECONDS"
while :; do
  if id=$(az role assignment create --assignee-object-id "$PRINCIPAL_ID" --assignee-principal-type "$PRINCIPAL_TYPE" \
      --role "$ROLE_DEFINITION_ID" --scope "$SCOPE" --name "$ASSIGNMENT_NAME" --description "$DESCRIPTION" \
      --query "[[id, principalId]]" --output tsv 2>"$ERRFILE"); then
    IFS=$'\t' read -r id principal <<<"$id"  # one row: --query [[...]] (knack 0.14.0 _TsvOutput: a row per list item)
    [ -n "$id" ] || die "az role assignment create answered no assignment id"
    if [ "${principal,,}" != "${PRINCIPAL_ID,,}" ]; then
      log "az role assignment create answered with principal ${principal:-none}'s assignment ${id##*/} (the role was already held); reading principal ${PRINCIPAL_ID}'s own"
      if ! id=$(az role assignment list --assignee-object-id "$PRINCIPAL_ID" --role "$ROLE_DEFINITION_ID" --scope "$SCOPE" \
          --fill-principal-name false --fill-role-definition-name false --query "[0].id" --output tsv 2>"$ERRFILE"); then
        transient "$ERRFILE" || die "az role assignment list failed: $(last_error "$ERRFILE")"
        log "retrying after: $(last_error "$ERRFILE" | cut -c1-120)"
        backoff || die "the role assignment could not be read within ${TIMEOUT_SECONDS}s: $(last_error "$ERRFILE"); run pulumi up again later"
        continue
      fi
      [ -n "$id" ] || die "principal ${PRINCIPAL_ID} holds no assignment of role ${ROLE_DEFINITION_ID##*/} on ${SCOPE} although az role assignment create answered that the role is held; run pulumi up again"
    fi
    log "role assignment ${id##*/} is in place"
    printf '%s\n' "$id"
    exit 0
  elif transient "$ERRFILE" || grep -q 'PrincipalNotFound' "$ERRFILE"; then
    log "retrying after: $(last_error "$ERRFILE" | cut -c1-120)"
  else
    die "az role assignment create failed: $(last_error "$ERRFILE"); creating role assignments needs Owner, User Access Administrator or Role Based Access Control Administrator on the scope"
  fi
  backoff || die "the role assignment was not made within ${TIMEOUT_SECONDS}s: $(last_error "$ERRFILE"); run pulumi up again later"
done
