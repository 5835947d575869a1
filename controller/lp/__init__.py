"""LP relaxations: lower bounds and the orders the LP-based policies list work by.

One module per relaxation family:

* :mod:`controller.lp.coflow` -- Chen's coflow LPs on an identical parallel network:
  LP (1) divisible/flow-level, LP (7) indivisible/coflow-level, LP (8) single core, each
  with the weighted-completion, multi-stage-job (LP 13) and makespan (LP 14) objectives.
* :mod:`controller.lp.result` -- :class:`~controller.lp.result.LPResult`, the one result
  type of these LPs and of the compute LPs (:mod:`controller.compute.lp`).
* :mod:`controller.lp.separation` -- exact separation of the exponentially many
  parallel-machine subset inequalities (sort by completion time, check every prefix) and
  the HiGHS cutting-plane loop with warm starts that the coflow LPs share.

Every solver is a pure function returning an :class:`~controller.lp.result.LPResult` whose
``value`` is a lower bound on the cost of every schedule of its variant.
"""
