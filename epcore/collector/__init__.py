"""The collector: the pool's ads, their expiry, absent and offline ads, and the queries."""
