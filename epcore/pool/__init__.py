"""The central-manager side of a personal pool: collector, negotiator, job queue and schedd,
and the submit-file language."""
