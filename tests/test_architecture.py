"""The package's shape: no import cycles, and subpackages that meet only through their public names.

Read from the source with ``ast`` (every import, at module level or inside a function), so that a
lazy import cannot hide a cycle. A *unit* is a subpackage of automl (``automl.search``) or a module at
its top (``automl.cli``). The rules, as docs/design.md states them:

1. no cycle among modules;
2. no cycle among units: the data flow reads one way;
3. a unit is entered through its ``__init__``: another unit imports ``automl.search``, never
   ``automl.search.run``, and takes only names the ``__init__`` lists in ``__all__`` (for a module at
   the top: its public names), so each unit's inside may change without reading the others.

Not seen: imports by a name in a string. ``automl/_flat_names.py`` resolves the flat layout's module
names that way, for old pickles only, and forwards down to the stages.
"""

import ast
import graphlib
from pathlib import Path

import pytest

import automl

PACKAGE = Path(automl.__file__).parent


def _module_name(path, root):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(root):
    """Every import of the package's own modules: ``(importer, target module, imported names)``."""
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}
    found = []
    for importer, path in modules.items():
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(importer, a.name, ()) for a in node.names if a.name.split(".")[0] == root.name]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                if base.split(".")[0] != root.name:
                    continue
                names = tuple(a.name for a in node.names)
                # `from . import plots` imports a module; `from .data import X` imports names of one.
                submodules = [n for n in names if f"{base}.{n}" in modules]
                found += [(importer, f"{base}.{n}", ()) for n in submodules]
                rest = tuple(n for n in names if n not in submodules)
                if rest or not submodules:
                    found.append((importer, base, rest))
    return modules, found


def _unit(module):
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def _cycle(edges):
    graph = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def check_layout(root):
    """What breaks the three rules in the package at ``root``, as readable lines (empty when none)."""
    modules, found = _imports(root)
    problems = []
    cycle = _cycle((importer, target) for importer, target, _ in found if importer != target)
    if cycle:
        problems.append("module cycle: " + " -> ".join(cycle))
    units = {(_unit(i), _unit(t)) for i, t, _ in found}
    cycle = _cycle((a, b) for a, b in units if a != b and b != root.name)
    if cycle:
        problems.append("unit cycle: " + " -> ".join(cycle))
    for importer, target, names in found:
        unit = _unit(target)
        if _unit(importer) == unit or unit == root.name:
            continue
        if target != unit:
            problems.append(f"{importer} imports {target}: import from {unit} instead")
            continue
        public = _public_names(modules[target])
        problems += [f"{importer} takes {name} from {target}, which does not list it as public"
                     for name in names if name not in public]
    return problems


def _public_names(path):
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    if path.name == "__init__.py":
        return set()
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return {name for name in defined if not name.startswith("_")}


def test_the_package_keeps_its_layout():
    assert check_layout(PACKAGE) == []


def test_every_subpackage_says_what_it_offers():
    for init in PACKAGE.glob("*/__init__.py"):
        tree = ast.parse(init.read_text())
        assert ast.get_docstring(tree), f"{init} has no docstring"
        assert _public_names(init) or init.parent.name == "datasets", f"{init} lists no __all__"


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("files, expected", [
    # Two modules importing each other, one of them lazily inside a function.
    ({"pkg/__init__.py": "", "pkg/one/__init__.py": "", "pkg/one/a.py": "from .b import f\n",
      "pkg/one/b.py": "def f():\n    from .a import g\n"}, ["module cycle"]),
    # Two subpackages using each other through their public names: no module cycle, a unit cycle.
    ({"pkg/__init__.py": "", "pkg/one/__init__.py": "from .x import X\n__all__ = ['X']\n",
      "pkg/one/x.py": "from ..two import Y\nX = Y\n", "pkg/two/__init__.py": "Y = 1\n__all__ = ['Y']\n",
      "pkg/two/z.py": "from ..one import X\n"}, ["unit cycle"]),
    # A private name, a name the package does not list, and a module taken past the package's door.
    ({"pkg/__init__.py": "", "pkg/one/__init__.py": "from .x import X, _helper\n__all__ = ['X']\n",
      "pkg/one/x.py": "X = 1\ndef _helper():\n    pass\n",
      "pkg/two/__init__.py": "", "pkg/two/y.py": "from ..one import _helper\nfrom ..one.x import X\n"},
     ["takes _helper from pkg.one", "imports pkg.one.x: import from pkg.one instead"]),
    # The same shape, done right: no problem.
    ({"pkg/__init__.py": "", "pkg/one/__init__.py": "from .x import X\n__all__ = ['X']\n",
      "pkg/one/x.py": "X = 1\n", "pkg/two/__init__.py": "", "pkg/two/y.py": "from ..one import X\n"}, []),
])
def test_the_checker_finds_what_breaks_the_rules(tmp_path, files, expected):
    problems = check_layout(_write(tmp_path, files) / "pkg")
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected):
        assert start in problem, problems
