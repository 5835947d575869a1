"""The emulation engine: Mininet cores, the os-ken controller, agents sending real TCP.

* :mod:`~emulate.mininet.engine` -- :func:`~emulate.mininet.engine.run_mininet`: builds
  the fabric, starts the controller (``controller.app``) and one agent per host, runs,
  tears everything down;
* :mod:`~emulate.mininet.agent` -- the agent in each emulated host: persistent TCP
  connections, flows sent when the controller says, task pieces run against the host's
  capacity (:mod:`~emulate.mininet.slots`);
* :mod:`~emulate.mininet.clean` -- ``coflowemu clean``: what a crashed run left behind;
* :mod:`~emulate.mininet.fidelity` -- the same workload in both engines, per-coflow error.

Needs root and ``scripts/setup-system.sh``. Run it through
:func:`emulate.engines.get_engine` (``"mininet"``).
"""
