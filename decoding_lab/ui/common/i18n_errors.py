"""The core's coded refusals (``decoding_lab.errors.MESSAGES``) as ``err.<code>`` strings.

English is the core's own text, so the CLI, the API and the English page read one line. Chinese
fills the same placeholders; ``err.what.<name>`` translates the name of a constraint kind that
a grammar message puts in ``{what}`` (a name that starts with a Latin letter keeps a space before
it, as Chinese typesetting puts one between scripts). The detail a parser or the grammar engine
wrote stays as it wrote it.
"""

from __future__ import annotations

from decoding_lab.errors import MESSAGES

EN: dict[str, str] = {f"err.{code}": text for code, text in MESSAGES.items()}

ZH: dict[str, str] = {f"err.{code}": text for code, text in {
    "not_a_number": "{name} 必须是数字，收到的是 {got}",
    "not_finite": "{name} 必须是有限的数，收到的是 {got}",
    "not_whole": "{name} 必须是整数，收到的是 {got}",
    "out_of_range": "{name} 必须 {op} {bound}，收到的是 {got}",
    "not_bool": "{name} 只能是 true 或 false，收到的是 {got}",
    "empty_number": "{name} 为空：请填一个数",
    "unknown_stage": "未知的阶段 {name}；已知的阶段：{known}",
    "stage_twice": "阶段顺序里 {names} 出现了不止一次",
    "not_a_choice": "{name} 必须是以下之一：{choices}；收到的是 {got}",
    "empty_prompt": "提示词为空：请先输入文字",
    "two_paths": "请至少选两条数值路径来比较",
    "invalid_regex": "无效的正则{where}：{detail}",
    "json_syntax": "JSON Schema 不是合法的 JSON（第 {line} 行第 {column} 列）：{msg}",
    "json_schema": "无效的 JSON Schema：{detail}",
    "grammar_at": "无效的{what}（第 {line} 行第 {column} 列）：{detail}",
    "grammar": "无效的{what}：{detail}",
    "matches_nothing": "这个{what}不匹配任何文本",
    "empty_source": "{what}是空的",
    "no_choices": "选项列表是空的，什么也写不出来",
    "compiler_busy": "语法编译器正忙于另外 {busy} 个语法；请稍后再试 ({setting})",
    "client_busy": "这个地址已有 {n} 个模型任务在运行或等待；请等其中一个结束 ({setting})",
    "job_passes": "这次运行已用满单个任务在这里可做的 {n} 次前向计算；已生成的内容都保留着 ({setting})",
    "job_seconds": "这次运行已用满单个任务在这里可用的 {s} 秒模型时间；已生成的内容都保留着 ({setting})",
    "request_too_large": "这个请求有 {got} 字节；这里最多接受 {cap} 字节 ({setting})",
    "room_code": "这不是课堂码：课堂码是 8 个字母和数字，例如 K7M2-9QXP",
    "no_room": "没有课堂码为 {room} 的课堂；请向老师核对（课堂闲置 {minutes} 分钟后关闭）",
    "wrong_codes": "这个地址输错的课堂码太多（每分钟 {n} 次）；请等一分钟 ({setting})",
    "rooms_full": "这台服务器已开了 {n} 个课堂，已到上限；请稍后再试 ({setting})",
    "room_full": "这个课堂已有 {n} 名学生，已到上限 ({setting})",
    "not_teacher": "只有开这个课堂的浏览器才能改变它显示的内容",
    "not_member": "你已不在这个课堂里；请用课堂码重新加入",
    "no_question": "这个问题现在没有开放：老师已经往下讲了",
    "bad_choice": "答案必须是这道题的 {n} 个选项之一，收到的是 {got}",
    "bad_number": "答案必须是 -{bound} 到 {bound} 之间的数，收到的是 {got}",
    "bad_confidence": "把握程度必须是 1、2 或 3（也可以不填），收到的是 {got}",
    "answer_limit": "这一轮里你已改了 {n} 次答案，已到上限 ({setting})",
    "max_rounds": "这道题已经投了 {n} 轮，已到上限",
    "too_many_requests": "这个地址的请求太多（{window} 秒内 {n} 个）；请稍等几秒 ({setting})",
}.items()}

#: Constraint kinds as grammar messages name them (``{what}``), by their English and their key.
_WHAT_ZH = {"regex": "正则", "JSON schema": " JSON Schema", "json_schema": " JSON Schema", "choices": "选项",
            "Lark grammar": " Lark 语法", "lark": " Lark 语法", "GBNF grammar": " GBNF 语法", "gbnf": " GBNF 语法",
            "prompt": "提示词"}
ZH.update({f"err.what.{name}": text for name, text in _WHAT_ZH.items()})
