"""The configuration language, case by case: each case states the value epcore must give, and
the oracle test checks that HTCondor gives the same, so the expectations are HTCondor's."""

from __future__ import annotations

import pytest
from param_oracle import ParamOracle

from epcore.builtin.host import LocalHost
from epcore.config import Config, KnobDefault, MemoryHost

#: (id, configuration text, knob, expected expanded value or None)
CASES: list[tuple[str, str, str, str | None]] = [
    ("plain", "A = 1\n", "A", "1"),
    ("names-are-case-insensitive", "Foo = 1\nB = $(FOO) $(foo)\n", "b", "1 1"),
    ("value-is-trimmed", "A   =   spaced value   \n", "A", "spaced value"),
    ("empty-is-none", "A =\n", "A", None),
    ("expands-to-empty-is-none", "A = $(NOPE)\n", "A", None),
    ("colon-assignment", "A : old style\n", "A", "old style"),
    ("words-before-operator", "FOO bar = 1\n", "FOO", "1"),
    ("dotted-and-slashed-names", "X.Y = d\nA/B = s\nC = $(X.Y)$(A/B)\n", "C", "ds"),
    ("ini-section-ignored", "[section]\nA = 1\n", "A", "1"),
    ("hash-inside-value-kept", "A = a#b\n", "A", "a#b"),
    ("continuation", "A = one \\\n   two\n", "A", "one two"),
    ("continuation-no-space", "A = one\\\n   two\n", "A", "onetwo"),
    ("continuation-trailing-spaces", "A = x \\   \n   y\n", "A", "x y"),
    ("continuation-comment-keeps-last-char", "A = x \\\n# note\nB = 1\n", "A", "x e"),
    ("continuation-comment-continues", "A = x \\\n# note \\\nB = 1\n", "A", "x B = 1"),
    ("comment-line-does-not-continue", "# c \\\nA = 1\n", "A", "1"),
    ("double-backslash", "A = x \\\\\n  y\n", "A", "x \\y"),
    ("last-line-without-newline", "B = 1\nA = 2", "A", "2"),
    ("here-document", "A @=end\n  one\n\ttwo\n@end\n", "A", "one\ntwo"),
    ("here-document-skips-comments", "A @=e\n one\n # c\n\n two\n@e\n", "A", "one\ntwo"),
    ("here-document-continuation", "A @=e\n one \\\n two\n@e\n", "A", "one two"),
    ("macro", "M = 60\nA = 15 * $(M)\n", "A", "15 * 60"),
    ("macro-default", "A = $(NOPE:fallback value)\n", "A", "fallback value"),
    ("macro-default-when-empty", "E =\nA = $(E:dflt)\n", "A", "dflt"),
    ("macro-default-nested", "B = b\nA = $(NOPE:$(B))\n", "A", "b"),
    ("undefined-macro-is-empty", "A = [$(NOPE)]\n", "A", "[]"),
    ("not-a-reference", "A = $(A B) $(x-y) $( )\n", "A", "$(A B) $(x-y) $( )"),
    ("late-binding", "A = $(B)\nB = 2\n", "A", "2"),
    ("self-reference", "A = 1\nA = $(A) 2\nA = $(A) 3\n", "A", "1 2 3"),
    ("self-reference-undefined", "A = $(A) x\n", "A", " x"),
    ("self-reference-default", "A = $(A:none) x\n", "A", "none x"),
    ("self-reference-of-default", "START = ($(START)) && x\n", "START", "(True) && x"),
    ("self-reference-case", "Attrs = a\nATTRS = $(attrs) b\n", "ATTRS", "a b"),
    ("dollar", "A = $(DOLLAR)(X) $(dollar)\n", "A", "$(X) $"),
    ("match-time-reference-kept", "A = $$(OpSys) $$([1+2])\n", "A", "$$(OpSys) $$([1+2])"),
    ("env", "A = $ENV(NO_SUCH_VARIABLE_X)\n", "A", "UNDEFINED"),
    ("env-default", "A = $ENV(NO_SUCH_VARIABLE_X:dflt)\n", "A", "dflt"),
    ("int", "G = 3*4\nA = $INT(G) $INT(G,%05d) $INT(1.9) $INT(T)\nT = true\n", "A", "12 00012 1 1"),
    ("real", "G = 3*4\nA = $REAL(G) $REAL(G,%.2f) $REAL(1e3)\n", "A", "12 12.00 1000"),
    ("real-format-gets-point", "A = $REAL(7,%.0f)\n", "A", "7.0"),
    ("choice", "L = p, q ,r\nA = $CHOICE(1, a, b, c) $CHOICE(0,L) $CHOICE(2,L)\n", "A", "b p r"),
    (
        "substr",
        "S = abcdef\nA = $SUBSTR(S,2) $SUBSTR(S,1,3) $SUBSTR(S,-2) $SUBSTR(S,0,-1)\n",
        "A",
        "cdef bcd ef abcde",
    ),
    ("string", 'S = "x y"\nA = $STRING(S) $STRING(S,%-5s|)\n', "A", "x y x y  |"),
    ("eval", 'G = 3*4\nA = $EVAL(G) $EVAL(1.5) $EVAL("s")\n', "A", "12 1.500000000000000E+00 s"),
    ("random-integer-one-choice", "A = $RANDOM_INTEGER(3,3) $RANDOM_CHOICE(q)\n", "A", "3 q"),
    (
        "path-parts",
        "P = /a/b/c.txt\nA = $Fn(P) $Fx(P) $Fp(P) $Fd(P) $Fnx(P)\n",
        "A",
        "c .txt /a/b/ b/ c.txt",
    ),
    (
        "path-bare-and-quoted",
        "P = /a/b/c.txt\nA = $Fpb(P) $Fxb(P) $Fqn(P) $Fdd(P)\n",
        "A",
        '/a/b txt "c" a/b/',
    ),
    ("path-separators", "W = C:\\x\\y.z\nP = /a/b\nA = $Fu(W) $Fw(P)\n", "A", "C:/x/y.z \\a\\b"),
    ("basename-dirname", "P = /a/b/c.txt\nA = $BASENAME(P) $DIRNAME(P)\n", "A", "c.txt /a/b/"),
    ("subsystem-prefix", "STARTD.A = s\nA = plain\n", "A", "s"),
    ("other-subsystem-prefix", "NEGOTIATOR.A = n\nA = plain\n", "A", "plain"),
    ("prefixed-reference", "STARTD.B = s\nB = p\nA = $(B)\n", "A", "s"),
    ("prefixed-self-reference", "START = a\nSTARTD.START = $(START) b\n", "START", "a b"),
    ("name-is-expanded", "N = X\n$(N)_Y = 1\n", "X_Y", "1"),
    ("if-true", "if true\nA = 1\nelse\nA = 2\nendif\n", "A", "1"),
    ("if-macro", "X = 1\nif $(X)\nA = yes\nendif\n", "A", "yes"),
    ("if-empty-macro-false", "if $(NOPE)\nA = 1\nelse\nA = 0\nendif\n", "A", "0"),
    ("if-not", "if ! defined NOPE\nA = 1\nendif\n", "A", "1"),
    ("if-defined", "X = 1\nif defined X\nA = 1\nendif\n", "A", "1"),
    ("if-defined-empty", "X =\nif defined X\nA = 1\nelse\nA = 0\nendif\n", "A", "0"),
    ("if-defined-default", "if defined MINUTE\nA = 1\nendif\n", "A", "1"),
    ("if-defined-number", "if defined 5\nA = 1\nendif\n", "A", "1"),
    ("elif", "if false\nA = 1\nelif true\nA = 2\nelse\nA = 3\nendif\n", "A", "2"),
    ("elif-after-true", "if true\nA = 1\nelif true\nA = 2\nendif\n", "A", "1"),
    ("nested-if", "if true\nif false\nA = 1\nelse\nA = 2\nendif\nendif\n", "A", "2"),
    ("if-disabled-outer", "if false\nif true\nA = 1\nendif\nelse\nA = 3\nendif\n", "A", "3"),
    ("if-number", "if 0.0\nA = 1\nelse\nA = 0\nendif\n", "A", "0"),
    ("if-negative", "if -1\nA = 1\nendif\n", "A", "1"),
    ("if-crufty-yes", "if yes\nA = 1\nendif\n", "A", "1"),
    ("if-crufty-f", "if f\nA = 1\nelse\nA = 0\nendif\n", "A", "0"),
    ("version-ge", "if version >= 8.1.6\nA = new\nendif\n", "A", "new"),
    ("version-gt-future", "if version > 30.0\nA = 1\nelse\nA = 0\nendif\n", "A", "0"),
    ("version-eq", "if version == 25.14.1\nA = eq\nendif\n", "A", "eq"),
    ("version-two-fields", "if version >= 25.14\nA = ok\nendif\n", "A", "ok"),
    ("version-ne", "if version != 25.14.1\nA = 1\nelse\nA = 0\nendif\n", "A", "0"),
    ("if-colon-prefix", ":if true\nA = 1\nendif\n", "A", "1"),
    ("defined-use-category", "if defined use POLICY\nA = 1\nendif\n", "A", "1"),
    ("defined-use-template", "if defined use POLICY:Desktop\nA = 1\nendif\n", "A", "1"),
    ("defined-use-unknown", "if defined use POLICY:NoSuch\nA = 1\nelse\nA = 0\nendif\n", "A", "0"),
    ("include-ifexist-missing", "include ifexist : /no/such/file\nA = 1\n", "A", "1"),
    ("warning-is-not-fatal", "warning : careful\nA = 1\n", "A", "1"),
    ("use-desktop", "use POLICY : Desktop\n", "IS_OWNER", "(START =?= False)"),
    ("use-case-insensitive", "USE policy:desktop\n", "IS_OWNER", "(START =?= False)"),
    ("use-two-templates", "use ROLE : Execute, Submit\n", "DAEMON_LIST", "MASTER STARTD SCHEDD"),
]


def _load(text: str, host: LocalHost) -> Config:
    return Config.from_text(text, host=host, subsystem="STARTD")


@pytest.mark.parametrize(
    ("text", "name", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_case_expands_as_stated(
    text: str, name: str, expected: str | None, local_host: LocalHost
) -> None:
    """Each construct gives the value the case states."""
    assert _load(text, local_host).get(name) == expected


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("text", "name", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_case_matches_htcondor(
    text: str, name: str, expected: str | None, local_host: LocalHost, param_oracle: ParamOracle
) -> None:
    """HTCondor's own reader gives the same value for every case."""
    answer = param_oracle.load(text, [name])
    assert answer.error is None, answer.error
    assert answer.values[name].text == _load(text, local_host).get(name)


def test_random_functions_pick_from_their_range(local_host: LocalHost) -> None:
    """$RANDOM_CHOICE and $RANDOM_INTEGER pick within what they are given."""
    text = "L = a, b, c\nA = $RANDOM_CHOICE(x,y,z) $RANDOM_CHOICE(L) $RANDOM_INTEGER(10, 20, 5)\n"
    for _ in range(20):
        value = _load(text, local_host).get("A")
        assert value is not None
        first, second, third = value.split()
        assert first in "xyz" and second in "abc" and third in ("10", "15", "20")


def test_subsystem_given_at_lookup_overrides_the_loaded_one(local_host: LocalHost) -> None:
    """get(name, subsystem=...) answers as that daemon would."""
    cfg = _load("NEGOTIATOR.A = n\nSTARTD.A = s\nA = plain\n", local_host)
    assert (cfg.get("A"), cfg.get("A", subsystem="negotiator"), cfg.get("A", "SCHEDD")) == (
        "s",
        "n",
        "plain",
    )


def test_local_name_prefix_wins_over_subsystem(local_host: LocalHost) -> None:
    """A local-name prefix (STARTD2.NAME) beats the subsystem prefix and the bare name."""
    cfg = Config.from_text(
        "STARTD2.A = local\nSTARTD.A = sub\nA = bare\n",
        host=local_host,
        subsystem="STARTD",
        local_name="STARTD2",
    )
    assert cfg.get("A") == "local"
    assert cfg.get("A", subsystem="STARTD") == "sub"


def test_slot_lookup_prefers_slot_then_slot_type_then_plain(local_host: LocalHost) -> None:
    """slot_get reads SLOT<N>_NAME, then SLOT_TYPE_<T>_NAME, then NAME, as the startd does."""
    cfg = _load(
        "STARTD_ATTRS = plain\nSLOT_TYPE_2_STARTD_ATTRS = type2\nSLOT1_STARTD_ATTRS = slot1\n",
        local_host,
    )
    assert cfg.slot_get("STARTD_ATTRS", 1, slot_type=2) == "slot1"
    assert cfg.slot_get("STARTD_ATTRS", 3, slot_type=2) == "type2"
    assert cfg.slot_get("STARTD_ATTRS", 3) == "plain"
    assert cfg.slot_get("NO_SUCH_KNOB", 3, slot_type=2) is None


def test_typed_reads_follow_the_daemons(local_host: LocalHost) -> None:
    """get_int/get_float/get_bool evaluate expressions and fall back on bad values."""
    cfg = _load(
        "I = 3*4\nR = 2.7\nBAD = abc\nB1 = TRUE && false\nB2 = 2\nY = yes\nL = a, b c\n",
        local_host,
    )
    assert (cfg.get_int("I", 0), cfg.get_int("R", 0), cfg.get_int("BAD", 5)) == (12, 2, 5)
    assert (cfg.get_float("R", 0.0), cfg.get_float("I", 0.0), cfg.get_float("BAD", 1.5)) == (
        2.7,
        12.0,
        1.5,
    )
    assert (cfg.get_bool("B1", True), cfg.get_bool("B2", False), cfg.get_bool("Y", False)) == (
        False,
        True,
        False,
    )
    assert cfg.get_bool("Y", False, crufty=True) is True
    assert cfg.get_int("UNSET", 9) == 9
    assert cfg.get_list("L") == ["a", "b", "c"]


@pytest.mark.oracle
def test_typed_reads_match_htcondor(local_host: LocalHost, param_oracle: ParamOracle) -> None:
    """For knobs HTCondor declares typed, the daemon's reading matches htcondor2.param."""
    text = (
        "NUM_CPUS = $(DETECTED_CORES)*2\nMATCH_TIMEOUT = abc\nKILLING_TIMEOUT = 2.7\n"
        "ENABLE_BACKFILL = TRUE && false\nSTARTD_ENFORCE_DISK_LIMITS = yes\n"
        "PRIORITY_HALFLIFE = 1e3\n"
    )
    cfg = _load(text, local_host)
    answer = param_oracle.load(
        text,
        [
            "NUM_CPUS",
            "MATCH_TIMEOUT",
            "KILLING_TIMEOUT",
            "ENABLE_BACKFILL",
            "STARTD_ENFORCE_DISK_LIMITS",
            "PRIORITY_HALFLIFE",
        ],
    )
    typed = {name: value.typed for name, value in answer.values.items()}
    assert typed == {
        "NUM_CPUS": repr(cfg.get_int("NUM_CPUS", 1)),
        "MATCH_TIMEOUT": repr(cfg.get_int("MATCH_TIMEOUT", 120)),
        "KILLING_TIMEOUT": repr(cfg.get_int("KILLING_TIMEOUT", 30)),
        "ENABLE_BACKFILL": repr(cfg.get_bool("ENABLE_BACKFILL", False)),
        "STARTD_ENFORCE_DISK_LIMITS": repr(cfg.get_bool("STARTD_ENFORCE_DISK_LIMITS", False)),
        "PRIORITY_HALFLIFE": repr(cfg.get_float("PRIORITY_HALFLIFE", 86400.0)),
    }


def test_subsystem_local_name_form_is_warned_about(local_host: LocalHost) -> None:
    """STARTD.STARTD2.NAME is not read (as in HTCondor 25) and a warning names it."""
    cfg = Config.from_text(
        "STARTD.STARTD2.A = old\nSTARTD2.A = new\n", host=local_host, local_name="STARTD2"
    )
    assert cfg.get("A") == "new"
    assert any("STARTD.STARTD2.A has the unsupported form" in w for w in cfg.warnings)


def test_extra_defaults_join_the_table() -> None:
    """Knobs a plugin adds (ep_config_defaults) have defaults that $(NAME) and get() see."""
    extra = [KnobDefault("PLUGIN_KNOB", "42", "int", "A knob a plugin adds.")]
    cfg = Config.from_text("X = $(PLUGIN_KNOB) $(MINUTE)\n", host=MemoryHost(), defaults=extra)
    assert (cfg.get("X"), cfg.get("plugin_knob")) == ("42 60", "42")
    assert Config.from_text("", host=MemoryHost()).get("PLUGIN_KNOB") is None


def test_expansions_are_reused_but_random_draws_are_not() -> None:
    """get() keeps expansions until the table changes; a $RANDOM_ value is drawn at each read,
    also through another knob, as HTCondor draws it at every param() call."""
    cfg = Config.from_text(
        "A = 1\nB = $(A) x\nR = $RANDOM_INTEGER(0, 1000000)\nVIA = $(R)\n", host=MemoryHost()
    )
    assert cfg.get("B") == "1 x"
    cfg.table.set("A", "2", cfg.table.entries["a"].origin)
    assert cfg.get("B") == "2 x"
    assert len({cfg.get("R") for _ in range(20)}) > 1
    assert len({cfg.get("VIA") for _ in range(20)}) > 1
