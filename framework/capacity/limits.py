"""The bounds of the capacity questions, shared by the functions that
check their arguments and by ``tensorsched capacity``'s flags (a module
without imports, so the command line reads them without loading the
scheduler)."""

EXACT_LIMIT = 8            # removable_nodes: up to this many candidates, every subset
MAX_EXACT_LIMIT = 20       # every subset of 20 candidates is a million trials
MAX_NODES = 1_000_000      # nodes_to_add: the most nodes a search adds
# how_many_fit: the most pods one call may place (what the free resources let
# bind, within limit or replicas); ~4 min on the batched kernel at 40,000 pods/s
MAX_PODS = 10_000_000
