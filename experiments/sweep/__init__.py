"""Declarative sweeps: specs, the Dask runner, and the Parquet/DuckDB results store.

* :mod:`experiments.sweep.spec` -- a TOML spec expanded into runs (workloads x fabrics x
  policies x engines), each keyed by its parameters and the code version;
* :mod:`experiments.sweep.execute` -- one run, as a task: engine, LP bound, rows;
* :mod:`experiments.sweep.direct` -- the ``direct`` engine: a policy's own algorithm on
  the generated instance (the papers' evaluations, their options, 250k-job instances);
* :mod:`experiments.sweep.runner` -- the runs on Dask distributed (a local cluster or a
  scheduler's) or in this process, progress, failures, resume;
* :mod:`experiments.sweep.store` -- Parquet per run, DuckDB views, the JSON importer;
* :mod:`experiments.sweep.report` -- the summary table (confidence intervals over seeds)
  and the plots;
* :mod:`experiments.sweep.paper` -- a paper's experiment: its shipped spec run, its
  tables from the store (``python -m experiments.<paper>``).

``coflowemu sweep SPEC --out DIR`` and ``coflowemu results DIR`` are the commands;
``docs/sweeps.md`` is the manual; ``experiments/specs/`` holds the papers' specs.
"""
