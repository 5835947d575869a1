"""The built-in job models (see :mod:`controller.jobmodel`), one module each, loaded on
first use by :func:`controller.jobmodel.job_models`.

* :mod:`~controller.jobmodels.packing`: tasks packed into machine capacities, the
  policies of :mod:`controller.compute`.
* :mod:`~controller.jobmodels.moldable`: moldable jobs holding ``q`` identical machines
  at once, the algorithms of :mod:`controller.moldable` (DEMT and baselines).
* :mod:`~controller.jobmodels.msjo`: MapReduce jobs of whole-server tasks with shuffle
  delays, the policies of :mod:`controller.msjo` (MarS, T-MarS, SO-MarS and baselines).

:mod:`~controller.jobmodels.offline` is the shell the offline models share (one schedule
made on construction, every plan a part of it).
"""
