"""Many samples per prompt: pass@k, self-consistency, best-of-n, task sets with verifiers,
temperature x truncation sweeps, calibrated temperature (CTD) and the verifier-tilted
temperature stage.

| module | what |
|---|---|
| ``passk``        | unbiased pass@k (Codex product form) and its uncertainty across problems |
| ``selection``    | self-consistency (majority vote) and best-of-n |
| ``tasks``        | task sets with verifiers (addition, capitals, multiple choice, reasoning-gym, HumanEval) |
| ``extract``      | answers out of free text, by pattern |
| ``constrained``  | answers by a second, constrained generation (choices / integer) |
| ``sandbox``      | running model-written code in a limited child process |
| ``grid``         | the sweep's axes: ``Cell``, ``SweepConfig``, truncation / penalty presets |
| ``sweep``        | running the grid: per-cell metrics, cache per cell, resumable, best T per k |
| ``calibration``  | calibrated temperature decoding (CTD) from log p(y) vs correctness |
| ``ctd_report``   | a shipped CTD result read next to its sweep: the fitted samples, the curve, bins |
| ``tilt``         | ``VerifierTilt`` stage: logits' = (z + eta * V) / T |
| ``tilt_run``     | one tilted generation recorded step by step (candidates, z, V, tilted logits) |
| ``cli``          | the ``sweep``, ``calibrate`` and ``extract-compare`` subcommands |

Nothing here imports gradio or plotly.
"""
