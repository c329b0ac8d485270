"""The "Verifier-tilted sampling" section of the Many-samples tab: a live run on the default model.

One click runs the plain chain (eta = 0) and then the tilted chain, logits' = (z + eta·V) / T,
with V from short greedy rollouts judged by the addition verifier, on the same problem and
seed; the tilted run streams step by step. The core (``multisample.tilt_run``) does the runs and
the records; this module draws them: the two texts with their verdicts, one chart of z and
z + eta·V per step, and the per-step table. The last pair of runs (JSON) lives in ``gr.State``
so a language switch redraws it.

Stop asks the running tilted chain to end after its current step, so the run still gets its
verdict and the tab's job slot is freed cleanly. A running event cannot see a newer ``gr.State``
value, so the request goes through ``StopRequests``: a process-wide set of opaque run ids (one
random id per click of Run, kept in the tab's state), never anything about the visitor."""

from __future__ import annotations

import html
import threading
import uuid
from types import SimpleNamespace
from typing import Any, Iterator

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from decoding_lab.experiments import tilt_run as TR
from decoding_lab.tasks.sets import get_task
from decoding_lab.stages import SettingsError
from decoding_lab.ui.common.i18n import norm_lang
from decoding_lab.ui.common.runtime import gpu
from decoding_lab.ui.common.sessions import SessionJobs, gated, session_state
from decoding_lab.ui.common.state import as_number, guarded, with_params

TASK = "addition"
DEFAULTS: dict[str, Any] = {"problem": 2, "eta": 10.0, "temperature": 0.0, "top_m": 4, "rollout_tokens": 16,
                            "seed": 0, "max_new_tokens": 24}
KEYS = tuple(DEFAULTS)                      # the controls, in the order the handler receives them

S = {
    "en": {
        "head": "### Verifier-tilted sampling (live)\n"
                "The pass@k-optimal sampler tilts the model towards text that will pass: logits' = (z + η·V) / T. "
                "Here V of a candidate token is 1 when a short greedy rollout from (text so far + candidate) "
                "gives the right sum, else 0; only the top-m candidates by z are scored. One click runs the plain "
                "chain (η = 0) and the tilted one with the same seed on the default model. Each tilted step costs "
                "one batched rollout: a teaching device, not a fast sampler. **η = 0** must give the plain tokens "
                "exactly; **small T with large η** gives verifier-greedy (the best-V candidate, ties by z).",
        "problem": "Addition problem", "eta": "η (tilt strength)", "temperature": "T (0 = greedy)",
        "top_m": "top-m candidates scored", "rollout_tokens": "rollout tokens", "seed": "seed",
        "max_new_tokens": "max new tokens", "run": "Run plain and tilted", "stop": "Stop",
        "try_eta0": "Try η = 0 (T = 0.7)", "try_vg": "Try T = 0.05, η = 20",
        "plain": "Plain (η = 0)", "tilted": "Tilted (η = {eta:g})", "settings": "T = {t}, seed {seed}",
        "greedy": "0 (greedy)", "answer": "answer {ans} — {verdict} (reference {ref})",
        "no_answer": "no answer found — {verdict} (reference {ref})", "right": "<b class='tilt-ok'>✓ right</b>",
        "wrong": "<b class='tilt-bad'>✗ wrong</b>", "waiting": "waiting…",
        "running": "Running the tilted chain: step {n}, {sec:.1f} s, {r} rollouts so far…",
        "running_plain": "Running the plain chain…",
        "same": "**Same tokens**: both runs picked the same {n} tokens.",
        "eta0": "**η = 0**: the tilt stage is a no-op, and with the same seed the two runs picked the same {n} "
                "tokens: plain temperature sampling, bit for bit.",
        "differ": "The runs part at **step {step}**: plain {a!r}, tilted {b!r}.",
        "prefix": "Both runs picked the same first {n} tokens; then one of them ended.",
        "vg": "Verifier-greedy: the tilted pick was the best-V candidate (ties by z) at **{k} of {n}** steps.",
        "cost": "Plain {p:.1f} s; tilted {t:.1f} s with {r} rollouts of up to {rt} tokens.",
        "why_stop": "The tilted run stopped early ({why}); its verdict is on the text so far.",
        "stopped": "Stop was pressed", "time limit": "it reached the time limit of {sec:g} s",
        "chart": "Candidates per step: z (open) and z + η·V (filled; green V = 1, red V = 0); ★ = picked",
        "step": "step", "logit": "logit (before ÷T)", "z": "z (model)", "zV": "z + η·V", "picked": "picked",
        "table": "Tilted run, per step", "c_step": "step", "c_token": "token", "c_z": "z", "c_V": "V",
        "c_zV": "z + ηV", "c_logit": "(z + ηV)/T", "c_p": "p", "c_pick": "picked", "c_roll": "rollout judged",
        "empty": "Click “Run plain and tilted” to see each step's candidates here",
    },
    "zh": {
        "head": "### 验证器倾斜采样（实时）\n"
                "pass@k 最优的采样器会把模型往“能通过”的文本倾斜：logits' = (z + η·V) / T。这里候选 token 的 V："
                "从（已生成文本 + 该候选）出发做一段短的贪心 rollout，若得到正确的和则为 1，否则为 0；"
                "只对按 z 排名前 m 的候选打分。点一次会在默认模型上用同一个种子先跑普通链（η = 0），再跑倾斜链。"
                "每个倾斜步都要做一次批量 rollout：这是教学演示，不是快速采样器。**η = 0** 必须与普通采样逐 token 相同；"
                "**小 T 加大 η** 就是验证器贪心（取 V 最高的候选，V 相同时按 z）。",
        "problem": "加法题", "eta": "η（倾斜强度）", "temperature": "T（0 = 贪心）", "top_m": "打分的候选数 m",
        "rollout_tokens": "rollout token 数", "seed": "种子", "max_new_tokens": "最多生成 token 数",
        "run": "运行普通与倾斜", "stop": "停止", "try_eta0": "试试 η = 0（T = 0.7）", "try_vg": "试试 T = 0.05，η = 20",
        "plain": "普通（η = 0）", "tilted": "倾斜（η = {eta:g}）", "settings": "T = {t}，种子 {seed}",
        "greedy": "0（贪心）", "answer": "答案 {ans} — {verdict}（参考 {ref}）",
        "no_answer": "没有找到答案 — {verdict}（参考 {ref}）", "right": "<b class='tilt-ok'>✓ 正确</b>",
        "wrong": "<b class='tilt-bad'>✗ 错误</b>",
        "waiting": "等待中…",
        "running": "正在运行倾斜链：第 {n} 步，{sec:.1f} 秒，已做 {r} 次 rollout…", "running_plain": "正在运行普通链…",
        "same": "**相同的 token**：两次运行选出了同样的 {n} 个 token。",
        "eta0": "**η = 0**：倾斜阶段什么也不做；同一个种子下两次运行选出了同样的 {n} 个 token：逐位就是普通温度采样。",
        "differ": "两次运行在**第 {step} 步**分开：普通 {a!r}，倾斜 {b!r}。",
        "prefix": "两次运行前 {n} 个 token 相同；之后其中一个结束了。",
        "vg": "验证器贪心：倾斜链选中的正是 V 最高的候选（V 相同按 z）的步数为 **{k} / {n}**。",
        "cost": "普通 {p:.1f} 秒；倾斜 {t:.1f} 秒，做了 {r} 次最多 {rt} 个 token 的 rollout。",
        "why_stop": "倾斜运行提前停止（{why}）；判定基于目前的文本。",
        "stopped": "点击了“停止”", "time limit": "达到了 {sec:g} 秒的时间上限",
        "chart": "每步的候选：z（空心）与 z + η·V（实心；绿 V = 1，红 V = 0）；★ = 选中",
        "step": "步", "logit": "logit（÷T 之前）", "z": "z（模型）", "zV": "z + η·V", "picked": "选中",
        "table": "倾斜运行，逐步", "c_step": "步", "c_token": "token", "c_z": "z", "c_V": "V", "c_zV": "z + ηV",
        "c_logit": "(z + ηV)/T", "c_p": "p", "c_pick": "选中", "c_roll": "被判定的 rollout",
        "empty": "点击“运行普通与倾斜”后，这里显示每一步的候选",
    },
}


def s(lang: str | None, key: str, **kw: Any) -> str:
    return S[norm_lang(lang)][key].format(**kw)


def problems() -> list[Any]:
    """All 81 addition problems, in the sweep's order (problem i is the sweep's problem i)."""
    return get_task(TASK).problems(81, seed=0)


def problem_choices() -> list[tuple[str, int]]:
    return [(f"{p.index}: {p.data['a']} + {p.data['b']}", p.index) for p in problems()]


def config_from(values: dict[str, Any]) -> TR.TiltConfig:
    """Control values -> a validated ``TiltConfig`` (raises ``SettingsError`` naming the bad value)."""
    def num(key: str, integer: bool = False) -> Any:
        v = as_number(key, values.get(key))
        return int(v) if integer and float(v).is_integer() else v
    return TR.TiltConfig(eta=num("eta"), temperature=num("temperature"), top_m=num("top_m", True),
                         rollout_tokens=num("rollout_tokens", True), seed=num("seed", True),
                         max_new_tokens=num("max_new_tokens", True))


# --------------------------------------------------------------------------- drawing
def _card(lang: str, title: str, run: TR.TiltRun | None, other: TR.TiltRun | None) -> str:
    if run is None:
        return f"<div class='tilt-card'><div class='tilt-title'>{html.escape(title)}</div><i>{s(lang, 'waiting')}</i></div>"
    cfg = run.config
    t = s(lang, "greedy") if cfg.temperature == 0 else f"{cfg.temperature:g}"
    toks = []
    for i, st in enumerate(run.steps):
        diff = other is not None and (i >= len(other.tokens) or other.tokens[i] != st.chosen_id)
        toks.append(f"<span class='tilt-tok{' tilt-diff' if diff else ''}' title='step {i}'>"
                    f"{html.escape(st.chosen_token).replace(chr(10), '↵')}</span>")
    verdict = ""
    if run.done:
        mark = s(lang, "right" if run.correct else "wrong")
        verdict = (s(lang, "no_answer", verdict=mark, ref=html.escape(run.reference)) if run.answer is None else
                   s(lang, "answer", ans=html.escape(run.answer), ref=html.escape(run.reference), verdict=mark))
    return (f"<div class='tilt-card'><div class='tilt-title'>{html.escape(title)} · {s(lang, 'settings', t=t, seed=cfg.seed)}"
            f"</div><div class='tilt-text'>{''.join(toks)}</div><div class='tilt-verdict'>{verdict}</div></div>")


def texts_html(lang: str, plain: TR.TiltRun | None, tilted: TR.TiltRun | None, eta: float) -> str:
    return (f"<div class='tilt-cards'>{_card(lang, s(lang, 'plain'), plain, None)}"
            f"{_card(lang, s(lang, 'tilted', eta=eta), tilted, plain)}</div>")


def summary(lang: str, plain: TR.TiltRun, tilted: TR.TiltRun) -> str:
    n = len(tilted.tokens)
    diff = TR.first_difference(plain, tilted)
    if diff is None:
        lines = [s(lang, "eta0" if tilted.config.eta == 0 else "same", n=n)]
    elif diff >= min(len(plain.steps), len(tilted.steps)):      # one run is a prefix of the other
        lines = [s(lang, "prefix", n=diff)]
    else:
        lines = [s(lang, "differ", step=diff, a=plain.steps[diff].chosen_token, b=tilted.steps[diff].chosen_token)]
    flags = [st.verifier_greedy for st in tilted.steps if st.verifier_greedy is not None]
    if flags:
        lines.append(s(lang, "vg", k=sum(flags), n=len(flags)))
    lines.append(s(lang, "cost", p=plain.seconds, t=tilted.seconds, r=tilted.rollouts, rt=tilted.config.rollout_tokens))
    if tilted.stop_reason in ("time limit", "stopped"):
        why = s(lang, tilted.stop_reason, sec=tilted.config.time_limit)
        lines.append(s(lang, "why_stop", why=why))
    return "\n\n".join(lines)


def steps_figure(lang: str, run: TR.TiltRun) -> go.Figure:
    xs, z, zv, color, hover, seg_x, seg_y, star_x, star_y = [], [], [], [], [], [], [], [], []
    for st in run.steps:
        for c in st.candidates:
            xs.append(st.step)
            z.append(c.z)
            zv.append(c.tilted)
            color.append("#9ca3af" if c.V is None else ("#16a34a" if c.V > 0 else "#dc2626"))
            hover.append(f"{c.token!r}  z={c.z:.2f}  V={'—' if c.V is None else f'{c.V:g}'}  p={c.p:.3f}"
                         + (f"<br>{html.escape(c.rollout[-80:])}" if c.rollout else ""))
            seg_x += [st.step, st.step, None]
            seg_y += [c.z, c.tilted, None]
            if c.token_id == st.chosen_id:
                star_x.append(st.step)
                star_y.append(c.tilted)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=seg_x, y=seg_y, mode="lines", line=dict(color="#d1d5db", width=1), hoverinfo="skip",
                             showlegend=False))
    fig.add_trace(go.Scatter(x=xs, y=z, mode="markers", name=s(lang, "z"), text=hover, hoverinfo="text",
                             marker=dict(symbol="circle-open", size=9, color="#6b7280")))
    fig.add_trace(go.Scatter(x=xs, y=zv, mode="markers", name=s(lang, "zV"), text=hover, hoverinfo="text",
                             marker=dict(size=9, color=color)))
    fig.add_trace(go.Scatter(x=star_x, y=star_y, mode="markers", name=s(lang, "picked"), hoverinfo="skip",
                             marker=dict(symbol="star-open", size=18, color="#111827", line=dict(width=2))))
    fig.update_layout(title=s(lang, "chart"), xaxis_title=s(lang, "step"), yaxis_title=s(lang, "logit"), height=360,
                      margin=dict(l=50, r=20, t=50, b=40), xaxis_dtick=1, legend=dict(orientation="h", y=-0.2))
    return fig


COLUMNS = ["c_step", "c_token", "c_z", "c_V", "c_zV", "c_logit", "c_p", "c_pick", "c_roll"]


def steps_table(lang: str, run: TR.TiltRun | None) -> pd.DataFrame:
    """One row per (step, candidate). Greedy (T = 0) has no "/T" column: it takes the argmax of z + ηV."""
    rows = [[st.step, c.token, round(c.z, 3), c.V, round(c.tilted, 3), None if c.logit is None else round(c.logit, 3),
             round(c.p, 4), "★" if c.token_id == st.chosen_id else "", c.rollout]
            for st in (run.steps if run else []) for c in st.candidates]
    df = pd.DataFrame(rows, columns=[s(lang, c) for c in COLUMNS])
    return df.drop(columns=[s(lang, "c_logit")]) if run is not None and run.config.temperature == 0 else df


def empty_figure(lang: str) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=s(lang, "empty"), height=160, margin=dict(l=50, r=20, t=50, b=20),
                      xaxis=dict(visible=False), yaxis=dict(visible=False), plot_bgcolor="rgba(0,0,0,0)")
    return fig


def render(lang: str, last: dict | None, status: str | None = None) -> dict[str, Any]:
    """Part name -> value for the last pair of runs (``last`` = {"plain": json, "tilted": json})."""
    last = last or {}
    plain = TR.TiltRun.from_json(last["plain"]) if last.get("plain") else None
    tilted = TR.TiltRun.from_json(last["tilted"]) if last.get("tilted") else None
    eta = tilted.config.eta if tilted else float(last.get("eta", DEFAULTS["eta"]))
    done = plain is not None and tilted is not None and tilted.done
    return {"texts": texts_html(lang, plain, tilted, eta) if plain else "",
            "summary": status if status is not None else (summary(lang, plain, tilted) if done else ""),
            "plot": steps_figure(lang, tilted) if tilted and tilted.steps else empty_figure(lang),
            "table": steps_table(lang, tilted)}


# --------------------------------------------------------------------------- stopping
class StopRequests:
    """Run ids that are running, and those asked to stop. Both sets hold only running runs."""

    def __init__(self) -> None:
        self._running: set[str] = set()
        self._stop: set[str] = set()
        self._lock = threading.Lock()

    def start(self) -> str:
        run_id = uuid.uuid4().hex
        with self._lock:
            self._running.add(run_id)
        return run_id

    def request(self, run_id: str | None) -> None:
        with self._lock:
            if run_id in self._running:
                self._stop.add(run_id)

    def asked(self, run_id: str) -> bool:
        return run_id in self._stop

    def end(self, run_id: str) -> None:
        with self._lock:
            self._running.discard(run_id)
            self._stop.discard(run_id)


STOPS = StopRequests()


# --------------------------------------------------------------------------- components
def build(lang: str = "en") -> SimpleNamespace:
    ui = SimpleNamespace()
    with gr.Column(elem_id="ms-tilt"):
        ui.head = gr.Markdown(s(lang, "head"), elem_id="ms-tilt-intro", latex_delimiters=[])
        with gr.Row():
            ui.problem = gr.Dropdown(problem_choices(), value=DEFAULTS["problem"], label=s(lang, "problem"),
                                     elem_id="ms-tilt-problem", scale=2)
            ui.eta = gr.Number(DEFAULTS["eta"], label=s(lang, "eta"), elem_id="ms-tilt-eta", scale=1)
            ui.temperature = gr.Slider(0, TR.MAX_T, value=DEFAULTS["temperature"], step=0.05,
                                       label=s(lang, "temperature"), elem_id="ms-tilt-T", scale=2)
            ui.seed = gr.Number(DEFAULTS["seed"], precision=0, label=s(lang, "seed"), elem_id="ms-tilt-seed", scale=1)
        with gr.Row():
            ui.top_m = gr.Slider(1, TR.MAX_TOP_M, value=DEFAULTS["top_m"], step=1, label=s(lang, "top_m"),
                                 elem_id="ms-tilt-top-m")
            ui.rollout_tokens = gr.Slider(1, TR.MAX_ROLLOUT, value=DEFAULTS["rollout_tokens"], step=1,
                                          label=s(lang, "rollout_tokens"), elem_id="ms-tilt-rollout")
            ui.max_new_tokens = gr.Slider(1, TR.MAX_NEW_TOKENS, value=DEFAULTS["max_new_tokens"], step=1,
                                          label=s(lang, "max_new_tokens"), elem_id="ms-tilt-max-new")
        with gr.Row():
            ui.run = gr.Button(s(lang, "run"), variant="primary", elem_id="ms-tilt-run")
            ui.stop = gr.Button(s(lang, "stop"), variant="stop", elem_id="ms-tilt-stop")
            ui.try_eta0 = gr.Button(s(lang, "try_eta0"), size="sm", elem_id="ms-tilt-try-eta0")
            ui.try_vg = gr.Button(s(lang, "try_vg"), size="sm", elem_id="ms-tilt-try-vg")
        ui.texts = gr.HTML("", elem_id="ms-tilt-texts")
        ui.summary = gr.Markdown("", elem_id="ms-tilt-summary")
        ui.plot = gr.Plot(empty_figure(lang), elem_id="ms-tilt-plot", show_label=False)
        ui.table = gr.Dataframe(steps_table(lang, None), label=s(lang, "table"), elem_id="ms-tilt-table",
                                interactive=False, wrap=True, max_height=420)
    ui.last = session_state()          # {"plain": run JSON, "tilted": run JSON, "eta": η} of the last click
    ui.run_id = gr.State(None)         # the id of this tab's latest run, for Stop
    ui.controls = {k: getattr(ui, k) for k in KEYS}
    return ui


def _views(ui: SimpleNamespace, lang: str, parts: dict[str, Any]) -> dict:
    return {ui.texts: parts["texts"], ui.summary: parts["summary"], ui.plot: parts["plot"],
            ui.table: gr.update(value=parts["table"], label=s(lang, "table"))}


def wire(ui: SimpleNamespace, lang_state: Any, jobs: SessionJobs | None = None) -> None:
    @guarded
    @gpu
    def on_run(lang: str, *values: Any) -> Iterator[dict]:
        from decoding_lab.models import DEFAULT_MODEL, get_model
        vals = dict(zip(KEYS, values))
        config = config_from(vals)
        index = vals["problem"]
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < 81:
            raise SettingsError(f"problem must be one of 0..80, got {index!r}")
        task, problem = get_task(TASK), problems()[index]
        run_id = STOPS.start()
        try:
            yield {**_views(ui, lang, render(lang, {"eta": config.eta}, s(lang, "running_plain"))), ui.last: None,
                   ui.run_id: run_id}
            lm = get_model(DEFAULT_MODEL)
            plain = TR.run_tilted(lm, task, problem, config.plain)
            last: dict[str, Any] = {"plain": plain.to_json(), "tilted": None, "eta": config.eta}
            for run in TR.iter_tilted(lm, task, problem, config, should_stop=lambda: STOPS.asked(run_id)):
                last = {**last, "tilted": run.to_json()}
                status = None if run.done else s(lang, "running", n=len(run.steps), sec=run.seconds, r=run.rollouts)
                yield {**_views(ui, lang, render(lang, last, status)), ui.last: last}
        finally:
            STOPS.end(run_id)

    with_params(on_run, ["lang", *KEYS])
    outs = [ui.texts, ui.summary, ui.plot, ui.table, ui.last, ui.run_id]
    ui.run.click(gated(on_run, jobs), [lang_state, *ui.controls.values()], outs, api_name="tilt_run",
                 concurrency_id="model", show_progress="minimal")
    # Stop runs at once (its own slot): it only marks the run; the run ends after its current step.
    ui.stop.click(STOPS.request, [ui.run_id], None, api_visibility="private", concurrency_limit=None)
    ui.try_eta0.click(lambda: {ui.eta: 0.0, ui.temperature: 0.7}, None, [ui.eta, ui.temperature],
                      api_visibility="private")
    ui.try_vg.click(lambda: {ui.eta: 20.0, ui.temperature: 0.05}, None, [ui.eta, ui.temperature],
                    api_visibility="private")


def rerender(ui: SimpleNamespace, lang: str, last: dict | None) -> dict:
    """Relabel every control and redraw the last runs in ``lang``."""
    out = _views(ui, lang, render(lang, last))
    out[ui.head] = s(lang, "head")
    for key, comp in ui.controls.items():
        out[comp] = gr.update(label=s(lang, key))
    for key in ("run", "stop", "try_eta0", "try_vg"):
        out[getattr(ui, key)] = gr.update(value=s(lang, key))
    return out


def fill(ui: SimpleNamespace, values: dict[str, Any]) -> dict:
    """Control updates for a lesson preset (unknown keys are refused by name)."""
    unknown = set(values) - set(KEYS)
    if unknown:
        raise SettingsError(f"unknown tilt setting(s): {', '.join(sorted(unknown))}")
    config_from({**DEFAULTS, **values})                   # validate before anything changes
    return {ui.controls[k]: v for k, v in values.items()}
