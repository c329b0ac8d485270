"""The page: a header, one ``gr.Tab`` per tab package, and the three things that cross tabs.

Every tab is built the same way (``build(ctx) -> TabUI``, see ``common.tab``), so the page is
a loop. What it wires itself:

* the language switch: static labels through ``Labels``, then each tab's ``relabel``;
* a lesson's "Load this experiment": find the tab the lesson names, call its ``fill``;
* a share link: the query string restores the tab, a lesson's screen and the Explorer's run,
  its steps replayed (``common.urlstate``); "Copy link" copies it.
"""

from __future__ import annotations

import json

from pathlib import Path
from urllib.parse import urlencode
from typing import Any

import gradio as gr

from decoding_lab.ui import beam, compare, determinism, explorer, grammar, lessons, multisample
from decoding_lab.ui.common import tablink, urlstate
from decoding_lab.ui.common.errors import warn
from decoding_lab.ui.common.progress import narrow_progress
from decoding_lab.ui.common.i18n import LANGS, norm_lang, t
from decoding_lab.ui.common.sessions import SessionJobs
from decoding_lab.ui.common.controls import group_keys
from decoding_lab.ui.common.state import DEFAULTS, Labels, merge_updates
from decoding_lab.ui.common.tab import TabContext, TabUI
from decoding_lab.ui.common.events import model_event
from decoding_lab.ui.common.scripts import script
from decoding_lab.ui.explorer.parts import ExplorerParts
from decoding_lab.ui.lessons import follow
from decoding_lab.ui.lessons.views import clamp_screen
from decoding_lab.ui.lessons.parts import LessonsParts

ASSETS = Path(__file__).resolve().parents[2] / "assets"

#: Tab id -> its package, in the order the page shows them.
TABS: tuple[tuple[str, Any], ...] = (("explorer", explorer), ("lessons", lessons), ("compare", compare),
                                     ("beam", beam), ("grammar", grammar), ("multisample", multisample),
                                     ("determinism", determinism))

#: Gradio's own interface words the page shows, in Chinese (``assets/js/page.js`` writes them over).
GRADIO_ZH = {"Use via API": "通过 API 使用", "Built with Gradio": "使用 Gradio 构建", "Settings": "设置",
             "Runs": "运行记录", "Copy table data": "复制表格数据", "Fullscreen": "全屏", "Exit fullscreen": "退出全屏",
             "Download": "下载", "Copy": "复制", "Copied": "已复制", "Copied!": "已复制", "Clear": "清除",
             "Reset": "重置", "Share": "分享", "Search": "搜索",
             "Table actions": "表格操作", "Open cell menu": "打开单元格菜单", "File upload": "上传文件",
             "Info": "信息", "Warning": "注意", "Error": "错误"}

#: Keys the page writes beside the Explorer's run: the tab, the lesson and its screen, and each
#: tab's setup under the tab's id (``common.tablink``).
PAGE_KEYS = (*urlstate.PAGE_KEYS, *(name for name, _ in TABS if name not in ("explorer", "lessons")))


def _zh_titles() -> dict[str, str]:
    """Gradio titles each checkbox of a group with its value (the core's English name of a
    Temperature-0 path): in Chinese the page shows the path's Chinese name there too."""
    from decoding_lab.determinism import LOCAL_VARIANTS, SERVED_VARIANTS
    from decoding_lab.ui.determinism.strings import tr as det
    return {name: det("zh", name) for name in (*LOCAL_VARIANTS, *SERVED_VARIANTS) if det("zh", name) != name}


#: A visitor who asked their system for less motion (``prefers-reduced-motion``) gets no animation:
#: gradio's spinners and pulses stop at once, and scrolling into view jumps. The timer beside a
#: running event still counts, so a running event still says so. Transitions (short fades and colour
#: changes) stay as gradio has them: made instant, they cost the browser more, not less (a walk
#: through the lessons' presets: 38.1 and 40.9 s of machine CPU against 28.6 and 34.7 s). A running
#: event's spinner otherwise draws a frame 60 times a second.
REDUCED_MOTION = """@media (prefers-reduced-motion: reduce) {
  *, *::before, *::after { animation-duration: 0.01ms !important; animation-iteration-count: 1 !important;
    scroll-behavior: auto !important; }
}"""


def head() -> str:
    """The page head: the settings of ``assets/js/page.js`` as JSON, then the script itself, then
    ``assets/js/plot_fit.js`` (charts in projection-size type in teacher mode, every token label on a phone)
    and ``assets/js/refusal_view.js`` (a control's refusal out of the window is scrolled into view),
    and ``REDUCED_MOTION`` (in the head, where gradio does not scope it to its container as it
    does ``assets/app.css``: a toast or a loader outside the container follows it too)."""
    config = {"pageKeys": list(PAGE_KEYS), "gradioZh": {**GRADIO_ZH, **_zh_titles()}}
    # "</" cannot end the script early: JSON allows "<\/" for "</"
    data = json.dumps(config, ensure_ascii=False).replace("</", "<\\/")
    return (f"<script>window.DL_CONFIG = {data};</script>\n<script>\n{script('page')}</script>\n"
            f"<script>\n{script('plot_fit')}</script>\n<script>\n{script('refusal_view')}</script>\n"
            f"<style>{REDUCED_MOTION}</style>\n")


def launch_kwargs() -> dict[str, Any]:
    """Gradio 6 takes css/theme/head in ``launch()``, not in ``gr.Blocks``; the number of tabs
    whose state is kept comes from ``DECODING_LAB_MAX_SESSIONS``."""
    from decoding_lab import limits
    css_file = ASSETS / "app.css"
    return {"css": css_file.read_text(encoding="utf-8") if css_file.is_file() else "",
            "theme": gr.themes.Soft(primary_hue="blue", secondary_hue="orange"), "head": head(),
            "state_session_capacity": limits.current().max_sessions,
            # gradio runs at most ``max_threads`` events at once (40 by default); a class's live views
            # each hold one for as long as they are open, so they get workers of their own
            "max_threads": 40 + limits.current().room_followers,
            # the page has no upload control, but gradio always serves its upload route: cap it
            "max_file_size": MAX_UPLOAD,
            # gradio 6 otherwise keeps a "run history" in each visitor's browser storage: the inputs and
            # outputs of the last 100 events (every chart's figure among them), parsed and written back
            # whole on each event of the page, and left behind on a shared classroom computer. The
            # page's own link (``common.urlstate``) is how a run is kept and shared here.
            "run_history": False}


#: gradio's upload route accepts at most this (the app takes no uploads; it accepted 150 MB)
MAX_UPLOAD = "64kb"
#: gradio's file cache (exports offered for download): checked every hour, files older than an hour removed
DELETE_CACHE = (3600, 3600)


def _unique(components: list[Any]) -> list[Any]:
    seen: set[int] = set()
    out = []
    for c in components:
        if id(c) not in seen:
            seen.add(id(c))
            out.append(c)
    return out


def build_demo(lang: str = "en") -> gr.Blocks:
    lang = norm_lang(lang)
    L = Labels()
    jobs = SessionJobs()  # model jobs running per tab (DECODING_LAB_SESSION_JOBS at most)
    with gr.Blocks(title="Decoding Lab", fill_width=True, delete_cache=DELETE_CACHE) as demo:
        lang_state = gr.State(lang)
        with gr.Row(elem_id="header"):
            with gr.Column(scale=5):
                L(gr.Markdown(t(lang, "title"), elem_id="title"), "title", "value")
                L(gr.Markdown(t(lang, "subtitle"), elem_id="subtitle"), "subtitle", "value")
            with gr.Column(scale=1, min_width=200):
                lang_radio = L(gr.Radio([(v, k) for k, v in LANGS.items()], value=lang, label=t(lang, "language"),
                                        elem_id="lang-radio"), "language")
                # copies the address bar: the tab, the lesson and screen, the Explorer's run (assets/js/page.js)
                L(gr.Button(t(lang, "copy_link"), size="sm", elem_id="copy-link-btn"), "copy_link", "value")
        ctx = TabContext(lang, lang_state, jobs, L, page=demo)
        follow_parts = follow.build(lang)   # a lesson's strip, shown above the tab that holds its setup
        tabs: dict[str, TabUI] = {}
        tab_of: dict[str, Any] = {}   # the gr.Tab of each name
        with gr.Tabs(elem_id="tabs", selected="explorer") as tabs_comp:
            ctx.tabs = tabs_comp  # Compare's "send to the Explorer" opens the Explorer
            for name, module in TABS:
                with gr.Tab(t(lang, f"tab_{name}"), id=name, elem_id=f"tab-{name}") as tab:
                    L(tab, f"tab_{name}")
                    tabs[name] = module.build(ctx)
                tab_of[name] = tab
                # the tab goes into the address bar (a shared link opens it), and plots get their size
                tab.select(None, None, None, js=f"() => window.dlOnTab({json.dumps(name)})")
        # what a tab keeps in the browser sits outside the tabs, so it is read as the page opens
        for state in getattr(tabs["lessons"].parts, "page_states", None) or ():
            state.render()
        _wire_language(tabs, L, lang_state, lang_radio)
        _wire_lesson_loading(tabs, lang_state, tabs_comp, jobs, follow_parts, lang_radio, tab_of["lessons"])
        _wire_share_link(demo, tabs, tabs_comp, lang_radio)
        for name, tab in tabs.items():   # each tab's setup follows the visitor into the address bar
            if tab.link:
                tablink.wire_writer(name, tab.link)
        # the wide and progress-hidden events keep their loading status on one hidden component (common.progress)
        narrow_progress(demo, gr.Markdown(visible=False, elem_id="progress-sink"))
    demo.launch_kwargs = launch_kwargs()  # type: ignore[attr-defined]
    return demo


def _wire_language(tabs: dict[str, TabUI], L: Labels, lang_state: Any, lang_radio: Any) -> None:
    """One event relabels the page and redraws every tab from its state; tabs whose state is a
    ``gr.BrowserState`` (kept out of the public API) follow in a private event."""
    public = [tab for tab in tabs.values() if tab.relabel is not None and not tab.relabel_private]
    inputs = [s for tab in public for s in tab.states]
    outputs = _unique([lang_state, *L.components(), *(v for tab in public for v in tab.views)])

    def on_language(new_lang: str, *states: Any) -> dict:
        new_lang = norm_lang(new_lang)
        out = {lang_state: new_lang, **L.updates(new_lang)}
        i = 0
        for tab in public:
            n = len(tab.states)
            out = merge_updates(out, tab.relabel(new_lang, *states[i:i + n]))
            i += n
        out[lang_radio] = gr.update(label=t(new_lang, "language"))  # the radio keeps its value
        return out

    ev = lang_radio.change(on_language, [lang_radio, *inputs], outputs, api_name="set_language")
    for tab in tabs.values():
        if tab.relabel is not None and tab.relabel_private:
            redrawn = ev.then(tab.relabel, [lang_state, *tab.states], tab.views, api_visibility="private")
            if tab.relabelled is not None:
                tab.relabelled(redrawn)


def _wire_lesson_loading(tabs: dict[str, TabUI], lang_state: Any, tabs_comp: Any, jobs: SessionJobs,
                         strip: follow.FollowParts, lang_radio: Any, lessons_tab: Any) -> None:
    """"Open this lesson's setup": the lesson names a tab; that tab's ``fill`` sets it up, the page
    switches to it, and the lesson's strip (``lessons.follow``) shows above it with the screen's
    pointers and a way back."""
    les = tabs["lessons"].parts
    if not isinstance(les, LessonsParts):  # no lessons could be read (``LessonsUnavailable``): nothing to load
        return
    strip_views = [strip.row, strip.text, strip.back]
    # the strip comes last, so the API's answer keeps the places it had before the strip
    outputs = _unique([tabs_comp, les.loaded, *(c for tab in tabs.values() for c in tab.fill_outputs),
                       strip.shown, *strip_views])

    def on_load(v: dict) -> dict:
        lang = v["lang"]
        lesson = les.lessons[int(v["number"])]
        preset = dict(lesson.preset)
        tab_id = preset.get("tab", "explorer")
        tab = tabs.get(tab_id)
        if tab is None or tab.fill is None:
            warn(t(lang, "tab_missing", tab=tab_id), lang)
            return {les.loaded: gr.update()}
        shown = (lesson.number, clamp_screen(lesson, v["screen"]))
        return {**tab.fill(preset, lang), les.loaded: les.loaded_message(lang, lesson, tab_id),
                tabs_comp: gr.Tabs(selected=tab_id), strip.shown: shown,
                **follow.views(strip, lang, les.lessons, shown, v["runs"])}

    les.load.click(model_event(on_load, ["lang", "number", "screen", "runs"], jobs),
                   [lang_state, les.current, les.screen, les.runs], outputs,
                   api_name="lesson_load", concurrency_id="model").then(
        None, None, None, js=follow.SCROLL_TO_STRIP_JS)

    def back() -> dict:
        return {tabs_comp: gr.Tabs(selected="lessons"), strip.row: gr.update(visible=False), strip.shown: None}

    strip.back.click(back, None, [tabs_comp, strip.row, strip.shown], api_visibility="private", queue=False)
    # going back to the Lessons tab by its own header hides the strip too
    lessons_tab.select(lambda: (gr.update(visible=False), None), None, [strip.row, strip.shown],
                       api_visibility="private", queue=False)
    lang_radio.change(lambda lang, shown, runs: follow.views(strip, lang, les.lessons, shown, runs),
                      [lang_radio, strip.shown, les.runs], strip_views, api_visibility="private", queue=False)


def _wire_share_link(demo: gr.Blocks, tabs: dict[str, TabUI], tabs_comp: Any, lang_radio: Any) -> None:
    """A link opens what it was copied from: ``?tab=lessons&lesson=5&screen=2`` a lesson's
    screen; ``?model=…&prompt=…&T=0.7&top_p=0.9&steps=12&force=3:1234`` the Explorer's run,
    replayed (``explorer.handlers.on_replay``). A bad value is skipped with a note."""
    import secrets
    ex: ExplorerParts = tabs["explorer"].parts
    les = tabs["lessons"].parts
    lesson_link = les.link_in if isinstance(les, LessonsParts) else None
    room_link = les.room.student.link_in if isinstance(les, LessonsParts) and les.room is not None else None
    ctl = {"model": ex.model, "prompt": ex.prompt, "chat": ex.chat, "top_n": ex.top_n, **ex.settings}

    def on_load(request: gr.Request):
        params = dict(request.query_params) if request is not None else {}
        values, notes = urlstate.decode(params)
        values_lang = values.get("lang", "en")
        out: dict[Any, Any] = {ex.hub: gr.update()}  # never empty: gradio reads {} as one value
        if values.get("model"):
            from decoding_lab.models import BUNDLED
            if values["model"].lower() in BUNDLED:
                out[ex.model] = values["model"].lower()
            elif values["model"] in explorer.model_names():  # an allow-listed Hub model
                out[ex.model] = values["model"]
            else:
                out[ex.hub] = values["model"]
        for key, comp in ctl.items():
            if key != "model" and key in values:
                out[comp] = values[key]
        # a setting the link turns on inside a folded box opens the box: its control is drawn, and a
        # refusal beside it (an engine-only stage under another order, say) can be seen
        for group, box in ex.boxes.items():
            if any(key in values and values[key] != DEFAULTS[key] for key in group_keys(group)):
                out[box] = gr.Accordion(open=True)
        tab = str(params.get("tab") or "")
        if tab in tabs:
            out[tabs_comp] = gr.Tabs(selected=tab)
        elif tab:
            notes.append(f"tab={tab[:20]!r} is not a tab of this page")
        if params.get("steps"):   # the Explorer replays the run once its controls hold the link's values
            run = {k: params[k] for k in ("steps", "force") if params.get(k)}
            out[ex.replay] = f"{urlencode(run)}&nonce={secrets.token_hex(4)}"
        if room_link is not None and params.get("room"):   # a class's join link: the Lessons tab joins it
            out[room_link] = f"{str(params['room'])[:40]}:{secrets.token_hex(4)}"
            out[tabs_comp] = gr.Tabs(selected="lessons")
        if lesson_link is not None:   # always set: it is also what restores this browser's progress
            out[lesson_link] = f"{params.get('lesson', '')}:{params.get('screen', '')}:{secrets.token_hex(4)}"
        for name, tab in tabs.items():   # each tab's setup, ``?compare={…}``
            if tab.link and params.get(name):
                values, tab_notes = tablink.restore(name, tab.link, str(params[name]))
                notes += tab_notes
                out.update({tab.link[k]: v for k, v in values.items()})
                if tab.link_restore is not None and values:
                    out.update(tab.link_restore(values, values_lang))
        for note in notes:
            warn(note, values_lang)
        if values.get("lang") and values["lang"] != "en":
            out[lang_radio] = values["lang"]  # its change event relabels the page
        if teacher is not None and urlstate.teacher_mode(params):
            out[teacher] = True               # its change event sets the large type
        return out

    teacher = les.teacher if isinstance(les, LessonsParts) else None
    outputs = _unique([ex.hub, lang_radio, tabs_comp, ex.replay, *ex.boxes.values(), *([lesson_link] if lesson_link is not None else []),
                       *([room_link] if room_link is not None else []),
                       *([teacher] if teacher is not None else []),
                       *ctl.values(), *(c for tab in tabs.values() for c in (*tab.link.values(),
                                                                              *tab.link_restore_outputs))])
    # Gradio selects the first tab as the page starts, before this event reads the address bar:
    # the tab's select handler must not rewrite the link until it has been read.
    demo.load(on_load, None, outputs, api_name="restore_from_url").then(
        None, None, None, js="() => { window.dlLinkRead = true; return []; }")
