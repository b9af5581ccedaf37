"""A sample third-party epcore plugin (see :mod:`epcore_sample_plugin.plugin`)."""
