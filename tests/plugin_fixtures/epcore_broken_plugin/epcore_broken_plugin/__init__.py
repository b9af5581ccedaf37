"""A sample epcore plugin that fails at import (see :mod:`epcore_broken_plugin.plugin`)."""
