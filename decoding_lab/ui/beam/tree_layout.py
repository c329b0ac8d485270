"""Where each node of a ``BeamTree`` goes on the chart: two layouts, and a node's ancestry.

A node is ``(step, candidate index)``; its parent is the candidate that became beam
``candidate.parent`` at the step before (``steps[s - 1].live[parent]``), and the root (the
prompt, ``None``) is the parent of every step-0 candidate.

* **By beam slot** (``slot_rows``): y = the candidate's rank at its step. Cheap to read per
  step, but the search re-sorts its beams every step, so one hypothesis jumps between rows and
  edges cross.
* **By hypothesis** (``hypothesis_rows``): a tidy tree. A depth-first walk, best child first,
  gives every leaf the next free row; an inner node takes the row of its best child. So a
  hypothesis keeps its row for as long as it is its parent's best continuation, every subtree
  holds a block of consecutive rows, and since blocks never interleave, no two edges cross.
  Pruned candidates (dead ends the search never needed) are left out by default: with them,
  the tree needs about ``num_beams`` more rows per step.

Pure Python on the core's records; the chart (``plots``) only draws these numbers.

    >>> from decoding_lab.strategies.result import BeamCandidate as C, BeamStep as S, BeamTree
    >>> t = BeamTree(2, 1.0, False)
    >>> t.steps = [S(0, [C(0, 1, "a", -0.1, -0.1, "live", False), C(0, 2, "b", -0.5, -0.5, "live", False)], [0, 1]),
    ...            S(1, [C(1, 3, "c", -0.1, -0.6, "live", False), C(0, 4, "d", -0.6, -0.7, "live", False)], [0, 1])]
    >>> slot_rows(t)[(1, 0)], hypothesis_rows(t)[(1, 0)]   # "b c" is the best path: slot 0, but b's row
    (0, 1)
    >>> ancestry(t, (1, 0))
    [None, (0, 1), (1, 0)]
"""

from __future__ import annotations

from typing import Any

Node = tuple[int, int]           # (step, candidate index)
Key = Node | None                # None = the root (the prompt)


def parent_of(tree: Any, node: Node) -> Key:
    s, j = node
    if s == 0:
        return None
    return s - 1, tree.steps[s - 1].live[tree.steps[s].candidates[j].parent]


def children(tree: Any, include_pruned: bool = True) -> dict[Key, list[Node]]:
    """Every node's children, best score first (each step's candidates come sorted)."""
    kids: dict[Key, list[Node]] = {None: []}
    for s, step in enumerate(tree.steps):
        for j, c in enumerate(step.candidates):
            if include_pruned or c.status != "pruned":
                kids.setdefault(parent_of(tree, (s, j)), []).append((s, j))
    return kids


def slot_rows(tree: Any) -> dict[Key, int]:
    """y = rank among the step's candidates; the root sits at row 0."""
    rows: dict[Key, int] = {None: 0}
    rows.update({(s, j): j for s, step in enumerate(tree.steps) for j in range(len(step.candidates))})
    return rows


def hypothesis_rows(tree: Any, include_pruned: bool = False) -> dict[Key, int]:
    """The tidy layout described above: leaves take rows in depth-first order, an inner node
    the row of its first (best) child. Nodes left out (pruned) have no row."""
    kids = children(tree, include_pruned)
    rows: dict[Key, int] = {}
    free = 0
    # iterative post-order walk: (node, children still to place)
    stack: list[tuple[Key, list[Node]]] = [(None, list(kids.get(None, [])))]
    while stack:
        node, todo = stack[-1]
        if todo:
            child = todo.pop(0)
            stack.append((child, list(kids.get(child, []))))
            continue
        stack.pop()
        own = kids.get(node, [])
        if own:
            rows[node] = rows[own[0]]
        else:
            rows[node], free = free, free + 1
    return rows


def ancestry(tree: Any, node: Node) -> list[Key]:
    """The path from the root to ``node``, root first."""
    path: list[Key] = [node]
    while path[-1] is not None:
        path.append(parent_of(tree, path[-1]))  # type: ignore[arg-type]
    return path[::-1]
