"""CEDAR, HTCondor's wire protocol, and its security: epcore's one network face."""
