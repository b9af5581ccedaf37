"""The layers of epcore, checked over the import statements of every module.

The rules (ARCHITECTURE.md draws them): pure packages import only pure packages; the runtime
layer knows no role; the interfaces between roles know only pure packages and the runtime; a
role (collector, negotiator, schedd, startd, defrag) never imports another role, only the layers
beneath it; only the assembly (``epcore.pool``, ``epcore.cli``) puts roles together; runtime
code never imports ``epcore.testing``; and plugins import only the published API. Every
import counts, also one inside a function or under ``TYPE_CHECKING``: each is a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

import epcore

PACKAGE = Path(epcore.__file__).resolve().parent
PROJECT = PACKAGE.parent

#: Every top-level part of epcore (a subpackage or a module) by its layer.
PURE = frozenset(
    {"classad", "config", "slots", "state", "jobs", "submit", "views", "analysis"}
    | {"errors", "types", "hookspecs"}
)
#: The runtime-level shell: the event loop and its services, and CEDAR (epcore.net), the
#: network face; roles use both, neither knows a role.
RUNTIME = frozenset({"runtime", "net", "transfer"})
INTERFACES = frozenset({"interfaces"})
#: Links to peers in other processes: the interfaces' Protocols spoken over CEDAR; only the
#: assembly makes them, and they know no role.
LINKS = frozenset({"links"})
ROLES = frozenset({"collector", "negotiator", "schedd", "startd", "defrag"})
#: The startd's own child process: only the startd (and the shared shell) may start it.
STARTER = frozenset({"starter"})
#: Shell modules every role may use: the package itself, the plugin manager, the built-in
#: plugins, the published plugin API and the daemons' logging.
SHARED = frozenset({"", "plugins", "builtin", "api", "logs"})
ASSEMBLY = frozenset({"pool", "cli"})
TESTING = frozenset({"testing"})
LAYERS = PURE | RUNTIME | INTERFACES | LINKS | ROLES | STARTER | SHARED | ASSEMBLY | TESTING

#: What the modules of each part may import, besides themselves.
ALLOWED: dict[str, frozenset[str]] = {
    **{part: PURE for part in PURE},
    **{part: PURE | RUNTIME | frozenset({"logs"}) for part in RUNTIME},
    **{part: PURE | RUNTIME for part in INTERFACES},
    **{part: PURE | RUNTIME | INTERFACES | frozenset({"logs"}) for part in LINKS},
    **{part: PURE | RUNTIME | INTERFACES | SHARED | STARTER for part in SHARED},
    **{part: PURE | RUNTIME | INTERFACES | SHARED for part in ROLES - {"startd"}},
    "startd": PURE | RUNTIME | INTERFACES | SHARED | STARTER,
    **{part: PURE | RUNTIME | INTERFACES | SHARED for part in STARTER},
    **{part: LAYERS - TESTING for part in ASSEMBLY},
    **{part: LAYERS for part in TESTING},
}

#: The modules a plugin may import: the published API (DESIGN's public contracts and
#: epcore.api), the hook surface, and epcore.testing for its tests.
PLUGIN_API = frozenset(
    {
        "epcore",
        "epcore.api",
        "epcore.classad",
        "epcore.config",
        "epcore.errors",
        "epcore.types",
        "epcore.hookspecs",
    }
)
#: Imports that break a rule on purpose, each with its reason.
EXCEPTIONS = {
    # DESIGN's public contract is ``Config.load(path)``: without a host it reads the real
    # machine (FULL_HOSTNAME, DETECTED_*). The import is deferred to that call, so the pure
    # package stays pure for every caller that passes a host (the daemons, the simulator).
    ("epcore.config.config", "epcore.builtin.host"),
}
PLUGIN_ROOTS = (
    PROJECT / "plugins" / "docker",
    PROJECT / "plugins" / "apptainer",
    PROJECT / "plugins" / "boinc",
    PROJECT / "plugins" / "vm",
    PROJECT / "tests" / "plugin_fixtures" / "epcore_sample_plugin",
)


@attrs.frozen
class Import:
    """One import of an epcore module: who imports what, and where."""

    importer: str
    path: Path
    line: int
    target: str


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:]) if "." in name else Path()
    return (PACKAGE / relative).with_suffix(".py").is_file() or (
        PACKAGE / relative / "__init__.py"
    ).is_file()


def _imports(path: Path, module: str) -> Iterator[Import]:
    """The epcore modules ``path`` (module ``module``) imports, resolving relative imports
    and ``from package import submodule``."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "epcore":
                    yield Import(module, path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "epcore":
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                yield Import(
                    module, path, node.lineno, submodule if _is_module(submodule) else source
                )


def _part(module: str) -> str:
    """The top-level part of an epcore module ("" for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _epcore_imports() -> list[Import]:
    found: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found.extend(_imports(path, _module_name(path, PACKAGE.parent)))
    return found


def _where(found: Import) -> str:
    place = f"{found.path.relative_to(PROJECT)}:{found.line}"
    return f"{place}: {found.importer} imports {found.target}"


def test_every_part_of_epcore_has_a_layer() -> None:
    """Each subpackage and top-level module of epcore belongs to one layer of the rules."""
    parts = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
    }
    assert parts - LAYERS == set(), "classify these parts in tests/test_import_graph.py"


def _violations(rule: frozenset[str]) -> list[str]:
    broken = []
    for found in _epcore_imports():
        source, target = _part(found.importer), _part(found.target)
        if (found.importer, found.target) in EXCEPTIONS:
            continue
        if source in rule and target != source and target not in ALLOWED[source]:
            broken.append(_where(found))
    return broken


@pytest.mark.parametrize(
    "layer",
    [
        pytest.param(PURE, id="pure packages import only pure packages"),
        pytest.param(RUNTIME, id="the runtime layer knows no role"),
        pytest.param(INTERFACES, id="interfaces import only pure packages and the runtime"),
        pytest.param(ROLES, id="roles never import one another"),
        pytest.param(STARTER, id="the starter imports no role"),
        pytest.param(SHARED, id="shared shell modules import no role"),
        pytest.param(ASSEMBLY, id="the assembly does not import epcore.testing"),
    ],
)
def test_layer_imports_only_what_it_may(layer: frozenset[str]) -> None:
    """No module of the layer imports a part of epcore its rules do not allow."""
    assert _violations(layer) == []


def _plugin_imports() -> Iterator[Import]:
    for root in PLUGIN_ROOTS:
        for path in sorted(root.rglob("*.py")):
            if ".venv" in path.parts or "build" in path.parts:
                continue
            yield from _imports(path, _module_name(path, root))


def test_plugins_import_only_the_published_api() -> None:
    """The docker, apptainer, boinc and vm plugins and the sample plugin (code and tests) import
    only the published API, the hook surface and epcore.testing."""
    broken = [
        _where(found)
        for found in _plugin_imports()
        if found.target not in PLUGIN_API
        and not (found.target == "epcore.testing" or found.target.startswith("epcore.testing."))
    ]
    assert list(_plugin_imports()), "no plugin module found: the check would check nothing"
    assert broken == []


def test_the_checker_sees_a_role_importing_another() -> None:
    """A schedd module importing the startd is reported (the check can fail)."""
    found = Import("epcore.schedd.x", PACKAGE / "x.py", 1, "epcore.startd.startd")
    source, target = _part(found.importer), _part(found.target)
    assert source in ROLES and target not in ALLOWED[source]
