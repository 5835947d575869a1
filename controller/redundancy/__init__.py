"""Online scheduling with redundancy and checkpointing on machines of varying speed.

The model of Xu, de Veciana, Lau and Zhou (algorithms.md section 4): ``N`` machines
whose service rates follow piecewise-constant speed processes
(:mod:`~controller.redundancy.speed`), jobs that arrive online with known work and may
run as ``d`` redundant copies, checkpoints (every copy restarts from the most advanced
one) only at arrivals and departures, multitasking shares. The policies SRPT+R, Fair+R,
LAPS+R(beta) and the same without redundancy (:mod:`~controller.redundancy.policies`),
the exact event simulator (:mod:`~controller.redundancy.simulator`) and the paper's
workload generator (:mod:`~controller.redundancy.generators`) are pure: the job model
``redundancy`` (:mod:`controller.jobmodels.redundancy`) is the thin shell that runs
them inside ``coflowemu run``. Beyond the paper, checkpoints whose state moves over the
fabric (a job's ``checkpoint_bytes``): :mod:`~controller.redundancy.transfers`.
docs/redundancy.md has the results beside the paper's.
"""
from controller.redundancy.policies import POLICIES, copies, parse
from controller.redundancy.simulator import Instance, Run, simulate
from controller.redundancy.speed import ApUp, Speed, ap_up, constant, from_points

__all__ = ["POLICIES", "copies", "parse", "Instance", "Run", "simulate", "ApUp", "Speed",
           "ap_up", "constant", "from_points"]
