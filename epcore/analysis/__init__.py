"""better-analyze: why a job does or does not match the pool's slots."""
