"""Plugins and host access that ship with epcore, registered like third-party ones."""
