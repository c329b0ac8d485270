"""The core's layering, checked on its source: no gradio or plotly in the core, no import
of the UI from the core, and no import cycle between the core's packages (counting the
imports inside functions too, which hide cycles until run time)."""

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


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


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
