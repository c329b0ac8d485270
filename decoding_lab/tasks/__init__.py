"""Task sets with verifiers: what "correct" means for pass@k, votes and sweeps.

| module | what |
|---|---|
| ``sets``     | task sets with verifiers (addition, capitals, multiple choice, reasoning-gym, HumanEval) |
| ``extract``  | answers out of free text, by pattern |
| ``sandbox``  | running model-written code in a limited child process |

This package sits below the experiments and imports only the stages' errors and limits:
a verifier never needs a model, a grammar or a sampler.
"""
