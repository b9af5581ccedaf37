"""epcore-docker: the docker universe for epcore's execution point.

The plugin (``epcore_docker.plugin``, registered in the ``epcore`` entry-point group) detects a
docker daemon (HasDocker, DockerVersion, volumes and networks) and runs jobs that ask for it
(``WantDocker``) in containers through the docker SDK. Importing this package does nothing else
and does not import the SDK.
"""

from __future__ import annotations

__version__ = "0.1.0"
