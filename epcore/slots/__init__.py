"""The slot model: resource shares, slot types, partitionable and dynamic slots, slot ads.

Pure: no I/O and no clock; the machine's inventory, the configuration and ``now`` are
parameters.
"""
