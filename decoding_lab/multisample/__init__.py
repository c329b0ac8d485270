"""Many samples per prompt: the maths of choosing among them, and the verifier tilt.

| module | what |
|---|---|
| ``passk``      | unbiased pass@k (Codex product form) and its uncertainty across problems |
| ``selection``  | self-consistency (majority vote) and best-of-n |
| ``tilt``       | ``VerifierTilt`` stage: logits' = (z + eta * V) / T |

Task sets and verifiers are in ``decoding_lab.tasks``; the sweeps, CTD calibration and tilt
runs that use all of these are in ``decoding_lab.experiments``. Nothing here imports gradio
or plotly.
"""
