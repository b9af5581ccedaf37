"""The hookspecs follow the project's conventions, only the plugin manager (epcore/plugins/)
calls hooks, and
every hook's result reaches runtime code: no hook leads nowhere."""

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
#: The plugin manager: the only package that calls hooks; its typed hooks are in manager.py.
MANAGER = PACKAGE / "plugins"

#: What the issue asks the hooks to cover, and the hook that covers each.
COVERAGE = {
    "configuration parameters a plugin adds": "ep_config_defaults",
    "resource detection": "ep_detect_resources",
    "extra machine attributes": "ep_machine_attributes",
    "isolation backends": "ep_isolation_backends",
    "container runtimes": "ep_container_runtimes",
    "backfill systems": "ep_backfill_backends",
    "cron jobs": "ep_cron_jobs",
    "fetch-work sources": "ep_fetch_work_sources",
    "power backends (sleep states, Wake-on-LAN)": "ep_power_backends",
    "per-job scratch filesystems": "ep_scratch_filesystems",
    "extra ClassAd functions": "ep_classad_functions",
    "notification: slot state changed": "ep_slot_state_changed",
    "notification: job started": "ep_job_started",
    "notification: job finished": "ep_job_finished",
}

#: An end-to-end test of each hook: a daemon, a pool or a command that uses what a plugin
#: answers (path from the repository root, then the test's name).
END_TO_END = {
    "ep_config_defaults": "tests/test_plugins.py::test_third_party_plugin_in_a_real_venv",
    "ep_detect_resources": "tests/test_plugins.py::test_third_party_plugin_in_a_real_venv",
    "ep_host_readings": (
        "tests/cli/test_status_cmd.py::test_default_view_lists_the_partitionable_slot"
    ),
    "ep_machine_attributes": "tests/test_plugins.py::test_third_party_plugin_in_a_real_venv",
    "ep_isolation_backends": (
        "tests/startd/test_startd_isolation.py::test_escaped_processes_die_with_the_job"
    ),
    "ep_container_runtimes": (
        "plugins/docker/tests/test_docker_startd.py"
        "::test_exit_code_is_recorded_and_the_container_removed"
    ),
    "ep_backfill_backends": (
        "tests/startd/test_startd_backfill.py"
        "::test_idle_slots_share_one_client_that_a_claim_shrinks_and_the_last_one_kills"
    ),
    "ep_cron_jobs": (
        "tests/startd/test_startd_cron_python.py::test_python_cron_job_ads_appear_in_the_slot_ads"
    ),
    "ep_fetch_work_sources": (
        "tests/startd/test_fetch_work_source.py"
        "::test_source_jobs_run_and_claims_are_reused_then_evicted"
    ),
    "ep_power_backends": (
        "tests/pool/test_pool_power.py::test_a_job_submitted_while_asleep_wakes_the_machine"
    ),
    "ep_scratch_filesystems": (
        "tests/starter/test_scratch_filesystem.py"
        "::test_a_job_over_its_disk_is_held_with_the_backends_code"
    ),
    **{
        hook: (
            "tests/pool/test_pool_plugin_functions.py"
            "::test_a_plugin_function_in_start_decides_which_jobs_run"
        )
        for hook in (
            "ep_classad_functions",
            "ep_slot_state_changed",
            "ep_job_started",
            "ep_job_finished",
        )
    },
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
    """No module of the epcore package outside epcore/plugins/ touches a plugin manager's
    hooks."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{line}: {text}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if MANAGER not in path.parents
        for line, text in _hook_uses(path)
    ]
    assert not offenders, "\n".join(offenders)


def test_the_hook_scan_sees_hook_calls() -> None:
    """The scan above finds the plugin manager's own hook calls (so it is not looking nowhere)."""
    assert _hook_uses(MANAGER / "manager.py")


def test_every_hookspec_is_called_by_the_plugin_manager() -> None:
    """The plugin manager calls every hook (by attribute or by name), so none is dead."""
    source = "".join(path.read_text(encoding="utf-8") for path in sorted(MANAGER.glob("*.py")))
    uncalled = [
        name for name in SPEC_NAMES if f".{name}(" not in source and f'"{name}"' not in source
    ]
    assert not uncalled


# -- every hook reaches a consumer ------------------------------------------------------------

#: The helpers through which Plugins methods call a hook named by its first argument.
_CALLING_HELPERS = ("_collect", "_notify", "_offered")


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _runtime_modules() -> list[Path]:
    """Every module of epcore whose calls count as use: all but the plugin manager itself and
    epcore.testing (test helpers use hooks without anything depending on the result)."""
    return [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if MANAGER not in path.parents and PACKAGE / "testing" not in path.parents
    ]


def _methods(tree: ast.Module, class_name: str) -> dict[str, ast.FunctionDef]:
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _calls_hook(method: ast.FunctionDef, hook: str) -> bool:
    """Whether ``method`` calls ``hook``: ``....hook.<hook>(...)`` or ``self._collect("<hook>",
    ...)`` (or ``_notify``)."""
    for node in ast.walk(method):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == hook:
            return True
        first = node.args[0] if node.args else None
        if (
            node.func.attr in _CALLING_HELPERS
            and isinstance(first, ast.Constant)
            and first.value == hook
        ):
            return True
    return False


def _self_calls(method: ast.FunctionDef) -> set[str]:
    """The methods ``method`` calls on ``self``."""
    return {
        node.func.attr
        for node in ast.walk(method)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    }


def _plugin_calls(trees: list[ast.Module]) -> set[str]:
    """Method names called on something named like the plugins (``plugins.x()``,
    ``self.plugins.x()``, ``load_plugins().x()``) in ``trees``."""
    return {
        node.func.attr
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and "plugins" in ast.unparse(node.func.value).lower()
    }


def unreached_hooks(
    manager: ast.Module, runtime: list[ast.Module], hooks: list[str], class_name: str = "Plugins"
) -> dict[str, list[str]]:
    """Each hook whose calling methods (in ``manager``'s ``class_name``) no runtime module
    reaches, directly or through another method that it reaches, with those methods."""
    methods = _methods(manager, class_name)
    reached = _plugin_calls(runtime) & set(methods)
    grown = True
    while grown:
        # A method called by a reached method is reached too (classad_functions through
        # eval_context, _collect through every public method).
        more = {name for r in reached for name in _self_calls(methods[r]) if name in methods}
        grown = not more <= reached
        reached |= more
    found: dict[str, list[str]] = {}
    for hook in hooks:
        callers = [name for name, method in methods.items() if _calls_hook(method, hook)]
        if not callers or not set(callers) & reached:
            found[hook] = callers
    return found


def test_every_hook_reaches_runtime_code() -> None:
    """For every hookspec, the Plugins method that calls it is called (directly, or through
    another Plugins method) from epcore's runtime code outside the plugin manager and
    epcore.testing."""
    runtime = [_parse(path) for path in _runtime_modules()]
    unreached = unreached_hooks(_parse(MANAGER / "manager.py"), runtime, SPEC_NAMES)
    assert not unreached, f"hooks whose results reach nothing (hook: calling methods): {unreached}"


SYNTHETIC_MANAGER = """
class Plugins:
    def used(self):
        return self._collect("ep_used", None)

    def through(self):
        return self._helper()

    def _helper(self):
        return self._manager.hook.ep_indirect()

    def only_tested(self):
        return self._collect("ep_dead", None)

    def _collect(self, hook, record):
        return []
"""


def test_the_reach_check_finds_a_hook_only_tests_use() -> None:
    """The check reports a hook whose calling method runtime code never calls, a hook no
    method calls, and accepts hooks reached directly or through another method."""
    runtime = [ast.parse("def run(plugins):\n    plugins.used()\n    self.plugins.through()\n")]
    hooks = ["ep_used", "ep_indirect", "ep_dead", "ep_uncalled"]
    found = unreached_hooks(ast.parse(SYNTHETIC_MANAGER), runtime, hooks)
    assert found == {"ep_dead": ["only_tested"], "ep_uncalled": []}


@pytest.mark.parametrize("hook", SPEC_NAMES)
def test_every_hook_has_an_end_to_end_test(hook: str) -> None:
    """Each hook names a test that exercises it through a daemon, a pool or a command, and
    that test exists."""
    assert hook in END_TO_END, f"{hook} has no end-to-end test in END_TO_END"
    path, name = END_TO_END[hook].split("::")
    tree = _parse(PACKAGE.parent / path)
    tests = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert name in tests, f"{path} has no {name}"
