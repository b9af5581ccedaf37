"""The starter: runs one job for the startd (sandbox, user, environment, process tracking,
limits, usage, job hooks, exit and hold), as its own process so that it outlives a startd
restart."""
