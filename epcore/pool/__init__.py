"""The assembly of a pool: which services run (``ep run``), the pool's request socket and its
requests, and the personal pool's configuration."""
