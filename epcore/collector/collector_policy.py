"""The collector's knobs read once into a value, and the key of an ad in its store (the
small ad tests it shares with the schedd's queries are in :mod:`epcore.interfaces.queries`)."""

from __future__ import annotations

from typing import Final

import attrs

from epcore.classad import ClassAd, Expr, parse_expr
from epcore.config import Config
from epcore.errors import ClassAdSyntaxError, ConfigError, PoolError
from epcore.interfaces.queries import string_attribute

#: HTCondor's built-in values (the knobs have no entry in the parameter table).
DEFAULT_CLASSAD_LIFETIME: Final = 900
DEFAULT_ABSENT_EXPIRE_ADS_AFTER: Final = 30 * 24 * 3600

MACHINE_TYPE: Final = "Machine"


@attrs.frozen
class CollectorSettings:
    """What the collector's knobs say, in seconds; None for "never"."""

    classad_lifetime: float = DEFAULT_CLASSAD_LIFETIME
    absent_requirements: Expr | None = None
    absent_expire_after: float | None = DEFAULT_ABSENT_EXPIRE_ADS_AFTER
    offline_expire_after: float | None = None
    expire_invalidated: bool = False

    @classmethod
    def from_config(cls, config: Config) -> CollectorSettings:
        """Read CLASSAD_LIFETIME, ABSENT_REQUIREMENTS, ABSENT_EXPIRE_ADS_AFTER,
        OFFLINE_EXPIRE_ADS_AFTER and EXPIRE_INVALIDATED_ADS; ConfigError names a bad one."""
        absent_text = config.get("ABSENT_REQUIREMENTS")
        absent: Expr | None = None
        if absent_text is not None and absent_text.strip():
            try:
                absent = parse_expr(absent_text, source="ABSENT_REQUIREMENTS")
            except ClassAdSyntaxError as error:
                raise ConfigError(
                    f"ABSENT_REQUIREMENTS does not parse as a ClassAd expression: {error}"
                ) from error
        absent_after = config.get_int(
            "ABSENT_EXPIRE_ADS_AFTER", DEFAULT_ABSENT_EXPIRE_ADS_AFTER, minimum=0
        )
        offline_after = config.get_int("OFFLINE_EXPIRE_ADS_AFTER", 0, minimum=0)
        return cls(
            classad_lifetime=config.get_int(
                "CLASSAD_LIFETIME", DEFAULT_CLASSAD_LIFETIME, minimum=0
            ),
            absent_requirements=absent,
            # 0 keeps absent ads forever, as the manual says; HTCondor's own default for
            # OFFLINE_EXPIRE_ADS_AFTER is "practically never", which 0 also spells here.
            absent_expire_after=absent_after or None,
            offline_expire_after=offline_after or None,
            expire_invalidated=config.get_bool("EXPIRE_INVALIDATED_ADS", False),
        )


def ad_key(ad: ClassAd, what: str) -> tuple[str, str]:
    """(lower-cased MyType, Name) of an ad; PoolError when either is missing or not a string."""
    my_type = string_attribute(ad, "MyType")
    name = string_attribute(ad, "Name")
    if my_type is None or name is None:
        missing = "MyType" if my_type is None else "Name"
        shown = name if name is not None else str(ad)[:120]
        raise PoolError(f"{what}: ad {shown!r} has no string {missing} attribute")
    return my_type.lower(), name
