#!/usr/bin/env bash
# CI (the Grafana phase of deploy-stacks.yml, between stacks): sign az in again with a fresh GitHub OIDC token and
# warm the token cache, since az cannot renew the federated assertion azure/login used (.ci/warm_tokens.sh).
# ops/fleet.py runs it with a new, empty AZURE_CONFIG_DIR each time: in the old cache MSAL would serve the warm-up
# the tokens it holds while they have 5 minutes left, and no new token would be cached.
# The exchange: the job's GitHub ID token for audience api://AzureADTokenExchange (Entra's federated-credential
# audience, docs/platform.md), then `az login --service-principal --federated-token` (not yet run against the real parser: open).
# Environment: ARM_CLIENT_ID, ARM_TENANT_ID, ARM_SUBSCRIPTION_ID, ACTIONS_ID_TOKEN_REQUEST_URL/_TOKEN (id-token: write).
# Both tokens are masked in the log before anything uses them. The request token goes to curl as a header on stdin,
# never on a command line; the ID token must be on az's (az login takes a federated token no other way).
set -euo pipefail
: "${ACTIONS_ID_TOKEN_REQUEST_URL:?needs id-token: write}" "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:?needs id-token: write}"
echo "::add-mask::${ACTIONS_ID_TOKEN_REQUEST_TOKEN}"
token=$(printf 'Authorization: bearer %s\n' "$ACTIONS_ID_TOKEN_REQUEST_TOKEN" |
  curl -fsS --retry 3 -H @- "${ACTIONS_ID_TOKEN_REQUEST_URL}&audience=api://AzureADTokenExchange" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["value"])')
echo "::add-mask::${token}"
if [ -z "$token" ]; then
  echo "azure-relogin: error: GitHub's token service answered no ID token" >&2
  exit 1
fi
az login --service-principal --username "$ARM_CLIENT_ID" --tenant "$ARM_TENANT_ID" --federated-token "$token" --output none
az account set --subscription "$ARM_SUBSCRIPTION_ID"
bash "$(dirname "${BASH_SOURCE[0]}")/warm_tokens.sh"
