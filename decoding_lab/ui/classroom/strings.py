"""The class room's strings (namespace ``classroom``): the teacher's panel on the projector and a
student's panel on a phone, in English and Chinese."""

from __future__ import annotations

from decoding_lab.ui.common.i18n import Namespace, register

EN: dict[str, str] = {
    # the teacher (teacher mode)
    "open": "Open a class: students answer this lesson's questions on their own devices",
    "join_box": "Join this class", "join_at": "Join at **{link}** with the code",
    "students": "**{n}** students in the class", "code_line": "code **{code}**", "students_one": "**1** student in the class",
    "who": "Who joined (nicknames, seen on this computer only)", "who_none": "Nobody gave a nickname.",
    "asked": "The question the class answers now",
    "no_questions": "This screen asks nothing: page on to a screen with a prediction or to the lesson's last "
                    "screen (its checks).",
    "round": "Second round (after discussion)", "round_n": "Round {n} (after discussion)",
    "reveal": "Reveal the answer", "reveal_run": "Reveal: run the experiment once for the class",
    "close": "Close the class", "csv": "Download the answers (CSV, no names)",
    "closed": "The class is closed: its answers are gone from this server.",
    "opened": "Class **{code}** is open. Every screen you show now is shown to the students.",
    "answers_head": "**Round {r}:** {n} answered",
    "round_label": "Round {r}", "count": "students", "plot_title": "How the class answered",
    "median": "median {m}, middle half {a} to {b}", "live_line": "the model: {v}",
    "class_right": "**Right:** {label}. In round {r}, **{k} of {n}** chose it.",
    "class_number": "**The model:** {live}. The class's median was **{m}** (round {r}, {n} answers).",
    "class_model": "**The model:** {live}.",
    # a student
    "join": "Join a class", "code": "Class code", "code_ph": "e.g. K7M2-9QXP", "nick": "Nickname (optional, "
            "only the teacher sees it)", "join_btn": "Join", "joined": "You are in class **{code}**. "
            "Your screen follows the teacher's.",
    "leave": "Leave the class", "left": "You have left the class.", "refresh": "Update",
    "followers_full": "Live updates are full on this server ({n} open views): press Update to see the "
                      "teacher's screen. Your answers count as usual.",
    "ended": "The class has ended (the teacher closed it, or it was idle too long).",
    "wait": "The teacher has not asked a question on this screen yet. You can still read, or open the "
            "lesson's setup and explore.",
    "your_answer": "Your answer", "confidence": "How sure are you? (optional)",
    "conf_1": "guessing", "conf_2": "fairly sure", "conf_3": "sure",
    "send": "Send my answer", "sent": "✔ Sent: **{a}** (round {r}). You can change it until the teacher moves on.",
    "pick_first": "Pick an answer (or type a number) first.",
    "revealed_right": "✔ Your answer was right.", "revealed_wrong": "✘ Your answer: **{a}**.",
    "no_answer": "You did not answer this one.", "round_open": "**Round {r}.** Answer again after the discussion.",
    "revealed_number": "You answered **{a}**; the model gave **{live}**.",
}

ZH: dict[str, str] = {
    "open": "开一个课堂：学生在自己的设备上回答这一课的问题",
    "join_box": "加入这个课堂", "join_at": "打开 **{link}**，输入课堂码",
    "students": "课堂里有 **{n}** 名学生", "code_line": "课堂码 **{code}**", "students_one": "课堂里有 **1** 名学生",
    "who": "谁加入了（昵称，只在这台电脑上显示）", "who_none": "没有人填昵称。",
    "asked": "全班现在回答的问题",
    "no_questions": "这一屏没有问题：翻到有预测的一屏，或这一课的最后一屏（检验题）。",
    "round": "第二轮（讨论之后）", "round_n": "第 {n} 轮（讨论之后）",
    "reveal": "揭晓答案", "reveal_run": "揭晓：为全班运行一次实验",
    "close": "关闭课堂", "csv": "下载答案（CSV，不含姓名）",
    "closed": "课堂已关闭：它的答案已从服务器上清除。",
    "opened": "课堂 **{code}** 已开。你现在显示的每一屏都会推送给学生。",
    "answers_head": "**第 {r} 轮：** {n} 人已作答",
    "round_label": "第 {r} 轮", "count": "人数", "plot_title": "全班的答案",
    "median": "中位数 {m}，中间一半 {a} 到 {b}", "live_line": "模型：{v}",
    "class_right": "**正确答案：** {label}。第 {r} 轮有 **{k} / {n}** 人选了它。",
    "class_number": "**模型给出：** {live}。全班的中位数是 **{m}**（第 {r} 轮，{n} 个答案）。",
    "class_model": "**模型给出：** {live}。",
    "join": "加入课堂", "code": "课堂码", "code_ph": "例如 K7M2-9QXP", "nick": "昵称（可不填，只有老师看得到）",
    "join_btn": "加入", "joined": "你已在课堂 **{code}** 里。你的屏幕跟着老师走。",
    "leave": "离开课堂", "left": "你已离开课堂。", "refresh": "更新",
    "followers_full": "这台服务器的实时更新已满（{n} 个打开的视图）：请按\u201c更新\u201d查看老师的屏幕。你的答案照常计入。",
    "ended": "课堂已结束（老师关闭了它，或闲置太久）。",
    "wait": "老师还没有在这一屏提问。你可以继续阅读，或打开这一课的设置自己探索。",
    "your_answer": "你的答案", "confidence": "你有多大把握？（可不填）",
    "conf_1": "猜的", "conf_2": "比较有把握", "conf_3": "有把握",
    "send": "提交我的答案", "sent": "✔ 已提交：**{a}**（第 {r} 轮）。老师往下讲之前都可以改。",
    "pick_first": "请先选一个答案（或填一个数）。",
    "revealed_right": "✔ 你的答案是对的。", "revealed_wrong": "✘ 你的答案：**{a}**。",
    "no_answer": "这道题你没有作答。", "round_open": "**第 {r} 轮。** 讨论之后请再答一次。",
    "revealed_number": "你答的是 **{a}**；模型给出的是 **{live}**。",
}

register("classroom", EN, ZH)
tr = Namespace("classroom")
