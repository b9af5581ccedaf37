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


#: What HTCondor's collector adds to an ad's Name to make its key (hashkey.cpp), by lower-cased
#: MyType: a submitter ad is named after its user, who may submit from several schedds; an
#: accounting ad after its user, whom several negotiators may account for. The MyAddress is no
#: part of any key since HTCondor 10.8 (HTCONDOR-1948): a daemon of the same Name at another
#: address replaces the first, as several parts of HTCondor assume one daemon per Name.
#: (The grid, license and checkpoint server keys are left out: those ads reach this
#: collector only by UPDATE_AD_GENERIC, which HTCondor keys by Name alone.)
_NAME_SUFFIXES: Final = {
    "scheduler": "ScheddName",
    "submitter": "ScheddName",
    "accounting": "NegotiatorName",
}
#: Types whose ads lacking a Name are keyed by their Machine instead, as HTCondor's are.
_MACHINE_FALLBACK: Final = frozenset(
    {"machine", "scheduler", "submitter", "daemonmaster", "collector"}
)
#: Joins a name and its suffix: HTCondor concatenates them bare, which lets "ab" + "c" and
#: "a" + "bc" collide; a character no name holds keeps them apart.
_JOIN: Final = "\x00"


def ad_key(ad: ClassAd, what: str) -> tuple[str, str]:
    """(lower-cased MyType, the ad's key name): the ads a collector keeps one of, as HTCondor's
    keys them (:func:`key_name`); PoolError when the ad has no string MyType or no name."""
    my_type = string_attribute(ad, "MyType")
    if my_type is None:
        shown = string_attribute(ad, "Name") or str(ad)[:120]
        raise PoolError(f"{what}: ad {shown!r} has no string MyType attribute")
    kind = my_type.lower()
    return kind, key_name(kind, ad, what)


def key_name(kind: str, ad: ClassAd, what: str) -> str:
    """The name an ad of lower-cased MyType ``kind`` is kept under: its Name (a machine ad's
    update costs one set lookup more than a bare Name); the Machine (with ``:SlotID`` for a
    slot) when it has none; schedd and submitter ads add their ScheddName, accounting ads
    their NegotiatorName. PoolError when there is no name."""
    name = string_attribute(ad, "Name")
    if name is not None and kind not in _NAME_SUFFIXES:
        return name
    if name is None and kind in _MACHINE_FALLBACK:
        name = string_attribute(ad, "Machine")
        slot = ad.evaluate("SlotID") if name is not None and kind == "machine" else None
        if type(slot) is int:
            name = f"{name}:{slot}"
    if name is None:
        raise PoolError(f"{what}: ad {str(ad)[:120]!r} has no string Name attribute")
    suffix = _NAME_SUFFIXES.get(kind)
    tail = None if suffix is None else string_attribute(ad, suffix)
    return name if tail is None else f"{name}{_JOIN}{tail}"
