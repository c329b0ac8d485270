"""Experiments built from the layers below (stages, strategies, grammar, many-sample metrics,
task sets): each runs many generations and reports a result the lessons and tabs show.

| module | what |
|---|---|
| ``grid``                | the sweep's axes: ``Cell``, ``SweepConfig``, truncation / penalty presets |
| ``sweep``               | running the grid: per-cell metrics, cache per cell, resumable, best T per k |
| ``calibration``         | calibrated temperature decoding (CTD) from log p(y) vs correctness |
| ``ctd_report``          | a shipped CTD result read next to its sweep: the fitted samples, the curve, bins |
| ``tilt_run``            | one verifier-tilted generation recorded step by step |
| ``constrained_answers`` | answers by a second, grammar-constrained generation (choices / integer) |
| ``constrained_vs_free`` | the same task with and without a grammar: validity, accuracy, mask cost |
| ``cli``                 | the ``sweep``, ``calibrate`` and ``extract-compare`` subcommands |

Layers import downward only: stages <- grammar engine <- tasks / verifiers <- experiments <-
CLI / UI (``tests/test_layers.py`` fails on a cycle).
"""
