"""The core's layering, checked on its source: no gradio or plotly in the core, no import
of the UI from the core, no import cycle between the core's modules or its packages, and
every import pointing down the order written in ``LAYERS`` (counting the imports inside
functions too, which hide cycles until run time)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "decoding_lab"


def _modules() -> dict[str, Path]:
    out = {}
    for path in CORE.rglob("*.py"):
        rel = path.relative_to(CORE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _runs(tree: ast.AST) -> list[ast.AST]:
    """Every node that can run: the bodies of ``if TYPE_CHECKING:`` are left out (imports for type
    hints only, which let a low layer name a higher layer's type without importing it)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in _runs(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


#: The core from the bottom up. A module may import its own layer and the ones below, never one
#: above; inside a layer, ``test_no_import_cycle_between_core_modules`` keeps the imports acyclic.
#: Each entry names a top-level module or package of ``decoding_lab``.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation: errors, the knob table, statistics, limits", ("errors", "params", "stats", "limits", "result_files", "fair_share",
                                                                "memory_budget",
                                                                "bundled")),
    ("stages", ("stages",)),
    ("the chain and its rules", ("chain", "trace", "engines", "settings", "tasks")),
    ("engine access: llama.cpp's library, server HTTP", ("llamacpp", "remote")),
    ("backends", ("backends",)),
    ("model names", ("models",)),
    ("the decode core", ("decode", "stepper")),
    ("model tools", ("grammar", "determinism")),
    ("strategies and selection", ("strategies", "metrics", "multisample")),
    ("runs: experiments, lessons and their labs, benchmarks", ("experiments", "lesson_runs", "lesson_labs", "learner_calibration", "lessons",
                                                              "bench")),
    ("classes: rooms that ask the lessons' questions", ("classroom",)),
    ("entry points", ("cli", "__main__")),
]


def _layer_of(module: str) -> int | None:
    top = module.split(".")[1] if "." in module else module
    return next((i for i, (_, units) in enumerate(LAYERS) if top in units), None)


def _core_graph() -> dict[str, set[str]]:
    """Module → the core modules it imports (anywhere in its source), the UI left out."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        if mod.startswith("decoding_lab.ui") or mod == "decoding_lab":
            continue
        graph[mod] = set()
        for name in _imports(path):
            if not name.startswith("decoding_lab."):
                continue
            target = next((m for m in (name, name.rsplit(".", 1)[0]) if m in mods), None)
            if target is not None and target != mod and not target.startswith("decoding_lab.ui"):
                graph[mod].add(target)
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_strongly_connected_finds_a_cycle_and_only_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert sorted(g for g in _strongly_connected(graph) if len(g) > 1) == [["a", "b", "c"]]


def test_no_import_cycle_between_core_modules():
    cycles = [g for g in _strongly_connected(_core_graph()) if len(g) > 1]
    assert cycles == []


def test_every_core_module_has_a_layer():
    assert sorted({m for m in _core_graph() if _layer_of(m) is None}) == []


def test_imports_point_down_the_layers():
    """An import of a higher layer is a cycle waiting to happen: name the edge and both layers."""
    wrong = []
    for mod, targets in sorted(_core_graph().items()):
        here = _layer_of(mod)
        for target in sorted(targets):
            there = _layer_of(target)
            if here is not None and there is not None and there > here:
                wrong.append(f"{mod} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]})")
    assert wrong == []


def _unit(module: str) -> str:
    """The layer a module belongs to: its package under decoding_lab, or the module itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_core_never_imports_gradio_plotly_or_the_ui():
    bad = []
    for mod, path in _modules().items():
        if mod.startswith("decoding_lab.ui"):
            continue
        for name in _imports(path):
            if name.split(".")[0] in ("gradio", "plotly") or name.startswith("decoding_lab.ui"):
                bad.append(f"{mod} imports {name}")
    assert bad == []


def test_no_import_cycle_between_core_packages():
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        if mod.startswith("decoding_lab.ui"):
            continue
        src = _unit(mod)
        for name in _imports(path):
            if not name.startswith("decoding_lab."):
                continue
            target = next((m for m in (name, name.rsplit(".", 1)[0]) if m in mods), None)
            if target is None or target.startswith("decoding_lab.ui"):
                continue
            dst = _unit(target)
            if dst != src and src.count(".") == 1 and dst.count(".") == 1:
                graph.setdefault(src, set()).add(dst)
    # packages (folders) must not form cycles; single modules at the top level may sit anywhere
    packages = {u for u in graph if (CORE / u.split(".")[1]).is_dir()}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt not in packages:
                continue
            if nxt in stack:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif len(stack) < 12:
                visit(nxt, stack + [nxt])

    for pkg in sorted(packages):
        visit(pkg, [pkg])
    assert cycles == []


def test_errors_and_params_are_leaves():
    for leaf in ("errors", "params"):
        imported = {n for n in _imports(CORE / f"{leaf}.py") if n.startswith("decoding_lab")}
        assert imported <= {"decoding_lab.errors", "decoding_lab.errors.SettingsError"}, (leaf, imported)


def test_a_models_forward_is_called_from_the_decode_core_and_the_backends_only():
    """``decode.run`` is the one door to a forward pass: a new loop that calls ``lm.forward`` (or a
    transformers module) itself would bypass what the core does for every row."""
    callers = []
    for mod, path in _modules().items():
        if mod.startswith(("decoding_lab.backends", "decoding_lab.ui")) or mod == "decoding_lab.decode":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("forward", "forward_uncached")):
                callers.append(f"{mod}:{node.lineno}")
    assert callers == []
