"""The simulator engine: event-driven, exact, flow-level; no root, no network.

* :mod:`~emulate.sim.flowsim` -- :class:`~emulate.sim.flowsim.Simulator` and
  :func:`~emulate.sim.flowsim.simulate`: coflows on the fabric under a network policy.
* :mod:`~emulate.sim.matching`, :mod:`~emulate.sim.capped` -- its compiled kernels: the
  incremental priority matching and the capped backfill (numba).
* :mod:`~emulate.sim.jobsim` -- joint workloads: the compute half
  (:class:`controller.jobrun.JobDriver`) and the network in one event loop.
* :mod:`~emulate.sim.warmup` -- compiles every kernel once at set-up.

Run it through :func:`emulate.engines.get_engine` (``"sim"``).
"""
