"""HTCondor's file transfer between the submit host's Iwd and the execute host's sandbox.

- :mod:`epcore.transfer.plan` (pure): whether a job's files travel, which files go in and
  come back, the output remaps, where each output lands.
- :mod:`epcore.transfer.wire`: the CEDAR conversations of FILETRANS_UPLOAD (61000) and
  FILETRANS_DOWNLOAD (61001), both ends, sans-I/O.
- :mod:`epcore.transfer.userfs`: opening the submitter's files as the job's owner (the
  thread's file-system identity only, so a daemon's other threads keep theirs).

The schedd's end is :mod:`epcore.schedd.transfer`, the starter's :mod:`epcore.starter.fetch`.
The package sits at the runtime level: it knows no role.
"""
