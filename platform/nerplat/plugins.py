"""The user's own code: modules and .py files a spec names under `plugins:`, and installed packages'
`nerplat.plugins` entry points.

Importing a plugin runs its `@OBJECTIVES.register(...)`, `@SAMPLERS.register(...)`, ... decorators,
so its names are validated and built exactly like the built-ins; each entry records the plugin as
its origin (`nerplat registry` shows it). What was loaded in this process is kept here, because
the runner must hand the same code to every Ray worker (`ray_runtime_env`) and record its files
with their hashes in the summary run (`files_record`).

On a worker, Ray calls `import_worker_plugins` (the runtime environment's worker setup hook): it
imports the entry points and the modules the driver listed in `$NERPLAT_PLUGINS`; plugin files
and folders that are not installed arrive through the runtime environment's `py_modules`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
import sysconfig
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from nerplat.errors import UserInputError
from nerplat.registry import registering_from

ENTRY_POINT_GROUP = "nerplat.plugins"
PLUGINS_KEY = "plugins"  # the spec's section
PLUGINS_ENV = "NERPLAT_PLUGINS"  # JSON list of module names every Ray worker imports
WORKER_HOOK = "nerplat.plugins.import_worker_plugins"


@dataclass(frozen=True)
class Plugin:
    """One loaded plugin: how it was named, the module it became, and what workers need of it."""

    origin: str  # "plugin specs/my_loss.py", "entry point my_pkg (my-dist 1.0)", shown by `nerplat registry`
    module: str  # its name in sys.modules, the one workers import
    files: tuple[str, ...]  # source files, hashed for the summary run
    ship: str | None  # a .py file or package folder Ray copies to workers; None when installed


_loaded: dict[str, Plugin] = {}  # by module name, in load order


def loaded_plugins() -> list[Plugin]:
    return list(_loaded.values())


def load_entry_points() -> list[Plugin]:
    """Imports every installed `nerplat.plugins` entry point once (a module, or a callable called with no arguments)."""
    found = []
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        module_name = point.module
        if module_name in _loaded:
            found.append(_loaded[module_name])
            continue
        dist = f"{point.dist.name} {point.dist.version}" if point.dist is not None else "unknown distribution"
        origin = f"entry point {point.name} ({dist})"
        with registering_from(origin):
            try:
                loaded = point.load()
                if callable(loaded) and not isinstance(loaded, ModuleType):
                    loaded()
            except BaseException as error:  # a broken installed plugin: say which one and why
                raise UserInputError(
                    f"plugin entry point '{point.name}' ({point.value}) of {dist} failed to load: {_failure(error)}"
                ) from None
        module = sys.modules[module_name]
        found.append(_remember(Plugin(origin, module_name, _module_files(module), None)))
    return found


def load_spec_plugins(names: list[Any], spec_folder: Path, locate: Any) -> list[Plugin]:
    """Imports the plugins a spec names: module names, or .py files and package folders relative to `spec_folder`.

    `locate(message, index)` turns a message about `plugins[index]` into a located `Problem`;
    every plugin that fails is reported, together, in one `UserInputError`.
    """
    plugins, problems = [], []
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            problems.append(
                locate("a plugin is a module name (my_pkg.losses) or a .py file or folder relative to the spec", index)
            )
            continue
        try:
            plugins.append(_load_named(name.strip(), spec_folder))
        except _PluginError as error:
            problems.append(locate(str(error), index))
    if problems:
        raise UserInputError(problems)
    return plugins


class _PluginError(Exception):
    pass


def _failure(error: BaseException) -> str:
    """What a plugin's import did instead of finishing. `sys.exit` and KeyboardInterrupt count too:
    importing a plugin must not end nerplat with their exit code and no word of which plugin it was."""
    if isinstance(error, SystemExit):
        return f"it called sys.exit({error.code!r})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def plugin_path(name: str, spec_folder: Path) -> Path | None:
    """The file or folder a plugin name written in a spec means, or None for a module name."""
    if not (name.endswith(".py") or "/" in name or name.startswith(".")):
        return None
    path = Path(name).expanduser()
    return (path if path.is_absolute() else spec_folder / path).resolve()


def _load_named(name: str, spec_folder: Path) -> Plugin:
    path = plugin_path(name, spec_folder)
    if path is None:
        return _load_module(name)
    if path.is_file() and path.suffix == ".py":
        return _load_file(path, path.stem, path, (str(path),))
    if path.is_dir() and (path / "__init__.py").is_file():
        files = tuple(str(f) for f in sorted(path.rglob("*.py")) if "__pycache__" not in f.parts)
        return _load_file(path / "__init__.py", path.name, path, files)
    raise _PluginError(f"plugin '{name}': no .py file or package folder (with __init__.py) at {path}")


def _load_module(name: str) -> Plugin:
    if name in _loaded:
        return _loaded[name]
    origin = f"plugin {name}"
    imported_before = name in sys.modules  # its registrations, if any, were made then
    with registering_from(origin) as registered:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name and name.startswith(error.name):
                raise _PluginError(
                    f"plugin '{name}': no such module (install it, or give a .py file relative to the spec)"
                ) from None
            raise _PluginError(f"plugin '{name}' failed to import: {error}") from None
        except BaseException as error:
            raise _PluginError(f"plugin '{name}' failed to import: {_failure(error)}") from None
    if not registered and not imported_before:
        raise _PluginError(_registers_nothing(name))
    top = sys.modules[name.split(".")[0]]
    ship = None if _is_installed(top) else _shippable(top)
    return _remember(Plugin(origin, name, _module_files(module), ship))


def _load_file(entry: Path, module_name: str, ship: Path, files: tuple[str, ...]) -> Plugin:
    """Imports a plugin file or package folder under the name workers will import it by (its stem or folder name)."""
    if module_name in _loaded:
        if _loaded[module_name].ship != str(ship):
            raise _PluginError(f"plugin '{ship}': another plugin is already imported as '{module_name}'; rename one of them")
        return _loaded[module_name]
    existing = sys.modules.get(module_name) or importlib.util.find_spec(module_name)
    existing_file = getattr(existing, "__file__", None) or getattr(existing, "origin", None)
    if existing is not None and (existing_file is None or Path(existing_file).resolve() != entry.resolve()):
        raise _PluginError(f"plugin '{ship}': its name '{module_name}' is already a Python module; rename the file or folder")
    search = [str(ship)] if ship.is_dir() else None
    spec = importlib.util.spec_from_file_location(module_name, entry, submodule_search_locations=search)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    origin = f"plugin {ship}"
    with registering_from(origin) as registered:
        try:
            spec.loader.exec_module(module)
        except BaseException as error:
            del sys.modules[module_name]
            raise _PluginError(f"plugin '{ship}' failed to import: {_failure(error)}") from None
    if not registered:
        del sys.modules[module_name]
        raise _PluginError(_registers_nothing(str(ship)))
    return _remember(Plugin(origin, module_name, files, str(ship)))


def _registers_nothing(name: str) -> str:
    return (
        f"plugin '{name}' was imported but registers nothing: a plugin adds entries with a registry's decorator "
        "(e.g. @OBJECTIVES.register(\"my_loss\"), docs/plugins.md); check that it names your module, or remove it"
    )


def _remember(plugin: Plugin) -> Plugin:
    _loaded.setdefault(plugin.module, plugin)
    return plugin


def _module_files(module: ModuleType) -> tuple[str, ...]:
    path = getattr(module, "__file__", None)
    return (str(Path(path).resolve()),) if path else ()


def _is_installed(module: ModuleType) -> bool:
    """True for modules under site-packages (present on every node with the same image or venv)."""
    path = getattr(module, "__file__", None)
    if path is None:
        return True  # namespace or built-in: nothing Ray could ship
    roots = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    return any(root in Path(path).resolve().parents for root in roots)


def _shippable(top: ModuleType) -> str:
    """The package folder (or single .py file) of a top-level module, for Ray's py_modules."""
    paths = list(getattr(top, "__path__", []))
    return paths[0] if len(paths) == 1 else str(Path(top.__file__).resolve())


def ray_runtime_env(plugins: list[Plugin] | None = None) -> dict[str, Any]:
    """The pieces of Ray's runtime environment that bring `plugins` (default: all loaded) to every worker.

    `py_modules` ships plugin files and folders that are not installed; the worker setup hook imports
    them (and the entry points) before any trial runs. Empty when no plugin is loaded.
    """
    plugins = loaded_plugins() if plugins is None else plugins
    if not plugins:
        return {}
    pieces: dict[str, Any] = {
        "env_vars": {PLUGINS_ENV: json.dumps([p.module for p in plugins])},
        "worker_process_setup_hook": WORKER_HOOK,
    }
    shipped = sorted({p.ship for p in plugins if p.ship is not None})
    if shipped:
        pieces["py_modules"] = shipped
    return pieces


def import_worker_plugins() -> None:
    """Ray's worker setup hook: imports the entry points and the modules listed in `$NERPLAT_PLUGINS`."""
    load_entry_points()
    for name in json.loads(os.environ.get(PLUGINS_ENV, "[]")):
        if name not in sys.modules:
            with registering_from(f"plugin {name}"):
                importlib.import_module(name)


def files_record(plugins: list[Plugin] | None = None) -> list[dict[str, str]]:
    """Every source file of `plugins` (default: all loaded) with its sha256, for the summary run."""
    plugins = loaded_plugins() if plugins is None else plugins
    return [
        {"origin": p.origin, "module": p.module, "file": f, "sha256": hashlib.sha256(Path(f).read_bytes()).hexdigest()}
        for p in plugins
        for f in p.files
    ]
