#!/usr/bin/env bash
# System set-up for coflowemu's real emulation (Mininet + Open vSwitch + os-ken).
#
# Idempotent: installs Debian's mininet, openvswitch-switch, iperf3, ethtool and
# iputils-ping when any is missing (running `apt-get update` first), and starts Open
# vSwitch when ovsdb-server/ovs-vswitchd are not running. Prints which datapath the
# emulation will use: the kernel one when the openvswitch module loads, otherwise the
# userspace one (netdev). Exit 2 when not root; exit 1 when a step fails.
#
# Used by `make test`, `make demo-emulation` and the README.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
    echo "setup-system.sh: must run as root (it installs Debian packages and starts" \
         "Open vSwitch); try: sudo $0" >&2
    exit 2
fi

PKGS=(mininet openvswitch-switch iperf3 ethtool iputils-ping)
missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup-system.sh: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    echo "setup-system.sh: packages present (${PKGS[*]})"
fi

for tool in mnexec ovs-vsctl tc ethtool; do
    command -v "$tool" >/dev/null || { echo "setup-system.sh: $tool not found after install" >&2; exit 1; }
done

# Kernel datapath if the module exists (loading it may fail in containers/VMs without it).
if modprobe openvswitch 2>/dev/null || [ -d /sys/module/openvswitch ]; then
    datapath=kernel
else
    datapath=user
fi

OVS_CTL=/usr/share/openvswitch/scripts/ovs-ctl
if ! ovs-vsctl --timeout=2 show >/dev/null 2>&1; then
    echo "setup-system.sh: starting Open vSwitch"
    "$OVS_CTL" start
fi
ovs-vsctl --timeout=5 show >/dev/null || { echo "setup-system.sh: Open vSwitch is not answering" >&2; exit 1; }
echo "setup-system.sh: Open vSwitch running ($(ovs-vsctl --version | head -1)); datapath: $datapath"
