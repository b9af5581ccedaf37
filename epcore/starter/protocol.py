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
#: After the ACK, when the job left what the starter could not clean up (its scratch volume):
#: SlotBrokenCode, SlotBrokenReason, and EpCleanupBackend/EpCleanupItem naming what is left.
BROKEN = "Broken"
#: After the ACK, from a starter that can run its claim's next job
#: (:mod:`epcore.starter.claim_loop`): it waits for NEXT or RETIRE. NextTrackingKey names the
#: groups it made for that job ahead of it (absent: none).
READY = "Ready"
NEXT_TRACKING_KEY = "NextTrackingKey"
# startd -> starter
SUSPEND = "Suspend"
CONTINUE = "Continue"
SOFT_KILL = "SoftKill"
#: In a SoftKill or HardKill: true when the job is being removed, not vacated.
REMOVED = "Removed"
HARD_KILL = "HardKill"
ACK = "Ack"
#: To a READY starter: the claim's next job (a StarterOrder's fields, see
#: :func:`epcore.starter.claim_loop.next_message`).
NEXT = "Next"
#: To a READY starter: the claim is over, or its next job needs a starter of its own: exit.
RETIRE = "Retire"

STARTER_COMMANDS = (HELLO, STARTED, UPDATE, FINISHED, BROKEN, READY)

#: In FINISHED, when the machine failed the job's universe (errors.UniverseOffline): the
#: universe's name, its JobUniverse and why; the startd advertises it offline and keeps these
#: out of the job's result.
OFFLINE_UNIVERSE = "EpOfflineUniverse"
OFFLINE_UNIVERSE_NUMBER = "EpOfflineUniverseNumber"
OFFLINE_REASON = "EpOfflineReason"
OFFLINE_ATTRIBUTES = (OFFLINE_UNIVERSE, OFFLINE_UNIVERSE_NUMBER, OFFLINE_REASON)
STARTD_COMMANDS = (SUSPEND, CONTINUE, SOFT_KILL, HARD_KILL, ACK, NEXT, RETIRE)
