"""The startd daemon: the imperative shell around the pure policy engine (clock, timers,
signals, starters, the control socket, the log and ad publishing)."""
