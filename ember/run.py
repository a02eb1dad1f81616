"""Run a PyTorch program on ember, unchanged: ``python -m ember.run script.py [args]`` (or ``ember-run``).

The runner makes every ``import torch``, ``import torch.X`` and ``from torch.X
import Y`` resolve to ember's module of the same name (``torch.nn.functional``
is ``ember.nn.functional``, the very same module object), sets ``sys.argv`` as
the script would see it, and runs the script as ``__main__`` (``runpy.run_path``),
so ``if __name__ == "__main__":`` blocks, tracebacks and relative file paths
behave as under ``python script.py``.

NOTE [ Missing torch API under the runner ]
Where the script touches something ember does not have, the error names the
torch API at the point of use, instead of a bare ``AttributeError: module
'ember.nn' has no attribute 'foo'``:

- an attribute of an aliased module (``torch.foo``, ``torch.nn.foo``) raises
  ``TorchAttributeNotImplemented``, a subclass of both ``AttributeError`` and
  ``NotImplementedError``, with the message ``ember does not implement
  torch.nn.foo yet``.  Being an AttributeError, ``hasattr(torch, "foo")`` is
  False and ``getattr(torch, "foo", default)`` returns the default, so feature
  probes in user code keep working; being a NotImplementedError, it says
  what it is.  (Dunder names such as ``__wrapped__`` raise a plain
  AttributeError: tools probe them and they are never torch API.)
- a submodule (``import torch.foo``) raises ``TorchModuleNotImplemented``,
  a ``ModuleNotFoundError`` (so ``try: import torch.foo / except ImportError``
  still works) and a NotImplementedError, with the same message.
- ``from torch.X import foo``: Python turns an AttributeError during
  ``from ... import`` into its own "cannot import name" ImportError, which would
  lose the message; so when the attribute lookup comes from an IMPORT_FROM
  instruction, the fallback raises ``TorchImportNotImplemented`` (an
  ImportError and a NotImplementedError) with the message directly.

The fallback is a module-level ``__getattr__`` (PEP 562) installed on ember's
modules by the runner only, not a proxy object, so ``torch.nn is ember.nn``
and ``torch.Tensor is ember.Tensor`` hold, ``isinstance`` and pickling behave,
and a script that sets a module attribute (``torch.backends.cudnn.benchmark =
True``) sets it on ember's module.  Plain ``import ember`` is not affected
unless the runner (or ``install()``) has run in that process.
"""

from __future__ import annotations

import dis
import importlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types

__all__ = [
    "TorchAttributeNotImplemented",
    "TorchImportNotImplemented",
    "TorchModuleNotImplemented",
    "install",
    "main",
    "uninstall",
]

_IMPORT_FROM = dis.opmap["IMPORT_FROM"]


def _message(torch_name: str) -> str:
    return f"ember does not implement {torch_name} yet"


class TorchAttributeNotImplemented(AttributeError, NotImplementedError):
    """A torch attribute ember lacks: an AttributeError (hasattr() is False) that says so.

    See NOTE [ Missing torch API under the runner ].
    """


class TorchImportNotImplemented(ImportError, NotImplementedError):
    """``from torch.X import name`` where ember's module has no ``name``."""


class TorchModuleNotImplemented(ModuleNotFoundError, NotImplementedError):
    """``import torch.X`` where ember has no module ``X``."""


def _torch_name(ember_name: str) -> str:
    """ember.nn.functional -> torch.nn.functional."""
    return "torch" + ember_name[len("ember") :]


def _ember_name(torch_name: str) -> str:
    """torch.nn.functional -> ember.nn.functional."""
    return "ember" + torch_name[len("torch") :]


# ---------------------------------------------------------------- the attribute fallback


def _called_from_import_from() -> bool:
    """Whether the attribute lookup in progress is a ``from module import name`` statement.

    A module's ``__getattr__`` is called from C (the module type's getattro), so
    the Python frame two levels up is the one whose instruction asked for the
    attribute.
    """
    frame = sys._getframe(2)
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] == _IMPORT_FROM


def _make_fallback(module: types.ModuleType, previous):
    """A PEP 562 ``__getattr__`` for `module` that names the missing torch attribute."""
    torch_module_name = _torch_name(module.__name__)

    def __getattr__(name: str):
        if previous is not None:
            try:
                return previous(name)
            except AttributeError:
                pass
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        qualified = f"{torch_module_name}.{name}"
        if _called_from_import_from():
            raise TorchImportNotImplemented(_message(qualified), name=torch_module_name)
        raise TorchAttributeNotImplemented(_message(qualified), name=name, obj=module)

    __getattr__._ember_run_fallback = True  # marks it ours, so install is idempotent and uninstall can undo it
    __getattr__._ember_run_previous = previous
    return __getattr__


def _add_fallback(module: types.ModuleType) -> None:
    namespace = module.__dict__
    previous = namespace.get("__getattr__")
    if getattr(previous, "_ember_run_fallback", False):
        return
    namespace["__getattr__"] = _make_fallback(module, previous)


def _add_fallbacks_to_loaded_modules() -> None:
    """Give every loaded ember module the fallback (cheap: a dict walk, run at install and per aliased import)."""
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and (name == "ember" or name.startswith("ember.")):
            _add_fallback(module)


# ---------------------------------------------------------------- the import alias


class _AliasLoader(importlib.abc.Loader):
    """Loads ``torch.X`` by putting ember's already-imported ``ember.X`` under that name.

    importlib's loading sequence creates a fresh module from the spec, runs
    ``exec_module`` on it, then returns whatever ``sys.modules[name]`` holds
    afterwards; replacing the entry here hands back ember's own module object
    and leaves its ``__spec__`` and ``__name__`` untouched (the throwaway
    module is dropped).
    """

    def __init__(self, target: types.ModuleType) -> None:
        self.target = target

    def create_module(self, spec):
        return None  # importlib's default empty module: the placeholder exec_module swaps out

    def exec_module(self, module) -> None:
        sys.modules[module.__name__] = self.target


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """A meta-path finder: ``torch`` and ``torch.*`` resolve to ``ember`` and ``ember.*``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        ember_name = _ember_name(fullname)
        try:
            module = importlib.import_module(ember_name)
        except ModuleNotFoundError as error:
            # Only the module itself (or a parent) being absent is "ember lacks it"; a missing
            # third-party dependency inside an ember module is a different error and propagates.
            if error.name is not None and (ember_name == error.name or ember_name.startswith(error.name + ".")):
                raise TorchModuleNotImplemented(_message(fullname), name=fullname) from None
            raise
        _add_fallbacks_to_loaded_modules()
        is_package = hasattr(module, "__path__")
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module), is_package=is_package)


_finder: TorchAliasFinder | None = None


def install() -> None:
    """Alias ``torch`` to ember in this process (idempotent).

    Must run before anything imports the real torch; an already-imported real
    torch is an error, because its modules would mix with ember's.
    """
    global _finder
    loaded = sys.modules.get("torch")
    if loaded is not None and not (loaded.__name__ == "ember"):
        raise RuntimeError("the real torch is already imported in this process; ember.run must start first")
    if _finder is None:
        _finder = TorchAliasFinder()
        sys.meta_path.insert(0, _finder)
    import ember  # noqa: F401 - load the package, so its submodules get the fallback now

    _add_fallbacks_to_loaded_modules()
    importlib.import_module("torch")


def uninstall() -> None:
    """Undo install(): remove the finder, the ``torch*`` aliases and the attribute fallbacks (tests use this)."""
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None
    for name, module in list(sys.modules.items()):
        if (name == "torch" or name.startswith("torch.")) and getattr(module, "__name__", "").startswith("ember"):
            del sys.modules[name]
        if isinstance(module, types.ModuleType) and (name == "ember" or name.startswith("ember.")):
            fallback = module.__dict__.get("__getattr__")
            if getattr(fallback, "_ember_run_fallback", False):
                previous = fallback._ember_run_previous
                if previous is None:
                    del module.__dict__["__getattr__"]
                else:
                    module.__dict__["__getattr__"] = previous


# ---------------------------------------------------------------- the command line

_USAGE = """usage: python -m ember.run script.py [args ...]
       python -m ember.run -m module [args ...]

Run a PyTorch program on ember: `import torch` (and every torch.X) resolves to ember."""


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m ember.run`` and the ``ember-run`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE)
        raise SystemExit(0 if argv else 2)
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(_USAGE, file=sys.stderr)
            raise SystemExit(2)
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    script = argv[0]
    if not os.path.exists(script):
        print(f"ember.run: can't open file {script!r}: no such file", file=sys.stderr)
        raise SystemExit(2)
    sys.argv = argv
    # As `python script.py` does: the script's directory (not the current one, which `-m` put there) first on
    # sys.path, so the script's sibling modules import.  ember itself is already imported by now.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    # Run the imported ember.run's main, not this __main__ copy's, so the error classes and the installed
    # finder are the ones `ember.run` names (tracebacks read ember.run.TorchAttributeNotImplemented).
    from ember.run import main as _main

    _main()
