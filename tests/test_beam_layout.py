"""The beam tree's layouts on real searches (a tiny random model, so they run in seconds):
by hypothesis a path keeps its row and no two edges cross; every node carries its ancestry
for the hover highlight; end-of-sequence nodes get a short label."""

from __future__ import annotations

import itertools

import pytest

from tiny_model import make_tiny_lm
from decoding_lab.strategies import beam_search
from decoding_lab.ui.beam import tree_layout
from decoding_lab.ui.beam.plots import beam_tree_chart


@pytest.fixture(scope="module", params=[(8, 0, 3), (16, 1, 4), (96, 2, 4)])
def tree(request):
    vocab, seed, beams = request.param
    lm = make_tiny_lm(vocab_size=vocab, seed=seed, eos=(1,))
    return beam_search(lm, lm.encode_prompt("abc"), max_new_tokens=10, num_beams=beams).beam_tree


def edges(tree, rows):
    """(step, parent row, child row) of every drawn edge."""
    return [(s, rows[tree_layout.parent_of(tree, (s, j))], rows[s, j])
            for s, st in enumerate(tree.steps) for j in range(len(st.candidates)) if (s, j) in rows]


def test_by_hypothesis_no_edges_cross_and_paths_keep_their_row(tree):
    rows = tree_layout.hypothesis_rows(tree)
    drawn = edges(tree, rows)
    for (s1, p1, c1), (s2, p2, c2) in itertools.combinations(drawn, 2):
        if s1 == s2:   # same column of edges: they cross when their ends come in opposite orders
            assert not ((p1 < p2 and c1 > c2) or (p1 > p2 and c1 < c2)), (s1, p1, c1, p2, c2)
    kids = tree_layout.children(tree, include_pruned=False)
    for node, ks in kids.items():
        if ks:
            assert rows[node] == rows[ks[0]]  # the best continuation stays on its parent's row
    # pruned candidates are left out; every other node has a row
    statuses = {(s, j): c.status for s, st in enumerate(tree.steps) for j, c in enumerate(st.candidates)}
    assert {n for n, st in statuses.items() if st != "pruned"} == set(rows) - {None}


def crossings(drawn) -> int:
    return sum(1 for (s1, p1, c1), (s2, p2, c2) in itertools.combinations(drawn, 2)
               if s1 == s2 and (p1 - p2) * (c1 - c2) < 0)


def test_by_slot_crosses_where_the_search_resorts(tree):
    # the slot layout is the one the hypothesis layout fixes: there, y is just the rank, and
    # on these searches its edges cross
    rows = tree_layout.slot_rows(tree)
    assert all(rows[s, j] == j for s, st in enumerate(tree.steps) for j in range(len(st.candidates)))
    assert crossings(edges(tree, rows)) > 0 == crossings(edges(tree, tree_layout.hypothesis_rows(tree)))


def test_chart_carries_ancestry_and_short_end_labels(tree):
    fig = beam_tree_chart(tree, "en")
    anc = next(d for d in fig.data if d.meta == "ancestry")
    assert len(anc.x) == 0  # empty until a hover fills it
    rows = tree_layout.hypothesis_rows(tree)
    for d in fig.data:
        for cd in d.customdata if d.customdata is not None else []:
            xs, ys = (list(map(int, part.split(","))) for part in cd.split("|"))
            assert xs == list(range(-1, len(xs) - 1)) and ys[0] == rows[None]  # prompt first, one node a step
    labels = [x for d in fig.data if d.text is not None for x in d.text]
    assert "<1>" not in labels  # the EOS token's own text is not drawn
    ends = sum(c.eos and c.status != "pruned" for st in tree.steps for c in st.candidates)
    assert labels.count("EOS") == ends
    assert "结束" in [x for d in beam_tree_chart(tree, "zh").data if d.text is not None for x in d.text] or not ends
