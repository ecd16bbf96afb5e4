"""What an evaluator depends on: the project files and third-party module files it
imported (Inventory), and the distributions those belong to, read from their
metadata once per site folder.
"""

import os
import sys

from .paths import RUNTIME_DIR, _SITE_MARKERS, _file_of, _is_project_file


def _stdlib_dirs():
    import sysconfig

    dirs = set()
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
            dirs.add(os.path.realpath(path))
    return tuple(d + os.sep for d in dirs)


_STDLIB_DIRS = _stdlib_dirs()


def _module_kind(path, roots):
    """("project" | "third", path) for a module's file, or None for the standard
    library, rwb's own files and modules without a file. Third-party is everything
    else: site-packages, editable installs, folders on PYTHONPATH."""
    if not path or not isinstance(path, str):
        return None
    raw = os.path.abspath(path)
    if any(marker in raw for marker in _SITE_MARKERS):
        return ("third", raw)
    if raw.startswith(RUNTIME_DIR + os.sep) or raw.startswith(_STDLIB_DIRS):
        return None
    real = os.path.realpath(raw)
    if _is_project_file(real, roots):
        return ("project", real) if real.endswith(".py") else None
    if real.startswith(RUNTIME_DIR + os.sep) or real.startswith(_STDLIB_DIRS):
        return None
    return ("third", raw)


def _normal_name(name):
    return "".join("_" if c in "-_." else c for c in name).lower()


# site folder -> (its mtime_ns, {normalized dist name: metadata dir}, {top-level: dir} or None)
_DIST_INDEX = {}


def _site_index(site):
    """The distributions installed in one site folder, read once per process (and
    inherited from the zygote) until the folder changes (pip adds or removes one)."""
    try:
        mtime = os.stat(site).st_mtime_ns
    except OSError:
        return None
    cached = _DIST_INDEX.get(site)
    if cached is not None and cached[0] == mtime:
        return cached
    by_name = {}
    try:
        entries = os.listdir(site)
    except OSError:
        entries = []
    for entry in entries:
        if entry.endswith((".dist-info", ".egg-info")):
            by_name[_normal_name(entry.rsplit(".", 1)[0].split("-", 1)[0])] = os.path.join(site, entry)
    cached = [mtime, by_name, None]
    _DIST_INDEX[site] = cached
    return cached


def _top_levels(meta_dir):
    """The top-level import names a distribution installs (top_level.txt, else the
    first path parts in its RECORD)."""
    try:
        with open(os.path.join(meta_dir, "top_level.txt"), encoding="utf-8", errors="replace") as f:
            return set(f.read().split())
    except OSError:
        pass
    tops = set()
    try:
        with open(os.path.join(meta_dir, "RECORD"), encoding="utf-8", errors="replace") as f:
            for line in f:
                first = line.split(",", 1)[0].split("/", 1)[0]
                tops.add(first[:-3] if first.endswith(".py") else first)
    except OSError:
        pass
    return tops


def _dist_dir(site, top):
    """The metadata folder of the distribution that installed top-level module `top`
    in `site`: by name first (cheap), else by reading every distribution's list of
    top-level names (once per site folder)."""
    index = _site_index(site)
    if index is None:
        return None
    found = index[1].get(_normal_name(top))
    if found is not None:
        return found
    if index[2] is None:
        by_top = {}
        for meta_dir in index[1].values():
            for name in _top_levels(meta_dir):
                by_top.setdefault(name, meta_dir)
        index[2] = by_top
    return index[2].get(top)


def _read_dist(meta_dir):
    """{"name", "version", "metadata"} from a distribution's METADATA / PKG-INFO."""
    for filename in ("METADATA", "PKG-INFO"):
        path = os.path.join(meta_dir, filename)
        fields = {}
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if not line.strip():
                        break
                    key, _, value = line.partition(":")
                    if key in ("Name", "Version") and key not in fields:
                        fields[key] = value.strip()
        except OSError:
            continue
        name = fields.get("Name") or os.path.basename(meta_dir).split("-", 1)[0]
        return {"name": name, "version": fields.get("Version"), "metadata": path}
    return None


def _site_dirs():
    return sorted({os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)}, key=len, reverse=True)


def _dists_of(paths):
    """The distributions the third-party module files `paths` belong to."""
    sites = _site_dirs()
    dirs = set()
    for path in paths:
        site = next((s for s in sites if path.startswith(s + os.sep)), None)
        if site is None:
            continue
        top = path[len(site) + 1 :].split(os.sep, 1)[0].split(".", 1)[0]
        meta_dir = _dist_dir(site, top)
        if meta_dir is not None:
            dirs.add(meta_dir)
    dists = [_read_dist(d) for d in sorted(dirs)]
    return [d for d in dists if d is not None]


def _warm_dist_index():
    """Zygote: read the site folders' distributions while idle, so forks inherit it."""
    for site in _site_dirs():
        if any(marker in site + os.sep for marker in _SITE_MARKERS):
            index = _site_index(site)
            if index is not None and index[2] is None:
                _dist_dir(site, "\0")


class Inventory:
    """The modules a worker has imported, sorted into project files and third-party
    module files. Each module is looked at once; `scan` reports only what is new."""

    def __init__(self, roots):
        self.roots = roots
        self.seen = set()
        self.project = set()
        self.third = set()
        self.known = 0

    def grew(self):
        return len(sys.modules) != self.known

    def scan(self):
        """(new project files, new third-party module files) since the last scan."""
        new_project, new_third = [], []
        for name, module in list(sys.modules.items()):
            if name in self.seen:
                continue
            self.seen.add(name)
            kind = _module_kind(_file_of(module), self.roots)
            if kind is None:
                continue
            target, found = (self.project, new_project) if kind[0] == "project" else (self.third, new_third)
            if kind[1] not in target:
                target.add(kind[1])
                found.append(kind[1])
        self.known = len(sys.modules)
        return new_project, new_third

    def project_files(self):
        return sorted(self.project)


def _packages(module_files):
    """The report of third-party module files: the files, and their distributions
    when the metadata can be read (the files' stamps alone still key the cache)."""
    try:
        dists = _dists_of(module_files)
    except Exception:
        dists = []
    return {"modules": sorted(module_files), "dists": dists}
