"""Whether this machine reaches the cluster's API server, checked where AKS restricts who may: a private cluster, or
a public API server with authorized IP ranges.

Owns: :func:`refuse_unreachable`, :func:`reach` and the seam :data:`REACH`. Input: the StackConfig, the cluster's
facts (:class:`existing.cluster.ClusterFacts`) and its kubeconfig text. Output: none. Errors: ConfigError (key
``clusterName``), one line saying what is needed, before any resource is registered; an unreachable API server is
otherwise read later by pulumi-kubernetes as an unreachable cluster, the same words as a deleted one. Upstream:
MicrosoftDocs/azure-aks-docs ``articles/aks/private-clusters.md`` (the kubeconfig's server is the private FQDN,
reachable only from the cluster's network) and ``api-server-authorized-ip-ranges.md``; why:
docs/decisions/cluster-prerequisites.md.
"""

from __future__ import annotations

import socket
from typing import Callable, Optional
from urllib.parse import urlsplit

import yaml

from existing.cluster import ClusterFacts
from stack_config.schema import ConfigError, StackConfig

#: How long a TCP connection to the API server may take before it counts as unreachable.
CONNECT_SECONDS = 10


def server_of(kubeconfig: str) -> tuple[str, int]:
    """(host, port) of the first cluster's ``server`` in a kubeconfig (AKS returns one cluster)."""
    clusters = (yaml.safe_load(kubeconfig) or {}).get("clusters") or [{}]
    url = urlsplit(str((clusters[0].get("cluster") or {}).get("server") or ""))
    return url.hostname or "", url.port or 443


def reach(kubeconfig: str) -> Optional[str]:
    """None when a TCP connection to the kubeconfig's API server opens within :data:`CONNECT_SECONDS`, else why not
    (the resolver's or the socket's words). Only a connection: TLS and credentials are the provider's."""
    host, port = server_of(kubeconfig)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_SECONDS):
            return None
    except socket.gaierror as error:
        return f"the name does not resolve here ({error.strerror})"
    except TimeoutError:
        return f"no answer within {CONNECT_SECONDS} s"
    except OSError as error:
        return error.strerror or str(error)


#: ``kubeconfig -> None or why the API server cannot be reached``; the offline plan sets its canned world's.
REACH: Callable[[str], Optional[str]] = reach


def refuse_unreachable(cfg: StackConfig, cluster: ClusterFacts, kubeconfig: str) -> None:
    """Refuse, in one line, a private cluster or one with authorized IP ranges whose API server this machine cannot
    reach; a public cluster open to all is not probed."""
    if not (cluster.private_cluster or cluster.authorized_ip_ranges):
        return
    why = REACH(kubeconfig)
    if why is None:
        return
    host, port = server_of(kubeconfig)
    if cluster.private_cluster:
        raise ConfigError(
            "clusterName",
            f"cluster '{cluster.name}' is a private cluster (apiServerAccessProfile.enablePrivateCluster) and its API "
            f"server {host}:{port} cannot be reached from this machine: {why}; run pulumi on the cluster's network (a "
            "self-hosted runner or a VM in its virtual network or a peered one, or over VPN or ExpressRoute: "
            "docs/platform.md#private-clusters)",
        )
    ranges = ",".join(cluster.authorized_ip_ranges)
    raise ConfigError(
        "clusterName",
        f"cluster '{cluster.name}' admits API server clients only from apiServerAccessProfile.authorizedIPRanges "
        f"({ranges}) and its API server {host}:{port} cannot be reached from this machine: {why}; add this machine's "
        f"public address: az aks update -g {cfg.cluster_resource_group} -n {cfg.cluster_name} "
        f"--api-server-authorized-ip-ranges {ranges},<this machine's address>/32 (docs/platform.md#private-clusters)",
    )
