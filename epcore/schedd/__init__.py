"""The schedd: the job queue, its periodic policy, limits and submit requirements, and the
claims it runs jobs on."""
