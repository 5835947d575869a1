"""Fabrics (identical parallel networks) and the Mininet topologies that build them."""
from topologies.fabric import Fabric, FabricError

__all__ = ["Fabric", "FabricError"]
