#!/usr/bin/env bash
# CI: choose the Pulumi backend from the repository's variables, before anything else runs. No Azure call.
#
# pulumi/actions runs a plain `pulumi login [cloud-url]` and only *warns* when it fails
# (pulumi/actions v7.0.0, src/main.ts: `core.warning('Failed to login to Pulumi service: ...')` after
# src/login.ts), so a job without a usable backend would fail later with an unrelated error. This script
# makes that a one-line error naming what to configure, and hands the choice to the later steps.
#
# Input (environment; the workflow passes repository/environment variables, never a secret's value):
#   PULUMI_BACKEND_URL       azblob://<container>[?storage_account=<account>] (self-managed state, signed in
#                            by the Azure OIDC login), https://<host> (self-hosted Pulumi Cloud), or empty
#                            (Pulumi Cloud, api.pulumi.com)
#   PULUMI_SECRETS_PROVIDER  azurekeyvault://<vault>.vault.azure.net/keys/<key>; required with azblob (the
#                            stack holds a secret kubeconfig; no passphrase secret is stored)
#   AZURE_STORAGE_ACCOUNT    the storage account, when the azblob URL has no storage_account parameter
#   PULUMI_ORGANIZATION      Pulumi Cloud via OIDC (pulumi/auth-actions exchanges the job's ID token); the only
#                            way to Pulumi Cloud here: no stored token is read
#   PULUMI_TOKEN_SCOPE       with Pulumi Cloud, the token's scope: team:<team> or user:<login> (never an
#                            organization token, whose only permission is admin)
#   PULUMI_TOKEN_SCOPE_VARIABLE  the variable that holds it, for the error (PULUMI_PRODUCTION_SCOPE, ...)
#   STACK                    the stack name; with azblob its Pulumi.<stack>.yaml must name the secrets provider
# Output: to $GITHUB_OUTPUT (stdout when unset): kind=cloud-oidc|azblob, cloud-url,
#   secrets-provider; to $GITHUB_ENV (stdout when unset): PULUMI_BACKEND_URL, PULUMI_SECRETS_PROVIDER and
#   AZURE_STORAGE_ACCOUNT for the later steps (pulumi, ops.verify, .ci/warm_tokens.sh).
set -euo pipefail
STEP=pulumi-backend
# shellcheck source=steps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../steps/lib.sh"

backend=${PULUMI_BACKEND_URL:-}
provider=${PULUMI_SECRETS_PROVIDER:-}
organization=${PULUMI_ORGANIZATION:-}
outputs=${GITHUB_OUTPUT:-/dev/stdout}
environment=${GITHUB_ENV:-/dev/stdout}

case "$backend" in
  azblob://*)
    query=""
    [[ "$backend" == *\?* ]] && query=${backend#*\?}
    if [[ "&$query" != *"&storage_account="* ]] && [ -z "${AZURE_STORAGE_ACCOUNT:-}" ]; then
      die "PULUMI_BACKEND_URL: ${backend} names no storage account; add ?storage_account=<account> to it or set the variable AZURE_STORAGE_ACCOUNT"
    fi
    [[ "$provider" == azurekeyvault://* ]] ||
      die "PULUMI_SECRETS_PROVIDER: an azblob:// backend needs an azurekeyvault:// secrets provider (the stack holds a secret kubeconfig); set the variable PULUMI_SECRETS_PROVIDER=azurekeyvault://<vault>.vault.azure.net/keys/<key>"
    # The CLI takes the secrets provider from Pulumi.<stack>.yaml (pulumi/pulumi pkg/cmd/pulumi/stack/secrets.go,
    # SecretsManagerLoader.GetSecretsManager); without it a diy stack falls back to a passphrase, which CI has not.
    require_env STACK
    stack_file="Pulumi.${STACK##*/}.yaml"
    [ -f "$stack_file" ] || die "STACK: ${stack_file} does not exist; create the stack with \`pulumi stack init ${STACK} --secrets-provider ${provider}\` and commit ${stack_file}"
    named=$(sed -n 's/^secretsprovider:[[:space:]]*//p' "$stack_file" | tr -d "\"'" | head -n 1)
    [ -n "$named" ] || die "${stack_file} names no secretsprovider; run \`pulumi stack change-secrets-provider --stack ${STACK} ${provider}\` against ${backend} and commit ${stack_file}"
    [ "$named" = "$provider" ] || die "PULUMI_SECRETS_PROVIDER is ${provider} but ${stack_file} names ${named}; make them the same"
    [ -z "$organization" ] || log "PULUMI_ORGANIZATION is ignored: the state is in ${backend}"
    kind=azblob
    ;;
  https://* | "")
    [ -n "$organization" ] ||
      die "no Pulumi backend configured: set the variable PULUMI_ORGANIZATION (Pulumi Cloud via OIDC), or the variables PULUMI_BACKEND_URL=azblob://<container>?storage_account=<account> and PULUMI_SECRETS_PROVIDER=azurekeyvault://<vault>.vault.azure.net/keys/<key>"
    scope_variable=${PULUMI_TOKEN_SCOPE_VARIABLE:-PULUMI_TOKEN_SCOPE}
    [[ "${PULUMI_TOKEN_SCOPE:-}" =~ ^(team|user):[^[:space:]]+$ ]] ||
      die "${scope_variable}: expected team:<team> (a team token with this job's stack permissions) or user:<login> (a personal token, editions without teams), got '${PULUMI_TOKEN_SCOPE:-}'; an organization token is admin and is never requested (docs/platform.md, Pulumi Cloud tokens)"
    kind=cloud-oidc
    ;;
  *)
    die "PULUMI_BACKEND_URL: '${backend%%://*}://' is not supported here; use azblob://<container>?storage_account=<account>, https://<self-hosted Pulumi Cloud>, or leave it empty for Pulumi Cloud"
    ;;
esac

{
  echo "kind=${kind}"
  echo "cloud-url=${backend}"
  echo "secrets-provider=${provider}"
} >> "$outputs"
{
  [ -z "$backend" ] || echo "PULUMI_BACKEND_URL=${backend}"
  [ -z "$provider" ] || echo "PULUMI_SECRETS_PROVIDER=${provider}"
  [ -z "${AZURE_STORAGE_ACCOUNT:-}" ] || echo "AZURE_STORAGE_ACCOUNT=${AZURE_STORAGE_ACCOUNT}"
} >> "$environment"
log "backend: ${kind}${backend:+ (${backend})}${provider:+, secrets provider ${provider}}"
