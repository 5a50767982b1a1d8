"""What already exists in Azure: the AKS cluster (cluster.py), its kubeconfig and provider (kubeconfig.py), an
existing Managed Grafana and Azure Monitor workspace (grafana.py). Looked up, never created."""
