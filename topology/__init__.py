"""GPU / NUMA topology models (placeholder package for later work)."""
