"""The bounds of the capacity questions, shared by the functions that
check their arguments and by ``tensorsched capacity``'s flags (a module
without imports, so the command line reads them without loading the
scheduler)."""

EXACT_LIMIT = 8            # removable_nodes: up to this many candidates, every subset
MAX_EXACT_LIMIT = 20       # every subset of 20 candidates is a million trials
MAX_NODES = 1_000_000      # nodes_to_add: the most nodes a search adds
