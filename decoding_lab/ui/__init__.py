"""The Gradio app: ``build_demo()`` only assembles the tabs and wires the page-level
events (language switch, restoring a shared URL). Each tab is a module:

* ``explorer`` / ``explorer_handlers`` / ``explorer_views``: step a live model token by token
* ``compare``: 2–4 decoding settings side by side
* ``beam``: the beam tree and the length penalty

``plots`` draws figures from the core's records, ``i18n`` holds the English and Chinese
strings, ``state`` the per-session state, ``sessions`` the per-tab bounds (state expiry, one
model job per tab, the queue), ``urlstate`` the query-string sharing and ``export`` the
downloads. Launch options (css, theme, head, sessions kept) come from ``launch_kwargs()``,
queue options from ``queue_kwargs()``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from decoding_lab.ui import explorer, explorer_handlers, extras
from decoding_lab.ui.common import urlstate  # noqa: E402
from decoding_lab.ui.common.i18n import LANGS, norm_lang, t  # noqa: E402
from decoding_lab.ui.common.sessions import SessionJobs, queue_kwargs  # noqa: E402
from decoding_lab.ui.common.state import SETTING_KEYS, Labels, merge_updates  # noqa: E402

ASSETS = Path(__file__).resolve().parents[2] / "assets"

HEAD = """
<script>
// Clicking a bar of the distribution chart forces that token (a new branch).
(function () {
  function attach() {
    const el = document.querySelector('#dist-chart .js-plotly-plot');
    if (!el || el.__dlBound || !el.on) return;
    el.__dlBound = true;
    el.on('plotly_click', function (d) {
      if (!d || !d.points || !d.points.length) return;
      const box = document.querySelector('#force-token-box textarea, #force-token-box input');
      const btn = document.querySelector('#force-token-btn');
      if (!box || !btn) return;
      box.value = String(d.points[0].customdata);
      box.dispatchEvent(new Event('input', {bubbles: true}));
      setTimeout(function () { btn.click(); }, 60);
    });
  }
  new MutationObserver(attach).observe(document.documentElement, {childList: true, subtree: true});
})();
</script>
"""


RESIZE_JS = "() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 80); }"


def launch_kwargs() -> dict[str, Any]:
    """Gradio 6 takes css/theme/head in ``launch()``, not in ``gr.Blocks``; the number of tabs
    whose state is kept comes from ``DECODING_LAB_MAX_SESSIONS``."""
    from decoding_lab import limits
    css_file = ASSETS / "app.css"
    return {"css": css_file.read_text(encoding="utf-8") if css_file.is_file() else "",
            "theme": gr.themes.Soft(primary_hue="blue", secondary_hue="orange"), "head": HEAD,
            "state_session_capacity": limits.current().max_sessions}


def _optional_tab(module: str, L: Labels, lang_state: Any, ex_ui: Any, jobs: SessionJobs) -> Any:
    """Compare and Beam need the strategies package; a missing piece hides only its tab."""
    import importlib
    try:
        mod = importlib.import_module(f"decoding_lab.ui.{module}")
    except ImportError as e:  # pragma: no cover - only while the core is incomplete
        gr.Markdown(f"*{module} tab unavailable: {e}*")
        return None
    return mod.build_and_wire(L, lang_state, ex_ui, jobs=jobs)


def build_demo(lang: str = "en") -> gr.Blocks:
    L = Labels()
    jobs = SessionJobs()  # model jobs running per tab (DECODING_LAB_SESSION_JOBS at most)
    with gr.Blocks(title="Decoding Lab", fill_width=True) as demo:
        lang_state = gr.State(norm_lang(lang))
        with gr.Row(elem_id="header"):
            with gr.Column(scale=5):
                L(gr.Markdown(t(lang, "title"), elem_id="title"), "title", "value")
                L(gr.Markdown(t(lang, "subtitle"), elem_id="subtitle"), "subtitle", "value")
            lang_radio = L(gr.Radio([(v, k) for k, v in LANGS.items()], value=norm_lang(lang), label=t(lang, "language"),
                                    elem_id="lang-radio", scale=1, min_width=200), "language")
        with gr.Tabs(elem_id="tabs", selected="explorer") as tabs_comp:
            with gr.Tab(t(lang, "tab_explorer"), id="explorer", elem_id="tab-explorer") as tab_ex:
                L(tab_ex, "tab_explorer")
                ex = explorer.build(L, lang)
                ex_events = explorer_handlers.wire(ex, lang_state, jobs)
            with gr.Tab(t(lang, "tab_lessons"), id="lessons", elem_id="tab-lessons") as tab_les:
                L(tab_les, "tab_lessons")
                les_tab = extras.mount_lessons(lang, lang_state)
            with gr.Tab(t(lang, "tab_compare"), id="compare", elem_id="tab-compare") as tab_cmp:
                L(tab_cmp, "tab_compare")
                cmp_tab = _optional_tab("compare", L, lang_state, ex, jobs)
            with gr.Tab(t(lang, "tab_beam"), id="beam", elem_id="tab-beam") as tab_beam:
                L(tab_beam, "tab_beam")
                beam_tab = _optional_tab("beam", L, lang_state, ex, jobs)
            with gr.Tab(t(lang, "tab_grammar"), id="grammar", elem_id="tab-grammar") as tab_gr:
                L(tab_gr, "tab_grammar")
                gr_tab = extras.mount_grammar(lang, lang_state, ex, jobs)
            with gr.Tab(t(lang, "tab_multisample"), id="multisample", elem_id="tab-multisample") as tab_ms:
                L(tab_ms, "tab_multisample")
                ms_tab = extras.mount_multisample(lang, lang_state, ex, jobs)
            with gr.Tab(t(lang, "tab_determinism"), id="determinism", elem_id="tab-determinism") as tab_det:
                L(tab_det, "tab_determinism")
                det_tab = extras.mount_determinism(lang, lang_state, ex, jobs)
        tabs = [x for x in (cmp_tab, beam_tab, gr_tab, ms_tab, det_tab) if x is not None]  # lessons: see below
        for tab, content in ((tab_les, les_tab), (tab_cmp, cmp_tab), (tab_beam, beam_tab), (tab_gr, gr_tab),
                             (tab_ms, ms_tab), (tab_det, det_tab)):
            if content is None:  # a module that is not there (yet) hides its tab instead of showing it empty
                tab.visible = False
        if les_tab is not None:
            extras.wire_lesson_loading(les_tab, lang_state, tabs_comp, ex, ex_events, cmp_tab, beam_tab, det_tab,
                                       grammar=gr_tab, jobs=jobs, multisample=ms_tab)
        # Plots drawn while their tab was hidden have no width; a resize makes plotly redo the layout.
        for tab in (tab_ex, tab_les, tab_cmp, tab_beam, tab_gr, tab_ms, tab_det):
            tab.select(None, None, None, js=RESIZE_JS)

        # ---------------------------------------------------------------- language
        rerender_inputs = [ex.session] + [s for tab in tabs for s in tab.states]
        rerender_outputs = [ex.dist, ex.funnel, ex.entropy, ex.numbers, ex.gen, ex.table, ex.candidates, ex.branches,
                            ex.status, ex.session] + [o for tab in tabs for o in tab.views]

        def on_language(new_lang, session, *tab_states):
            new_lang = norm_lang(new_lang)
            out = merge_updates({lang_state: new_lang, **L.updates(new_lang)}, ex_events["render"](new_lang, session))
            i = 0
            for tab in tabs:
                n = len(tab.states)
                out = merge_updates(out, tab.rerender(new_lang, *tab_states[i:i + n]))
                i += n
            out.pop(lang_radio, None)  # the radio keeps its value; only its label changes
            out[lang_radio] = gr.update(label=t(new_lang, "language"))
            return out

        lang_ev = lang_radio.change(on_language, [lang_radio] + rerender_inputs,
                                    [lang_state] + L.components() + rerender_outputs, api_name="set_language")
        if les_tab is not None:  # its progress lives in a BrowserState, which must stay out of set_language's API
            lang_ev.then(les_tab.rerender, [lang_state, les_tab.ui.current, les_tab.ui.done], les_tab.views,
                         api_visibility="private")

        # ---------------------------------------------------------------- shared URL
        ctl = {"model": ex.model, "prompt": ex.prompt, "chat": ex.chat, "top_n": ex.top_n, **ex.settings}

        def on_load(request: gr.Request):
            params = dict(request.query_params) if request is not None else {}
            values, notes = urlstate.decode(params)
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
            for note in notes:
                gr.Warning(note)
            if values.get("lang") and values["lang"] != "en":
                out[lang_radio] = values["lang"]  # its change event relabels the page
            return out

        demo.load(on_load, None, [ex.hub, lang_radio, *ctl.values()], api_name="restore_from_url")
        if les_tab is not None and les_tab.restore is not None:  # lesson progress kept in the browser
            demo.load(les_tab.restore, [lang_state, les_tab.ui.current, les_tab.ui.done], les_tab.views,
                      api_name="lesson_restore_progress")
    demo.launch_kwargs = launch_kwargs()  # type: ignore[attr-defined]
    return demo


__all__ = ["build_demo", "launch_kwargs", "queue_kwargs", "SETTING_KEYS"]
