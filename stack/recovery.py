"""The one line a failed operation gets when a killed run is its cause: error hooks on the resources a killed run
leaves half-made.

Owns :func:`error_hooks` (a resource's error hook, only where the CLI runs hooks) and :func:`already_exists_hooks`: for
an Azure resource the stack creates, azure-native's refusal "cannot create already existing resource" after a run that
was killed while Azure created it (the state holds only a pending create), and pulumi-kubernetes' (4.29.0 on) for an
object the cluster has, get the line naming the recovery, ``.venv/bin/python -m ops.recover --stack <stack> --run`` then
``pulumi up`` (docs/kill-points.md). A hook never asks for a retry: a retry would be refused the same way. Research:
docs/decisions/kill-points.md.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import pulumi

ALREADY_EXISTS = "cannot create already existing resource"


def recover_command(stack: str) -> str:
    return f".venv/bin/python -m ops.recover --stack {stack} --run"


#: pulumi-kubernetes 4.29.0 and later, creating an object the cluster has (``provider/pkg/await/await.go``).
ALREADY_IN_CLUSTER = "The resource already exists in the cluster"


def already_exists_recovery(errors: Sequence[str], name: str, stack: str) -> Optional[str]:
    """The line for azure-native's refusal of a resource Azure already has, or pulumi-kubernetes' of an object the
    cluster has; None for another error."""
    if any(ALREADY_EXISTS in error for error in errors):
        return (f"{name}: Azure has it, made by a run that was killed while Azure created it (the state holds only a "
                f"pending create): run `{recover_command(stack)}` (it imports what Azure made), then `pulumi up` "
                "again; a resource made by hand instead: docs/adopting.md")
    if any(ALREADY_IN_CLUSTER in error for error in errors):
        return (f"{name}: the cluster has it, made by a run that was killed while it was created (the state holds "
                f"only a pending create): run `{recover_command(stack)}` (it imports what the cluster has), then "
                "`pulumi up` again; an object made by hand instead: docs/existing-objects.md")
    return None


def error_hooks(name: str, explain: Callable[[pulumi.ErrorHookArgs], bool]) -> Optional[pulumi.ResourceHookBinding]:
    """A resource's error hook ``explain``, in an update (a preview runs no operation to fail) and when the CLI
    supports error hooks (the SDK refuses one otherwise)."""
    from pulumi.runtime.proto import resource_pb2
    from pulumi.runtime.settings import monitor_supports_feature

    if pulumi.runtime.is_dry_run() or not monitor_supports_feature(resource_pb2.RESOURCE_MONITOR_FEATURE_ERROR_HOOKS):
        return None
    return pulumi.ResourceHookBinding(on_error=[pulumi.ErrorHook(name, explain)])


def explain_already_exists(args: pulumi.ErrorHookArgs) -> bool:
    line = already_exists_recovery(args.errors, args.name, pulumi.get_stack())
    if line:
        pulumi.log.error(line)
    return False


def already_exists_hooks(name: str) -> Optional[pulumi.ResourceHookBinding]:
    """The error hook of an Azure resource or a Kubernetes object the stack creates (``name``: the hook's name, unique
    in the stack)."""
    return error_hooks(f"{name}-killed-run", explain_already_exists)
