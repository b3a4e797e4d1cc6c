"""Pure array kernels: no Kubernetes objects here."""
