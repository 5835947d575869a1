"""The built-in job models (see :mod:`controller.jobmodel`), one module each, loaded on
first use by :func:`controller.jobmodel.job_models`.

* :mod:`~controller.jobmodels.packing`: tasks packed into machine capacities, the
  policies of :mod:`controller.compute`.
"""
