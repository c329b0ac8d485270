"""Temperature: reshape the distribution without cutting anything.

p_T(i) = exp(z_i / T) / sum_j exp(z_j / T).  T < 1 sharpens, T > 1 flattens, and the
ratio of two probabilities is raised to the power 1/T:
p_T(i) / p_T(j) = (p(i) / p(j)) ** (1 / T).  No token with non-zero probability
ever reaches zero, which is why truncation stages exist.

    >>> z = torch.tensor([[2.0, 0.0]])
    >>> Temperature(0.5).transform(z, History.empty()).tolist()   # the gap of 2 becomes 4
    [[4.0, 0.0]]

T = 0 is not a stage: the chain treats it as "pick the argmax" (greedy), as engines do.

Dynamic temperature (llama.cpp's ``temp_ext``, "dynatemp"): with a range ``delta > 0`` the
temperature is chosen per step from the entropy of the distribution. A confident step
(low entropy) gets a temperature near ``T - delta``, an unsure one (entropy near the
maximum, log of the number of candidates) a temperature near ``T + delta``:

    dyn_T = min_T + (max_T - min_T) * (H / H_max) ** exponent,
    min_T = max(0, T - delta),  max_T = T + delta,  H_max = log(number of candidates).

    >>> _, rec = Temperature(1.0, delta=0.5).apply(torch.zeros(4), History.empty())
    >>> rec.extra                       # uniform: H = H_max, so the top of the range
    TemperatureExtra(T_used=1.5)
    >>> _, rec = Temperature(1.0, delta=0.5).apply(torch.tensor([10.0, 0, 0, 0]), History.empty())
    >>> round(rec.extra.T_used, 4)   # nearly one-hot: H / H_max = 0.0011, so the bottom
    0.5011
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from dataclasses import dataclass

from decoding_lab.params import PARAMS
from decoding_lab.stages.base import History, SettingsError, Stage


@dataclass(frozen=True)
class TemperatureExtra:
    """What a dynamic-temperature step records: the temperature it divided by."""

    T_used: float


class Temperature(Stage):
    """Divide the logits by T; with ``delta > 0``, by a T chosen from the entropy (llama.cpp's
    ``llama_sampler_temp_ext_apply``).

    Dynamic mode follows llama.cpp step by step, with our full-vocabulary convention: its
    "candidates" are our finite logits, so the entropy is that of the softmax over them and
    ``H_max = log(count of finite logits)``. With one candidate (or none) nothing is scaled at
    all (llama.cpp returns early, so not even T applies). When ``dyn_T <= 0`` (possible
    when ``delta >= T``: then ``min_T = 0``) llama.cpp keeps only the best token, and so do
    we (the first index on a tie). One place where we cannot copy llama.cpp: a tiny but
    positive ``dyn_T`` can overflow float32 (``z / dyn_T = inf``), after which llama.cpp's
    softmax computes inf - inf = NaN; we take the limit T -> 0 instead and keep the best
    token. ``exponent`` must be > 0 (llama.cpp does not check it; 0 would pin dyn_T to max_T).
    """

    name = "temperature"
    measures_temperature = True   # dH/dT and the H(T) curve are measured on this stage's input

    @classmethod
    def from_settings(cls, s: Any) -> "Temperature | None":
        if s.greedy:   # T = 0: the selector takes the argmax; there is no scaling stage
            return None
        return cls(s.temperature, s.dynatemp_range, s.dynatemp_exponent)

    def __init__(self, temperature: float, delta: float = 0.0, exponent: float = 1.0) -> None:
        t = PARAMS["temperature"].check(temperature)
        if t == 0:
            raise SettingsError("temperature 0 means greedy decoding; it is not a scaling stage")
        self.temperature = t
        self.delta = PARAMS["dynatemp_range"].check(delta)
        self.exponent = PARAMS["dynatemp_exponent"].check(exponent)

    @property
    def dynamic(self) -> bool:
        return self.delta > 0.0

    def params(self) -> dict:
        if not self.dynamic:
            return {"T": self.temperature}
        return {"T": self.temperature, "delta": self.delta, "exponent": self.exponent}

    def is_active(self) -> bool:
        return self.temperature != 1.0 or self.dynamic

    def dynamic_temperature(self, logits: torch.Tensor) -> torch.Tensor:
        """The temperature dynatemp would use for each row of ``[batch, vocab]`` logits (float64,
        ``[batch]``); NaN for a row with fewer than two candidates (left unscaled).

        Computed in float32, in llama.cpp's order of operations: its softmax and entropy are
        running float sums over the candidates sorted by probability, and over a 49k-token
        vocabulary those sums differ from exact arithmetic by ~1e-5 relative, enough to move
        every probability by ~3e-5. Copying the float arithmetic keeps the preset within 1e-6
        of llama.cpp (tests/test_llamacpp_parity.py)."""
        rows = logits.detach().to("cpu", torch.float32).numpy()
        out = np.full(rows.shape[0], np.nan)
        t32, d32, e32 = np.float32(self.temperature), np.float32(self.delta), np.float32(self.exponent)
        t_min, t_max = max(np.float32(0.0), t32 - d32), t32 + d32
        for i, row in enumerate(rows):
            z = np.sort(row[np.isfinite(row)])[::-1]
            if z.size <= 1:
                continue
            e = np.exp(z - z[0])
            p = e / np.add.accumulate(e, dtype=np.float32)[-1]
            terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, np.float32(1.0))), np.float32(0.0))
            entropy = np.add.accumulate(terms.astype(np.float32), dtype=np.float32)[-1]
            max_entropy = -np.log(np.float32(1.0) / np.float32(z.size))
            ratio = np.float32(entropy / max_entropy)
            out[i] = float(t_min + (t_max - t_min) * np.float32(np.power(ratio, e32)))
        return torch.from_numpy(out).to(logits.device)

    def _dynamic(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Dynamic mode on ``[batch, vocab]``: the new logits and, per row, the temperature used
        (float64; 1.0 where nothing was scaled, 0.0 where only the best token was kept)."""
        dyn = self.dynamic_temperature(logits)
        # llama.cpp computes dyn_T in float and divides float logits by it; so do we.
        t = dyn.to(logits.dtype).unsqueeze(-1)
        scaled = logits / torch.where(t > 0, t, 1.0)
        # T <= 0 (or so small that z / T overflowed): keep the best token only, at its own logit.
        greedy = (t[:, 0] <= 0) | ~torch.isfinite(scaled.amax(dim=-1))
        best = logits.argmax(dim=-1, keepdim=True)
        only_best = torch.full_like(logits, float("-inf")).scatter(-1, best, logits.gather(-1, best))
        out = torch.where(greedy.unsqueeze(-1), only_best, scaled)
        # Fewer than two candidates: llama.cpp leaves the row as it is.
        untouched = torch.isnan(dyn)
        out = torch.where(untouched.unsqueeze(-1), logits, out)
        used = torch.where(untouched, 1.0, torch.where(greedy, 0.0, dyn))
        return out, used

    def transform(self, logits: torch.Tensor, history: History) -> torch.Tensor:
        if not self.dynamic:
            return logits / self.temperature
        return self._dynamic(logits)[0]

    def record_extra(self, before: torch.Tensor, after: torch.Tensor) -> TemperatureExtra | None:
        """``T_used``: the temperature this step divided by (1.0 when there was nothing to scale,
        0.0 when it kept only the best token). For batch row 0 when given a batch."""
        if not self.dynamic:
            return None
        row = before if before.dim() == 1 else before[0]
        return TemperatureExtra(float(self._dynamic(row.unsqueeze(0))[1][0]))
