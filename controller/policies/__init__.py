"""Scheduling policies: one module per algorithm, all behind :class:`Policy`."""
from controller.policies.base import Policy, PolicyError, available, get_policy, register

__all__ = ["Policy", "PolicyError", "available", "get_policy", "register"]
