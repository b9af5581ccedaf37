"""The hookspecs follow the project's conventions, and only epcore/plugins.py calls hooks."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from pathlib import Path

import pytest

import epcore
from epcore import hookspecs

PACKAGE = Path(epcore.__file__).resolve().parent
SPEC_MARK = f"{hookspecs.PROJECT}_spec"

#: What the issue asks the hooks to cover, and the hook that covers each.
COVERAGE = {
    "configuration parameters a plugin adds": "ep_config_defaults",
    "resource detection": "ep_detect_resources",
    "extra machine attributes": "ep_machine_attributes",
    "isolation backends": "ep_isolation_backends",
    "container runtimes": "ep_container_runtimes",
    "cron jobs": "ep_cron_jobs",
    "fetch-work sources": "ep_fetch_work_sources",
    "extra ClassAd functions": "ep_classad_functions",
    "notification: slot state changed": "ep_slot_state_changed",
    "notification: job started": "ep_job_started",
    "notification: job finished": "ep_job_finished",
}

#: How a hook's docstring must start, given how it is called.
CALL_STYLES = ("All results:", "First result:", "Notification:")


def _functions() -> dict[str, Callable[..., object]]:
    """Every function defined in epcore.hookspecs."""
    return {
        name: value
        for name, value in vars(hookspecs).items()
        if inspect.isfunction(value) and value.__module__ == hookspecs.__name__
    }


def _specs() -> dict[str, Callable[..., object]]:
    return {name: f for name, f in _functions().items() if hasattr(f, SPEC_MARK)}


SPEC_NAMES = sorted(_specs())


def test_hookspecs_module_declares_only_hooks() -> None:
    """Every function of epcore.hookspecs is a hookspec: the module holds nothing else."""
    assert set(_functions()) == set(_specs())
    assert len(SPEC_NAMES) >= len(COVERAGE)


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_hookspec_name_has_the_ep_prefix(name: str) -> None:
    """Every hookspec's name starts with ep_."""
    assert name.startswith("ep_")


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_hookspec_docstring_says_how_it_is_called(name: str) -> None:
    """The docstring's first line starts with how the hook is called, matching its options."""
    spec = _specs()[name]
    first_line = (spec.__doc__ or "").strip().splitlines()[0]
    style = next((s for s in CALL_STYLES if first_line.startswith(s)), None)
    assert style is not None, f"{name}: {first_line!r} does not start with one of {CALL_STYLES}"
    first_result = bool(getattr(spec, SPEC_MARK).get("firstresult"))
    assert (style == "First result:") == first_result, f"{name}: {style} vs firstresult"
    returns = inspect.signature(spec).return_annotation
    assert (style == "Notification:") == (returns == "None"), f"{name} returns {returns}"


@pytest.mark.parametrize(("purpose", "hook"), sorted(COVERAGE.items()))
def test_issue_purpose_has_a_hook(purpose: str, hook: str) -> None:
    """Each kind of extension the issue names has its hookspec."""
    assert hook in SPEC_NAMES, f"no hook for {purpose}"


def _hook_uses(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every ``.hook`` attribute access in the Python file ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "hook"
    ]


def test_only_the_plugin_manager_calls_hooks() -> None:
    """No module of the epcore package but epcore/plugins.py touches a plugin manager's hooks."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "plugins.py"
        for line, text in _hook_uses(path)
    ]
    assert not offenders, "\n".join(offenders)


def test_the_hook_scan_sees_hook_calls() -> None:
    """The scan above finds epcore/plugins.py's own hook calls (so it is not looking nowhere)."""
    assert _hook_uses(PACKAGE / "plugins.py")


def test_every_hookspec_is_called_by_the_plugin_manager() -> None:
    """epcore/plugins.py calls every hook (by attribute or by name), so none is dead."""
    source = (PACKAGE / "plugins.py").read_text(encoding="utf-8")
    uncalled = [
        name for name in SPEC_NAMES if f".{name}(" not in source and f'"{name}"' not in source
    ]
    assert not uncalled
