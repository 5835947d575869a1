"""Declarative sweeps: specs, the Dask runner, and the Parquet/DuckDB results store.

* :mod:`experiments.sweep.spec` -- a TOML spec expanded into runs (workloads x fabrics x
  policies x engines), each keyed by its parameters and the code version;
* :mod:`experiments.sweep.execute` -- one run, as a task: engine, LP bound, rows;
* :mod:`experiments.sweep.runner` -- the runs on Dask distributed (a local cluster or a
  scheduler's), progress, failures, resume;
* :mod:`experiments.sweep.store` -- Parquet per run, DuckDB views, the JSON importer;
* :mod:`experiments.sweep.report` -- the summary table (confidence intervals over seeds)
  and the plots.

``coflowemu sweep SPEC --out DIR`` and ``coflowemu results DIR`` are the commands;
``docs/sweeps.md`` is the manual; ``experiments/specs/`` holds the papers' specs.
"""
