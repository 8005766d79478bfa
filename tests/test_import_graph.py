"""The house's walls (issue 20): which folder may import which, read from the source.

Every project module is parsed (ast, never imported), each import of another project folder is an
edge of the folder graph, and the graph must have no loop: a folder that imports one which
imports it back (directly or through others) can no longer be understood, tested or moved alone.
The two ledger apps, `sessions` and `pipeline`, link to each other by URL only (ARCHITECTURE.md
§3), and `bench/` is a leaf that nothing imports.
"""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIPPED = {".venv", ".git", "var", "node_modules", "static", "templates", "docs"}


def project_folders(root: Path = ROOT) -> set[str]:
    """The top-level folders that hold Python: packages, and tests/ (which has no __init__)."""
    return {
        p.name
        for p in root.iterdir()
        if p.is_dir() and p.name not in SKIPPED and not p.name.startswith(".")
        if (p / "__init__.py").exists() or p.name == "tests"
    }


def imported_modules(tree: ast.AST):
    """(module, line) for every absolute import in a parsed file, lazy ones inside functions too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno


def folder_graph(root: Path = ROOT) -> dict[str, dict[str, str]]:
    """folder -> {imported folder: where the first such import is ("path:line module")}."""
    folders = project_folders(root)
    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for folder in sorted(folders):
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_bytes(), filename=str(path))
            for module, line in imported_modules(tree):
                target = module.split(".")[0]
                if target in folders and target != folder:
                    where = f"{path.relative_to(root)}:{line} imports {module}"
                    graph[folder].setdefault(target, where)
    return graph


def find_loop(graph: dict[str, dict[str, str]]) -> list[str]:
    """A loop of folders [a, b, …, a] if the graph has one, else []: a depth-first search that
    meets a folder still on its own path."""
    on_path: list[str] = []
    done: set[str] = set()

    def visit(folder: str) -> list[str]:
        if folder in on_path:
            return on_path[on_path.index(folder) :] + [folder]
        if folder in done:
            return []
        on_path.append(folder)
        for target in sorted(graph.get(folder, {})):
            if loop := visit(target):
                return loop
        on_path.pop()
        done.add(folder)
        return []

    for folder in sorted(graph):
        if loop := visit(folder):
            return loop
    return []


def explain(loop: list[str], graph: dict[str, dict[str, str]]) -> str:
    edges = [f"  {a} -> {b}: {graph[a][b]}" for a, b in zip(loop, loop[1:], strict=False)]
    return "folder loop " + " -> ".join(loop) + "\n" + "\n".join(edges)


def test_no_folder_imports_one_that_imports_it_back():
    graph = folder_graph()
    loop = find_loop(graph)
    assert not loop, explain(loop, graph)


def test_sessions_and_pipeline_never_import_each_other():
    graph = folder_graph()
    between = [
        f"{a} -> {b}: {graph[a][b]}"
        for a, b in (("sessions", "pipeline"), ("pipeline", "sessions"))
        if b in graph.get(a, {})
    ]
    assert not between, "\n".join(between)


# Apps that stand alone on the core (ledgerweb) and the facts (ledgerfacts). The overview page
# is not one of them: it shows what the pipeline says.
APPS = {"sessions", "pipeline", "search", "importers", "demo"}


def test_no_app_imports_another():
    graph = folder_graph()
    found = [
        f"{app} -> {other}: {graph[app][other]}"
        for app in sorted(APPS)
        for other in sorted(APPS & set(graph.get(app, {})))
    ]
    assert not found, "\n".join(found)


def test_nothing_imports_the_bench():
    graph = folder_graph()
    importers = [f"{a}: {targets['bench']}" for a, targets in graph.items() if "bench" in targets]
    assert not importers, "\n".join(importers)


def test_the_ledger_facts_import_nothing_of_the_project_nor_django():
    """ledgerfacts/ is what the importers, the demo and the tools share without Django."""
    files = sorted((ROOT / "ledgerfacts").rglob("*.py"))
    assert files
    found = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in files
        for module, line in imported_modules(ast.parse(path.read_bytes()))
        if module.split(".")[0] in project_folders() | {"django"}
    ]
    assert not found, "\n".join(found)


def test_a_loop_is_found_and_named_with_where_each_import_is(tmp_path):
    """The checker itself, on a made-up project: a -> b -> c -> a through a lazy import."""
    for name, source in {
        "a": "from b import x\n",
        "b": "import c.deep\n",
        "c": "def f():\n    from a.inner import y\n",
        "d": "import a\n",
    }.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(source)
    graph = folder_graph(tmp_path)
    loop = find_loop(graph)
    assert loop == ["a", "b", "c", "a"]
    assert "c/__init__.py:2 imports a.inner" in explain(loop, graph)
    del graph["c"]["a"]
    assert find_loop(graph) == []
