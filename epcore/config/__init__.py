"""HTCondor's configuration language: files, macros, conditionals, templates and defaults.

>>> from epcore.config import Config, MemoryHost
>>> text = "MINUTE = 60\\nSTART = KeyboardIdle > 15 * $(MINUTE)\\n"
>>> cfg = Config.from_text(text, host=MemoryHost())
>>> cfg.get("START")
'KeyboardIdle > 15 * 60'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from epcore.config.config import Config, split_list
from epcore.config.defaults import KNOB_DEFAULTS, KnobDefault
from epcore.config.host import CommandOutput, ConfigHost, HostFacts
from epcore.config.table import Definition, Origin
from epcore.config.templates import TEMPLATES, Template
from epcore.errors import ConfigError

if TYPE_CHECKING:
    from epcore.config.memory_host import MemoryHost


def __getattr__(name: str) -> object:
    # MemoryHost is imported when first asked for: a command that reads the real machine's
    # configuration (ep submit) has no use for it.
    if name == "MemoryHost":
        from epcore.config.memory_host import MemoryHost

        return MemoryHost
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "KNOB_DEFAULTS",
    "TEMPLATES",
    "CommandOutput",
    "Config",
    "ConfigError",
    "ConfigHost",
    "Definition",
    "HostFacts",
    "KnobDefault",
    "MemoryHost",
    "Origin",
    "Template",
    "split_list",
]
