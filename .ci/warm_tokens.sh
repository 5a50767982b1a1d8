#!/usr/bin/env bash
# CI: right after `azure/login` (OpenID Connect), put into az's token cache every access token the run
# will ask az for, while the federated assertion is still valid. Never prints a token.
#
# Why: azure/login v2 passes the job's GitHub ID token once, as `az login --service-principal
# --federated-token` (Azure/login v2.3.0 src/common/LoginConfig.ts, src/Cli/AzureCliLogin.ts); az keeps it
# as a fixed `client_assertion` (azure-cli-core 2.91.0 azure/cli/core/auth/identity.py) and cannot renew it.
# A token requested after the assertion expired (minutes) fails with AADSTS700024 (Azure/login issues
# #180, #372). A token already in the cache is served without a new assertion: MSAL's
# acquire_token_for_client looks in the cache first and returns an access token with more than 5 minutes
# left (msal 1.39.0 msal/application.py, _acquire_token_silent_from_cache_and_possibly_refresh_it); az keeps
# that cache in $AZURE_CONFIG_DIR/msal_token_cache for every az process. Entra access tokens live 60-90
# minutes by default, so what is warmed here serves the run for about 55 minutes.
#
# The audiences, spelled exactly as their callers ask az for them (the cache key is the scope string):
#   ce34e7e5-485f-4d76-964f-b3d2b16d1e4f  Azure Managed Grafana: `az rest --resource` in steps/azcli.py,
#                                         the datasource and dashboard steps and ops.verify
#   6dae42f8-4368-4678-94ff-3960e28e3630  AKS: kubelogin --login azurecli runs
#                                         `az account get-access-token --resource <server id>`
#   https://management.core.windows.net/  ARM as az itself asks for it (`az network ...`, `az rest` on
#                                         management.azure.com URLs; azure/cli/core/util.py send_raw_request)
# and, when the state is self-managed (set by .ci/pulumi_backend.sh), what the Pulumi CLI asks az
# for through azidentity's DefaultAzureCredential -> AzureCLICredential (resource = scope minus /.default):
#   https://storage.azure.com             an azblob:// PULUMI_BACKEND_URL (state written all through the update)
#   https://vault.azure.net               an azurekeyvault:// PULUMI_SECRETS_PROVIDER
# The azure-native provider needs none of them: with ARM_USE_OIDC it fetches a fresh GitHub ID token itself.
set -euo pipefail
STEP=warm-tokens
# shellcheck source=steps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../steps/lib.sh"

audiences=(
  "Azure Managed Grafana|ce34e7e5-485f-4d76-964f-b3d2b16d1e4f"
  "AKS (kubelogin azurecli)|6dae42f8-4368-4678-94ff-3960e28e3630"
  "Azure Resource Manager (az)|https://management.core.windows.net/"
)
[[ "${PULUMI_BACKEND_URL:-}" != azblob://* ]] || audiences+=("Azure Storage (Pulumi state)|https://storage.azure.com")
if [[ "${PULUMI_SECRETS_PROVIDER:-}" == azurekeyvault://* ]]; then
  vault_host=${PULUMI_SECRETS_PROVIDER#azurekeyvault://}
  vault_host=${vault_host%%/*}
  audiences+=("Azure Key Vault (Pulumi secrets)|https://${vault_host#*.}")
fi

for entry in "${audiences[@]}"; do
  name=${entry%%|*}
  resource=${entry#*|}
  # Only the expiry is asked for: the token itself never reaches stdout, stderr or the log.
  if ! expires=$(az account get-access-token --resource "$resource" --query expires_on --output tsv 2>"$ERRFILE"); then
    die "no access token for ${name} (${resource}): $(last_error "$ERRFILE"); run this step right after azure/login, and check the federated credential of the job's identity (AZURE_CLIENT_ID; AZURE_PREVIEW_CLIENT_ID for the pull-request preview, AZURE_DRIFT_CLIENT_ID for the drift check)"
  fi
  if [[ "$expires" =~ ^[0-9]+$ ]]; then
    log "${name} (${resource}): cached, valid for $(( (expires - $(date +%s)) / 60 )) more minutes"
  else
    log "${name} (${resource}): cached"
  fi
done
