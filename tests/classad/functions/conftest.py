"""Helpers for the built-in function tests: the oracle with HTCondor's compat functions loaded.

The comparisons reuse the differential suite's canonical forms (tests/classad/oracle.py), so
a real, a relative time and an absolute time with its zone offset are all told apart. Section B
functions (stringListSize, envV1ToV2, ...) exist in classad2 only once the htcondor2 bindings
have registered them; the ``compat`` fixture does that, pointing CONDOR_CONFIG at an empty file
when nothing else chose a configuration, so that no local HTCondor setup leaks into the tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from oracle import Scene, World, parse_oracle_ad

from epcore.classad import parse_ad


@pytest.fixture(scope="session")
def compat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Make classad2 know HTCondor's compat-layer functions (section B of the reference)."""
    if "CONDOR_CONFIG" not in os.environ:
        empty = tmp_path_factory.mktemp("condor") / "condor_config"
        empty.write_text("")
        os.environ["CONDOR_CONFIG"] = str(empty)
    import htcondor2  # noqa: F401  (importing registers the functions with classad2)

    yield


#: An ad exercising the reference- and scope-sensitive functions (unparse, unresolved, eval,
#: evalInEachContext, countMatches) in both engines.
SCOPE_AD = """[
    x = 1 + 2; y = x * 2; z = TARGET.w + q + MY.x + y;
    l = {[a = 1], [a = 2; b = x], undefined, 3}; n = [p = 7; r = q]; s = "1 + x";
    req = a > 1; t = target.w; v = q2; u = v + 1;
    m1 = MY.nope + Target.nope2 + foo.bar + n.p + n.zz + .x + .qq + n.r;
    f = strcat(zz1, {zz2, [k = zz3; j = k]}); ap = parent.x + self.x + root.x + toplevel.x;
    cyc = cyc2; cyc2 = cyc; sc = x.y + z;
    e1 = {}; e2 = []; e3 = {1, {2, 3}}; e4 = [b = {1, 2}; c = [d = 1]]; e5 = size({1, 2}) + 1;
    e7 = {[]}; e8 = [a = {}]; e9 = x ? {1} : [a = 1]; e12 = {1.5, "a\\"b"}
]"""
SCOPE_TARGET = "[w = 10; q = 5; a = 0]"


@pytest.fixture(scope="session")
def scope_scenes(world: World, compat: None) -> tuple[Scene, ...]:
    """SCOPE_AD as MY, without and with SCOPE_TARGET as TARGET, in both engines."""
    my, target = parse_ad(SCOPE_AD), parse_ad(SCOPE_TARGET)
    oracle_my, oracle_target = parse_oracle_ad(SCOPE_AD), parse_oracle_ad(SCOPE_TARGET)
    import classad2

    texts = (("MY", SCOPE_AD), ("TARGET", SCOPE_TARGET))
    return (
        Scene("MY = scope ad", my, None, oracle_my, classad2.ClassAd(), texts[:1]),
        Scene("MY = scope ad, TARGET", my, target, oracle_my, oracle_target, texts),
    )
