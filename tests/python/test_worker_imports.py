"""What a worker reports it imported (src/engine/python/rwb_worker.py): project files,
third-party module files and the distributions they belong to. rwb's cache key is
built from these reports, so each case checks the exact report."""

import importlib
import os
import socket
import sys
import tempfile
import types
import unittest

from test_worker_helpers import W


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def install(site, package, dist_name, version, top_level=True, record=True):
    """A stand-in installed distribution `dist_name` providing module `package`."""
    write(os.path.join(site, package, "__init__.py"), "VALUE = 1\n")
    info = os.path.join(site, "%s-%s.dist-info" % (dist_name.replace("-", "_"), version))
    write(os.path.join(info, "METADATA"), "Metadata-Version: 2.1\nName: %s\nVersion: %s\n\nBody: no\n" % (dist_name, version))
    if top_level:
        write(os.path.join(info, "top_level.txt"), package + "\n")
    if record:
        write(os.path.join(info, "RECORD"), "%s/__init__.py,,\n%s/METADATA,,\n" % (package, os.path.basename(info)))
    return os.path.join(info, "METADATA")


class TempImports(unittest.TestCase):
    """A temp folder holding a project and a site-packages folder, both on sys.path;
    the modules a test imports are removed again afterwards."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        base = os.path.realpath(self.tmp.name)
        self.project = os.path.join(base, "project")
        self.site = os.path.join(base, "venv", "lib", "site-packages")
        os.makedirs(self.project)
        os.makedirs(self.site)
        self.modules_before = set(sys.modules)
        sys.path[0:0] = [self.project, self.site]
        importlib.invalidate_caches()
        W._DIST_INDEX.clear()

    def tearDown(self):
        for entry in (self.project, self.site):
            sys.path.remove(entry)
        for name in set(sys.modules) - self.modules_before:
            del sys.modules[name]
        self.tmp.cleanup()


class ModuleKind(TempImports):
    def test_project_third_party_stdlib_and_rwb_files(self):
        helper = os.path.join(self.project, "helper.py")
        write(helper, "")
        roots = [self.project]
        self.assertEqual(W._module_kind(helper, roots), ("project", helper))
        self.assertIsNone(W._module_kind(os.path.join(self.project, "data.so"), roots))
        pkg = os.path.join(self.site, "pkg", "__init__.py")
        self.assertEqual(W._module_kind(pkg, roots), ("third", pkg))
        self.assertIsNone(W._module_kind(os.__file__, roots), "the standard library")
        self.assertIsNone(W._module_kind(W.__file__, roots), "rwb's own worker")
        self.assertIsNone(W._module_kind(None, roots), "a module without a file")

    def test_a_virtualenv_inside_the_project_is_third_party(self):
        inside = os.path.join(self.project, ".venv", "lib", "site-packages", "pkg", "__init__.py")
        self.assertEqual(W._module_kind(inside, [self.project]), ("third", inside))


class Distributions(TempImports):
    def test_each_module_maps_to_its_distribution_and_version(self):
        plain = install(self.site, "fakepkg", "fakepkg", "1.0")
        renamed = install(self.site, "thing", "Py-Thing", "2.5", top_level=True)
        record_only = install(self.site, "other", "other-dist", "0.3", top_level=False)
        modules = [os.path.join(self.site, name, "__init__.py") for name in ("fakepkg", "thing", "other")]
        self.assertEqual(
            W._dists_of(modules),
            [
                {"name": "Py-Thing", "version": "2.5", "metadata": renamed},
                {"name": "fakepkg", "version": "1.0", "metadata": plain},
                {"name": "other-dist", "version": "0.3", "metadata": record_only},
            ],
        )

    def test_a_module_outside_any_distribution_has_none(self):
        write(os.path.join(self.site, "loose.py"), "")
        self.assertEqual(W._dists_of([os.path.join(self.site, "loose.py")]), [])

    def test_an_installed_distribution_is_seen_by_the_next_lookup(self):
        module = os.path.join(self.site, "late", "__init__.py")
        self.assertEqual(W._dists_of([module]), [])
        metadata = install(self.site, "late", "late", "1.0")
        os.utime(self.site, ns=(1, 1))  # a new folder mtime, whatever the clock's grain
        self.assertEqual(W._dists_of([module]), [{"name": "late", "version": "1.0", "metadata": metadata}])


class Reports(TempImports):
    def worker(self):
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(theirs.close)
        spec = {"file": os.path.join(self.project, "main.py"), "folder": self.project}
        return W.Worker(ours, spec, self.project)

    def test_a_batch_reports_only_what_it_imported_first(self):
        write(os.path.join(self.project, "main.py"), "")
        write(os.path.join(self.project, "helper.py"), "")
        metadata = install(self.site, "fakepkg", "fakepkg", "1.0")
        worker = self.worker()
        worker.inventory.scan()  # what the worker had at load

        done = {"done": 1}
        worker._imports_report(done)
        self.assertEqual(done, {"done": 1}, "nothing new was imported")

        import helper  # noqa: F401
        import fakepkg  # noqa: F401

        done = {"done": 1}
        worker._imports_report(done)
        self.assertEqual(done["files"], [os.path.join(self.project, "helper.py")])
        self.assertEqual(
            done["packages"],
            {
                "modules": [os.path.join(self.site, "fakepkg", "__init__.py")],
                "dists": [{"name": "fakepkg", "version": "1.0", "metadata": metadata}],
            },
        )

        done = {"done": 1}
        worker._imports_report(done)
        self.assertEqual(done, {"done": 1}, "reported once")


class Unusual(TempImports):
    def test_modules_whose_file_cannot_be_read_are_skipped(self):
        class Lazy(types.ModuleType):
            def __getattr__(self, name):
                raise RuntimeError("a lazy module that fails on access")

        sys.modules["rwb_test_lazy"] = Lazy("rwb_test_lazy")
        odd = types.ModuleType("rwb_test_odd")
        odd.__file__ = 42
        sys.modules["rwb_test_odd"] = odd
        inventory = W.Inventory([self.project])
        inventory.scan()
        self.assertEqual(inventory.project_files(), [])

    def test_unreadable_metadata_leaves_the_module_files(self):
        write(os.path.join(self.site, "pkg", "__init__.py"), "")
        info = os.path.join(self.site, "other-1.0.dist-info")
        os.makedirs(info)
        with open(os.path.join(info, "top_level.txt"), "wb") as f:
            f.write(b"\xff\xfe not utf-8")
        module = os.path.join(self.site, "pkg", "__init__.py")
        self.assertEqual(W._packages([module]), {"modules": [module], "dists": []})


if __name__ == "__main__":
    unittest.main()


class GradersAreImportedOnlyForAGrader(unittest.TestCase):
    """graders.py and the bundled reward_kit's remote calls bring urllib and the HTTP
    client: a worker (and the zygote every worker is forked from, reward_kit loaded)
    starts without them, and knows a grader's style all the same."""

    def test_the_worker_starts_without_graders_and_names_its_style_alike(self):
        import subprocess

        here = os.path.dirname(os.path.abspath(__file__))
        python_dir = os.path.join(here, "..", "..", "src", "engine", "python")
        code = (
            "import sys; sys.path.insert(0, %r)\n"
            "import rwb_py.zygote, rwb_py.worker\n"
            "from rwb_py.load import _load_reward_kit; _load_reward_kit(%r)\n"
            "print('rwb_py.graders' in sys.modules, 'urllib.request' in sys.modules)\n"
            "from rwb_py import graders\n"
            "print(rwb_py.worker.GRADER_STYLE == graders.Caller.style)\n" % (python_dir, python_dir)
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.split(), ["False", "False", "True"], out.stderr)


class TheSharedCodeFolderIsCompiledOnce(unittest.TestCase):
    """zygote._compile_once: rwb's own modules in the shared code folder (one with the
    "whole" mark src/engine/code_dir.rs writes) are compiled by a child of the zygote,
    which marks the folder for this interpreter; a private folder is left alone."""

    def folder(self, whole):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        write(os.path.join(tmp.name, "rwb_py", "mod.py"), "VALUE = 1\n")
        if whole:
            write(os.path.join(tmp.name, "whole"), "")
        return tmp.name

    def compile_in(self, folder):
        import subprocess

        here = os.path.dirname(os.path.abspath(__file__))
        python_dir = os.path.join(here, "..", "..", "src", "engine", "python")
        code = "import sys; sys.path.insert(0, %r)\nfrom rwb_py import zygote\nzygote._compile_once(%r)\n" % (
            python_dir,
            folder,
        )
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # as rwb runs it
        subprocess.run([sys.executable, "-c", code], check=True, env=env)

    def test_a_shared_folder_gets_its_compiled_modules_and_the_mark(self):
        import time

        folder = self.folder(whole=True)
        self.compile_in(folder)
        mark = os.path.join(folder, "compiled-%s" % sys.implementation.cache_tag)
        deadline = time.time() + 30
        while not os.path.exists(mark) and time.time() < deadline:
            time.sleep(0.05)  # the compiling child goes on after the zygote returned
        self.assertTrue(os.path.exists(mark))
        cached = os.listdir(os.path.join(folder, "rwb_py", "__pycache__"))
        self.assertEqual(cached, ["mod.%s.pyc" % sys.implementation.cache_tag])

    def test_a_private_folder_is_not_compiled(self):
        import time

        folder = self.folder(whole=False)
        self.compile_in(folder)
        time.sleep(0.3)
        self.assertFalse(os.path.exists(os.path.join(folder, "rwb_py", "__pycache__")))
        self.assertEqual(sorted(os.listdir(folder)), ["rwb_py"])
