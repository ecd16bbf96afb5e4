"""Loading: reward_kit once in the zygote (the real package when it imports, else the
bundled copy), then in a worker the one evaluator's module and function.
"""

import os
import sys


def _load_reward_kit(compat_dir):
    """Import reward_kit once in the zygote. Returns a description for rwb."""
    _load_rwb(compat_dir)
    real_error = None
    try:
        import reward_kit  # noqa: F401

        return {"kind": "real", "version": getattr(reward_kit, "__version__", None)}
    except ModuleNotFoundError as exc:
        if exc.name not in ("reward_kit",):
            real_error = "%s: %s" % (type(exc).__name__, exc)
    except Exception as exc:  # an installed but broken package
        real_error = "%s: %s" % (type(exc).__name__, exc)
    for name in [m for m in sys.modules if m == "reward_kit" or m.startswith("reward_kit.")]:
        del sys.modules[name]
    sys.path.append(compat_dir)
    import reward_kit  # noqa: F811,F401  (the bundled one)
    import reward_kit.models  # noqa: F401
    import reward_kit.typed_interface  # noqa: F401

    out = {"kind": "bundled", "version": getattr(reward_kit, "__version__", None)}
    if real_error:
        out["real_error"] = real_error
    return out


def _load_rwb(compat_dir):
    """rwb's package for reward code (`from rwb.sandbox import run`), bundled beside
    reward_kit in compat/: importable in every worker, from there whatever else is on
    sys.path (its submodules load when first imported)."""
    init = os.path.join(compat_dir, "rwb", "__init__.py")
    if "rwb" in sys.modules or not os.path.isfile(init):
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location("rwb", init, submodule_search_locations=[os.path.dirname(init)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["rwb"] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules["rwb"]


def evaluator_function(spec, name, path):
    """The evaluator's function: its module imported (import_evaluator), then the
    function the spec names ("evaluate" by default). Raises what the import raises,
    AttributeError for a missing function and TypeError for one that is not callable."""
    module = import_evaluator(spec, name, path)
    shown = spec.get("module") or os.path.basename(path)
    function = spec.get("function") or "evaluate"
    fn = getattr(module, function, None)
    if fn is None:
        raise AttributeError("%s defines no function %r%s" % (shown, function, _defined(module)))
    if not callable(fn):
        raise TypeError("%r in %s is %s, not a function" % (function, shown, type(fn).__name__))
    return fn


def _defined(module):
    """' (it defines: a, b)': the functions and classes the module itself defines,
    to name the one meant; '' when it defines none."""
    own = sorted(
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and callable(v) and getattr(v, "__module__", None) == module.__name__
    )
    return " (it defines: %s)" % ", ".join(own) if own else " (it defines no function)"


def import_evaluator(spec, name, path):
    """The evaluator's module: by name for a package function (the workspace root
    is first on sys.path, so its relative imports work), else from its file."""
    import importlib
    import importlib.util

    if spec.get("module"):
        return importlib.import_module(name)
    name = _own_name(name, path)
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None:
        raise ImportError("cannot load %s as a Python module" % path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


# The prefix of the name an evaluator file is registered under when its own name is
# taken (EasyR1's default reward file is `math.py`).
PRIVATE_PREFIX = "_rwb_evaluator_"


def _stdlib_names():
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return names
    return frozenset(sys.builtin_module_names)  # Python < 3.10: the built-in ones


def _own_name(name, path):
    """The name the evaluator's file runs under: its own, unless that is a module of
    the standard library or one already imported, which it must not hide from any
    other import (`mpmath` importing `math` gets the standard one). Then the standard
    module is imported first, from the standard library only, and the file gets a
    private name: it still runs as itself."""
    taken = sys.modules.get(name)
    if taken is None and name not in _stdlib_names():
        return name
    if taken is None:
        own = {os.path.realpath(p) for p in (os.path.dirname(path),)}
        saved = list(sys.path)
        try:
            sys.path[:] = [p for p in saved if os.path.realpath(p or ".") not in own and p not in ("", ".")]
            __import__(name)
        except Exception:
            pass
        finally:
            sys.path[:] = saved
    return PRIVATE_PREFIX + name
