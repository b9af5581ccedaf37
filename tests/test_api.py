"""epcore.api, the published API for plugins: re-exports, each documented."""

from __future__ import annotations

import epcore
import epcore.api


def test_every_published_name_is_a_re_export() -> None:
    """Each name in epcore.api.__all__ is the object of an internal module, never a copy."""
    for name in epcore.api.__all__:
        found = getattr(epcore.api, name)
        assert found.__module__ != "epcore.api", name
        assert found.__module__.startswith("epcore."), name


def test_every_published_name_is_documented() -> None:
    """The module's docstring, which says what is stable, names every published name."""
    assert epcore.api.__doc__ is not None
    undocumented = [name for name in epcore.api.__all__ if f"`{name}`" not in epcore.api.__doc__]
    assert undocumented == []


def test_the_package_docstring_lists_the_public_modules() -> None:
    """epcore's docstring names the public modules and says the rest is internal."""
    assert epcore.__doc__ is not None
    for module in ("api", "classad", "config", "errors", "types", "hookspecs", "testing"):
        assert f":mod:`epcore.{module}`" in epcore.__doc__, module
    assert "Everything else is internal" in epcore.__doc__
