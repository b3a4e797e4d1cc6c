"""Experiments on top of the library: one simulation from its input files
(``simulate_run``, what ``tensorsched simulate`` runs) and sweeps of them
over traces x configs x seeds on processes or Ray (``sweep``: jobs and
runs; ``results``: the rows and their table; ``comparison``: configs side
by side).

May import: ``framework``, ``topology``, ``plugin_sets`` (the default
registry); the CLI (``sweep_cli``, ``simulate_cli``) and ``bench`` build on
it.  This ``__init__`` stays light: the CLI reads ``DEFAULT_INTERVAL`` while
building its parser.
"""

DEFAULT_INTERVAL = 3600.0       # seconds per time-series row of simulate and sweep
