"""HTCondor's configuration language: files, macros, conditionals, templates and defaults.

>>> from epcore.config import Config, MemoryHost
>>> text = "MINUTE = 60\\nSTART = KeyboardIdle > 15 * $(MINUTE)\\n"
>>> cfg = Config.from_text(text, host=MemoryHost())
>>> cfg.get("START")
'KeyboardIdle > 15 * 60'
"""

from __future__ import annotations

from epcore.config.config import Config, split_list
from epcore.config.defaults import KNOB_DEFAULTS, KnobDefault
from epcore.config.host import CommandOutput, ConfigHost, HostFacts, MemoryHost
from epcore.config.table import Definition, Origin
from epcore.config.templates import TEMPLATES, Template
from epcore.errors import ConfigError

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
