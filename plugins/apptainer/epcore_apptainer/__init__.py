"""epcore-apptainer: Apptainer and Singularity container jobs for epcore's execution point.

The plugin (``epcore_apptainer.plugin``, registered in the ``epcore`` entry-point group) detects
the runtime named by SINGULARITY (HasSingularity, SingularityVersion, HasSIF, HasSandboxImage...)
and runs the jobs that ask for an image (``container_image``, or SINGULARITY_JOB with
SINGULARITY_IMAGE_EXPR) through ``apptainer exec``. Importing this package does nothing else.
"""

from __future__ import annotations

__version__ = "0.1.0"
