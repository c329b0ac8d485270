"""What an Explorer action reads and what it holds.

* ``ExplorerRequest``: the step-like endpoints' named inputs (``model``, ``hub_id``, ``prompt``,
  ``chat``, one per key of ``SETTING_KEYS``, ``top_n``), validated once: the model name (a Hub
  id overrides the list), the prompt format, the settings and the number of tokens shown.
* ``ExplorerSession``: one visitor's stepper plus what it was built from, in a ``gr.State``
  (``Session`` gives it the lock and the deep copy that keeps the model shared).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from decoding_lab import stats
from decoding_lab.settings import PRESET_ORDERS, SamplingSettings
from decoding_lab.stages import SettingsError
from decoding_lab.stepper import Stepper
from decoding_lab.ui.common import urlstate
from decoding_lab.ui.common.session import Session
from decoding_lab.ui.common.controls import model_names
from decoding_lab.ui.common.state import CUSTOM, SETTING_KEYS, number_input, settings_from_values
from decoding_lab.ui.common.validate import check_choice

#: The API parameter names of every step-like endpoint, after the two (invisible) states.
CONTROL_NAMES: tuple[str, ...] = ("model", "hub_id", "prompt", "chat", *SETTING_KEYS, "top_n")
CURVE_GRID = stats.default_temperature_grid(n=32)  # H(T) is smooth: 32 points draw it well
TOP_N_RANGE = urlstate.TOP_N_RANGE   # one range for the API and for share links
#: Step ×N's largest N: the page's own box's maximum, so that an API caller may ask no more than a visitor.
MAX_STEP_N = 256


@dataclass(frozen=True)
class ExplorerRequest:
    lang: str
    model_name: str                 # the Hub id if one was typed, else the dropdown's model
    prompt: str
    chat: str                       # "chat" or "raw"
    settings: SamplingSettings
    top_n: int

    @classmethod
    def from_inputs(cls, v: Mapping[str, Any]) -> "ExplorerRequest":
        """Named inputs -> a validated request (raises ``SettingsError``, a ``UserError``)."""
        chat = v["chat"]
        top_n = number_input("top-N", v["top_n"], *TOP_N_RANGE, integer=True)   # text, NaN, 1.5: one line
        if not isinstance(chat, str) or chat not in ("chat", "raw"):
            raise SettingsError(f"prompt format must be 'chat' or 'raw', got {chat!r:.40}")
        hub = v["hub_id"] if isinstance(v["hub_id"], str) else ""
        if not hub.strip():   # the list's choice (the Hub box, when shown, overrides it)
            check_choice("model", v["model"], model_names())
        check_choice("stage order", v.get("order_preset") or "transformers", [*PRESET_ORDERS, CUSTOM])
        controls = {k: v[k] for k in SETTING_KEYS}
        return cls(lang=v.get("lang") or "en", model_name=hub.strip() or (v["model"] or ""),
                   prompt=v["prompt"] or "", chat=chat, settings=settings_from_values(controls),
                   top_n=int(top_n))

    @property
    def model_key(self) -> str:
        """The model's name as ``get_model`` records it (bundled names in lower case)."""
        from decoding_lab.models import BUNDLED
        name = self.model_name.strip()
        return name.lower() if name.lower() in BUNDLED else name


@dataclass
class LinkRest:
    """The steps of a shared link not yet replayed (opening a link replays at most
    ``urlstate.LINK_REPLAY_STEPS``): the link's whole length, its forced tokens by step, and the
    tokens of the run when the replay paused. It stays valid only while the run on screen is
    exactly that run (a Step, Undo or force of the visitor's own makes it another run)."""

    total: int
    forced: dict[int, int]
    tokens: tuple[int, ...]


@dataclass
class ExplorerSession(Session):
    """One visitor's Explorer: the stepper plus what it was built from."""

    model_name: str
    prompt: str
    chat: bool
    stepper: Any  # decoding_lab.stepper.Stepper
    log_y: bool = False  # the distribution chart on a log scale (a view choice, kept with the run)
    notice: str = ""     # a string key the status line adds once ("new_run": the prompt or model changed)
    step_settings: list[Any] = field(default_factory=list)   # the settings each step ran with, in order
    link_rest: LinkRest | None = None   # a shared link's steps not replayed yet (``pending_link``)

    def pending_link(self) -> LinkRest | None:
        """The link's steps still to replay, if the run on screen is still the one the link
        replayed so far (and can go on), else None."""
        rest, st = self.link_rest, self.stepper
        if rest is None or tuple(st.tokens) != rest.tokens or st.finished or len(st.tokens) >= rest.total:
            return None
        return rest

    def settings_changed_at(self) -> int | None:
        """The first step of the run on screen that ran with other settings than those now on,
        or None. A link replays every step with one set of settings, so such a run cannot be
        replayed by a link (``views.share_query``). Steps restored from a branch carry no record."""
        st = self.stepper
        for step, used in enumerate(self.step_settings[: len(st.traces)]):
            if used is not None and used != st.settings:
                return step
        return None

    def built_from(self, req: ExplorerRequest) -> bool:
        """Whether ``req`` names this session's model, prompt and prompt format."""
        return (req.model_key, req.prompt, req.chat == "chat") == (self.model_name, self.prompt, self.chat)

    def apply(self, req: ExplorerRequest) -> None:
        """The request's settings and top-N, from the next step on (the prompt needs a Reset)."""
        self.stepper.set_settings(req.settings)
        self.stepper.top_n = req.top_n

    def step(self, force_token_id: int | None = None) -> None:
        """One step; the new trace keeps its H(T) curve, so Undo shows the right one."""
        st = self.stepper
        del self.step_settings[len(st.traces):]    # an Undo or a rewind dropped the later steps
        self.step_settings += [None] * (len(st.traces) - len(self.step_settings))   # restored: unknown
        st.step(force_token_id=force_token_id)
        self.step_settings.append(st.settings)
        if st.traces and not st.traces[-1].entropy_curve:
            st.traces[-1].entropy_curve = st.entropy_curve(CURVE_GRID)


def new_session(name: str, prompt: str, chat: str, settings: Any, top_n: int) -> ExplorerSession:
    """A fresh stepper on ``name`` (loaded once per process), prefilled with ``prompt``."""
    from decoding_lab.models import get_model
    lm = get_model(name)
    stepper = Stepper.from_prompt(lm, prompt, chat == "chat", settings, top_n=top_n)
    return ExplorerSession(lm.name, prompt, chat == "chat", stepper)


def session_for(req: ExplorerRequest) -> ExplorerSession:
    return new_session(req.model_name, req.prompt, req.chat, req.settings, req.top_n)
