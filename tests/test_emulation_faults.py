"""Faults in the emulation: races, lost peers, intruders, leftovers (issue 19).

The parts that need no root run everywhere (the controller process against fake
switches and fake agents over its real sockets); the parts that build a Mininet network
are skipped without root and must run under ``flock /tmp/coflowemu-mininet.lock``.
"""
from __future__ import annotations

import os

import pytest

needs_root = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root (Mininet, Open vSwitch)")


def test_the_ready_barrier_reply_is_handled_before_the_switch_reaches_main_state():
    import os_ken.base.app_manager  # noqa: F401  (import order: see controller.app)
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER

    from controller.app import CoflowController
    # the barrier is sent from the CONFIG-state features handler; os-ken moves the switch
    # to MAIN in another thread, so the reply may be dispatched in either state
    callers = CoflowController.switch_features.callers
    assert CONFIG_DISPATCHER in callers[ofp_event.EventOFPSwitchFeatures].dispatchers
    replies = CoflowController.barrier_reply.callers[ofp_event.EventOFPBarrierReply]
    assert {CONFIG_DISPATCHER, MAIN_DISPATCHER} <= set(replies.dispatchers)
