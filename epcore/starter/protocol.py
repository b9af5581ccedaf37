"""What the startd and its starters say to each other: one ClassAd per line over a Unix socket.

Each message is a ClassAd in new syntax on one line, with ``Command`` naming it; the rest of
the ad is the message's payload in HTCondor's own attribute names (ExitCode, ImageSize...), so
a log of the traffic reads like HTCondor's. The starter is the client: it connects to the
startd's starter socket when it starts and again whenever the connection breaks (the startd was
restarted), says :data:`HELLO` with everything the startd needs to take it back, and keeps its
final :data:`FINISHED` message until the startd answers :data:`ACK`.

The framing (:class:`~epcore.runtime.framing.Channel`) is the runtime layer's.
"""

from __future__ import annotations

# starter -> startd
HELLO = "Hello"
STARTED = "Started"
UPDATE = "Update"
FINISHED = "Finished"
# startd -> starter
SUSPEND = "Suspend"
CONTINUE = "Continue"
SOFT_KILL = "SoftKill"
HARD_KILL = "HardKill"
ACK = "Ack"

STARTER_COMMANDS = (HELLO, STARTED, UPDATE, FINISHED)
STARTD_COMMANDS = (SUSPEND, CONTINUE, SOFT_KILL, HARD_KILL, ACK)
