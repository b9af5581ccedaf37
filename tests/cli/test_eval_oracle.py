"""``ep eval`` prints results as classad_eval does: the oracle's unparse of the simplified value."""

from __future__ import annotations

import classad2
import pytest
from click.testing import CliRunner

from epcore.cli.main import ep

pytestmark = pytest.mark.oracle

MY_AD = '[a = 2; b = 3.5; s = "x"; l = {1, "two", 3}; n = [p = 1; q = "r"]]'
TARGET_AD = '[Memory = 2048; Arch = "X86_64"; a = 99]'


def oracle_print(expression: str, target: bool) -> str:
    """What classad_eval prints for ``expression``: repr() of the tree simplified in context."""
    my = classad2.ClassAd(MY_AD)
    other = classad2.ClassAd(TARGET_AD) if target else classad2.ClassAd()
    holder = classad2.ClassAd(f"[__e = {expression}]")
    return repr(holder.lookup("__e").simplify(my, other))


EXPRESSIONS = [
    "1 + 2",
    "7 / 2",
    "-7 % 3",
    "10000000000 * 10000000000",
    "a * b",
    "b * 2",
    "1e30",
    "0.5",
    "real(7)",
    "int(3.7)",
    'strcat(s, "y")',
    '"tab\\there"',
    '"quote\\"d"',
    '"back\\\\slash"',
    "undefined",
    "error",
    "nosuch",
    "1 / 0",
    "a > 1 && b < 3",
    "a =?= 2.0",
    "isUndefined(nosuch)",
    'ifThenElse(a > 1, "big", "small")',
    "l",
    "size(l)",
    '{1, 2.5, "three", undefined}',
    "{}",
    "n",
    "n.q",
    "TARGET.Memory",
    "MY.a + TARGET.a",
    "TARGET.a - a",
]

# Reals whose %.15E form is not exact: epcore prints 17 significant digits there on
# purpose so that every printed value reads back as the same double (see unparse.py).
NOT_ROUND_TRIPPING = [("0.1 + 0.2", 0.1 + 0.2), ("1.1 * 1.1", 1.1 * 1.1)]


@pytest.fixture(scope="module")
def target_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("oracle") / "target.ad"
    path.write_text(TARGET_AD, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("expression", EXPRESSIONS)
@pytest.mark.parametrize("target", [False, True], ids=["one-ad", "two-ad"])
def test_result_matches_oracle_unparse(expression: str, target: bool, target_file: str) -> None:
    """Each result line is what classad_eval (libclassad's unparser) prints for the value."""
    args = ["eval", "-quiet", MY_AD]
    if target:
        args += ["-target-file", target_file]
    result = CliRunner().invoke(ep, [*args, expression])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [oracle_print(expression, target)]


@pytest.mark.parametrize(("expression", "value"), NOT_ROUND_TRIPPING)
def test_inexact_reals_print_exactly(expression: str, value: float) -> None:
    """Reals that libclassad's %.15E would round are printed so that they read back exactly."""
    result = CliRunner().invoke(ep, ["eval", "-quiet", expression])
    assert result.exit_code == 0, result.output
    (printed,) = result.stdout.splitlines()
    assert float(printed) == value
    assert printed != oracle_print(expression, target=False)


def test_unscoped_name_falls_back_to_target(target_file: str) -> None:
    """An unscoped name missing from MY is looked up in TARGET, as in HTCondor's match context."""
    result = CliRunner().invoke(ep, ["eval", "-quiet", MY_AD, "-target-file", target_file, "Arch"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ['"X86_64"']
