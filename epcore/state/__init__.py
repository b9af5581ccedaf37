"""The slot policy state machine: states, activities, transitions, and the pure policy step.

Pure: no I/O and no clock; time arrives as ``now``.
"""
