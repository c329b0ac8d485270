"""Temperature: reshape the distribution without cutting anything.

p_T(i) = exp(z_i / T) / sum_j exp(z_j / T).  T < 1 sharpens, T > 1 flattens, and the
ratio of two probabilities is raised to the power 1/T:
p_T(i) / p_T(j) = (p(i) / p(j)) ** (1 / T).  No token with non-zero probability
ever reaches zero, which is why truncation stages exist.

    >>> z = torch.tensor([[2.0, 0.0]])
    >>> Temperature(0.5).transform(z, History.empty()).tolist()   # the gap of 2 becomes 4
    [[4.0, 0.0]]

T = 0 is not a stage: the chain treats it as "pick the argmax" (greedy), as engines do.
"""

from __future__ import annotations

import torch

from decoding_lab.stages.base import History, SettingsError, Stage, check_number


class Temperature(Stage):
    name = "temperature"

    def __init__(self, temperature: float) -> None:
        t = check_number("temperature", temperature, lo=0.0)
        if t == 0:
            raise SettingsError("temperature 0 means greedy decoding; it is not a scaling stage")
        self.temperature = t

    def params(self) -> dict:
        return {"T": self.temperature}

    def is_active(self) -> bool:
        return self.temperature != 1.0

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        return logits / self.temperature
