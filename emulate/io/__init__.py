"""Workloads in, records out: what crosses the boundary of a run.

* :mod:`~emulate.io.traces` -- the one place that reads workloads: the project's JSON
  format (coflow-only and joint), the Facebook coflow-benchmark trace; writers;
* :mod:`~emulate.io.generators` -- seeded synthetic workloads by kind
  (``coflowemu generate --kind``);
* :mod:`~emulate.io.records` -- the record of a run (:class:`~emulate.io.records.RunResult`),
  segments, atomic writes;
* :mod:`~emulate.io.units` -- human units on the command line (``1Gbps``, ``100MB``).
"""
