"""The stack's ComponentResources, one per file: the cluster side, the private link and the Grafana side."""
