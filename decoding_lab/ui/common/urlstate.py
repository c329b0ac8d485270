"""Share a setup through the page's query string.

``encode`` turns the Explorer's inputs into ``?model=…&prompt=…&T=0.7&top_p=0.9&order=vllm``;
``decode`` reads ``request.query_params`` back into control values. Unknown keys are
ignored and a bad value is skipped with a note (the rest is still restored), so an old or
hand-edited link never breaks the page. A value goes through the same check as a typed one
(the parameter table's ``check``): ``?top_p=7`` is refused by name and the box keeps its
default, never shows a 7 that the next Step would refuse.
"""

from __future__ import annotations

import math
from typing import Any, Mapping
from urllib.parse import urlencode

from decoding_lab.errors import SettingsError
from decoding_lab.params import PARAMS
from decoding_lab.settings import PRESET_ORDERS
from decoding_lab.ui.common.i18n import Namespace, register
from decoding_lab.ui.common.state import CUSTOM, DEFAULTS, INT_KEYS

#: What a link's reader says about a part it skipped, in the language the link opens in.
register("link", {
    "bad_steps": "steps={got} is not a whole number of steps; nothing replayed",
    "max_steps": "steps={steps}: this deployment replays at most {max} (DECODING_LAB_MAX_NEW_TOKENS)",
    "bad_force": "force={got} is not step:token; skipped",
    "bad_lang": "lang={got} is not a language of this page (en, zh); showing English",
    "nan": "{name}={got} is not a number; kept the default",
    "refused": "{name}={got}: {why}; kept the default",
    "n_nan": "n={got} is not a number",
    "n_range": "n={got}: tokens shown must be a whole number from {lo} to {hi}; kept the default",
    "bad_order": "order={got} not used, kept the default order: {why}",
}, {
    "bad_steps": "steps={got} 不是整数步数；没有重放",
    "max_steps": "steps={steps}：这个部署最多重放 {max} 步（DECODING_LAB_MAX_NEW_TOKENS）",
    "bad_force": "force={got} 不是“步:词元”的形式；已跳过",
    "bad_lang": "lang={got} 不是这个页面的语言（en、zh）；显示英文",
    "nan": "{name}={got} 不是数字；保留默认值",
    "refused": "{name}={got}：{why}；保留默认值",
    "n_nan": "n={got} 不是数字",
    "n_range": "n={got}：显示的词元数必须是 {lo} 到 {hi} 之间的整数；保留默认值",
    "bad_order": "order={got} 未采用，保留默认顺序：{why}",
})
_note = Namespace("link")


def _why(exc: BaseException, lang: str) -> str:
    from decoding_lab.ui.common.errors import localised
    return localised(exc, lang)

#: control key -> short URL key, one per row of the core's parameter table
URL_KEYS: dict[str, str] = {k: p.url_key for k, p in PARAMS.items()}
INTS = INT_KEYS
MAX_PROMPT = 4000
MAX_TEXT_VALUE = 400   # a logit-bias list in a link
#: Opening a link replays at most this many of its steps by itself; the rest waits for the visitor
#: to ask (a posted link with ``steps=1024`` would otherwise start that whole job for everyone who
#: opens it).
LINK_REPLAY_STEPS = 32
TOP_N_RANGE = (1, 200)  # the Explorer's "tokens shown" (``explorer.request.TOP_N_RANGE``)


def _url_value(v: Any) -> Any:
    if isinstance(v, bool):
        return "1" if v else "0"
    return f"{v:g}" if isinstance(v, float) else v


def encode(model: str, prompt: str, chat: str, values: Mapping[str, Any], top_n: Any = None, lang: str = "en") -> str:
    """Only values that differ from the defaults go into the link (short links)."""
    q: dict[str, Any] = {"model": model, "prompt": prompt[:MAX_PROMPT], "chat": chat}
    for key, short in URL_KEYS.items():
        v = values.get(key)
        if v is not None and v != "" and v != DEFAULTS[key]:
            q[short] = _url_value(v)
    preset = values.get("order_preset") or "transformers"
    order = values.get("custom_order") if preset == CUSTOM else preset
    if order and order != "transformers":
        q["order"] = order
    if top_n not in (None, "", 20):
        q["n"] = int(top_n)
    if lang and lang != "en":
        q["lang"] = lang
    return urlencode(q)


def controls_writer_js(names: list[str]) -> str:
    """The browser half of ``encode``: a function of the Explorer's control values (in ``names``'
    order: model, hub_id, prompt, chat, the settings, top_n) that writes the same query into the
    address bar as they change, before any Step (a Step's own link adds its steps and forced
    tokens, ``explorer.views.share_query``). It waits until the page has read its link."""
    import json
    spec = {"names": names, "short": URL_KEYS, "defaults": DEFAULTS, "custom": CUSTOM, "max": MAX_PROMPT}
    return ("(...v) => { if (!window.dlLinkRead || !window.dlSetRun) return [];"
            f" const S = {json.dumps(spec)}, c = {{}}; S.names.forEach(function (n, i) {{ c[n] = v[i]; }});"
            " const q = new URLSearchParams();"
            " q.set('model', (c.hub_id || '').trim() || c.model || ''); q.set('prompt', String(c.prompt || '').slice(0, S.max));"
            " q.set('chat', c.chat || 'chat');"
            " Object.keys(S.short).forEach(function (k) { const x = c[k], d = S.defaults[k];"
            "   if (x === null || x === undefined || x === '' || x === d || (typeof d === 'number' && Number(x) === d)) return;"
            "   q.set(S.short[k], typeof x === 'boolean' ? (x ? '1' : '0') : String(x)); });"
            " const order = c.order_preset === S.custom ? c.custom_order : c.order_preset;"
            " if (order && order !== 'transformers') q.set('order', order);"
            " if (c.top_n !== null && c.top_n !== undefined && c.top_n !== '' && Number(c.top_n) !== 20) q.set('n', String(c.top_n));"
            " if (document.querySelector('#lang-radio input[value=\"zh\"]:checked')) q.set('lang', 'zh');"
            " window.dlSetRun(q.toString()); return []; }")


#: Keys the page (not the Explorer) puts in a link: the tab, the lesson and its screen, the language
#: (``lang=zh``), teacher mode (``teacher=1``) and a class joined by its link (``room=K7M2-9QXP``).
PAGE_KEYS = ("tab", "lesson", "screen", "lang", "teacher", "room")


def teacher_mode(params: Mapping[str, str]) -> bool:
    """Does a link ask for teacher mode (``teacher=1``)?

    >>> teacher_mode({"teacher": "1"}), teacher_mode({"teacher": "no"}), teacher_mode({})
    (True, False, False)
    """
    return str(params.get("teacher", "")).strip().lower() in ("1", "true", "yes", "on")


def encode_run(steps: int, forced: list[tuple[int, int]]) -> str:
    """The steps a run has taken and the tokens forced on the way: ``steps=12&force=3:1234,7:99``
    (empty for a run that has not started). Opening the link replays them (``decode_run``)."""
    if steps <= 0:
        return ""
    q: dict[str, Any] = {"steps": int(steps)}
    if forced:
        q["force"] = ",".join(f"{int(step)}:{int(tok)}" for step, tok in forced)
    return urlencode(q)


def decode_run(params: Mapping[str, str], max_steps: int, lang: str = "en") -> tuple[int, dict[int, int], list[str]]:
    """(steps, {step: forced token id}, notes in ``lang``) from a link; a bad part is skipped with a
    note, and a run longer than the deployment allows is cut to ``max_steps`` (said in a note)."""
    notes: list[str] = []
    steps = 0
    if params.get("steps"):
        n = _finite(params["steps"])
        if n is None or n < 0 or not n.is_integer():
            notes.append(_note(lang, "bad_steps", got=repr(params["steps"])))
        else:
            steps = int(n)
            if steps > max_steps:
                notes.append(_note(lang, "max_steps", steps=steps, max=max_steps))
                steps = max_steps
    forced: dict[int, int] = {}
    for part in str(params.get("force") or "").split(","):
        if not part.strip():
            continue
        step, _, tok = part.partition(":")
        if not (step.strip().isdigit() and tok.strip().isdigit()):
            notes.append(_note(lang, "bad_force", got=repr(part[:40])))
            continue
        if int(step) < steps:
            forced[int(step)] = int(tok)
    return steps, forced, notes


def _finite(text: Any) -> float | None:
    """A finite number from a URL value, else None (a shared link may say ``T=nan`` or ``n=1e999``)."""
    try:
        num = float(text)
    except (TypeError, ValueError):
        return None
    return num if math.isfinite(num) else None


def link_lang(params: Mapping[str, str]) -> str:
    """The language a link opens in (``lang=zh…`` Chinese, anything else English)."""
    return "zh" if str(params.get("lang") or "").strip().lower().startswith("zh") else "en"


def decode(params: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Query parameters -> ({control key: value}, [notes about skipped values, in the link's language]).

    Keys in the result: model, prompt, chat, lang, top_n and every settings key present."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    lang = link_lang(params)
    for key in ("model", "prompt"):
        if params.get(key):
            out[key] = str(params[key])[:MAX_PROMPT]
    if params.get("chat") in ("chat", "raw"):
        out["chat"] = params["chat"]
    if params.get("lang"):
        lang = str(params["lang"]).strip().lower()
        out["lang"] = "zh" if lang.startswith("zh") else "en"
        if not (lang.startswith("zh") or lang.startswith("en")):
            notes.append(_note(lang, "bad_lang", got=repr(str(params["lang"])[:20])))
    for key, short in URL_KEYS.items():
        if short not in params:
            continue
        kind = PARAMS[key].kind
        if kind == "bool":
            out[key] = str(params[short]).strip().lower() in ("1", "true", "yes", "on")
            continue
        if kind == "bias":
            out[key] = str(params[short])[:MAX_TEXT_VALUE]
            continue
        num = _finite(params[short])
        if num is None:
            notes.append(_note(lang, "nan", name=short, got=repr(params[short])))
            continue
        value = int(num) if key in INTS and num.is_integer() else num
        try:
            out[key] = PARAMS[key].check(value)
        except SettingsError as e:
            notes.append(_note(lang, "refused", name=short, got=repr(params[short]), why=_why(e, lang)))
    if params.get("n"):
        n = _finite(params["n"])
        if n is None:
            notes.append(_note(lang, "n_nan", got=repr(params["n"])))
        elif not (TOP_N_RANGE[0] <= n <= TOP_N_RANGE[1] and n.is_integer()):
            notes.append(_note(lang, "n_range", got=repr(params["n"]), lo=TOP_N_RANGE[0], hi=TOP_N_RANGE[1]))
        else:
            out["top_n"] = int(n)
    order = (params.get("order") or "").strip()
    if order:
        if order.lower() in PRESET_ORDERS:
            out["order_preset"] = order.lower()
            out["custom_order"] = ",".join(PRESET_ORDERS[order.lower()])
        else:
            from decoding_lab.settings import parse_order
            try:
                parse_order(order)
            except SettingsError as e:   # the next Step would refuse it: say so now, keep the default
                notes.append(_note(lang, "bad_order", got=repr(order[:60]), why=_why(e, lang)))
            else:
                out["order_preset"] = CUSTOM
                out["custom_order"] = order
    return out, notes
