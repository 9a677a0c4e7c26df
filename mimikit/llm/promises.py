"""Whether a text promises work: "I'll create the file", "Let me set that up", "我来安排", a
claim that it is done ("Reminder set for 9am.", "已创建"), or talk of handing it over
("Delegate: remind_me", "I'll pass this to the planner").

A Teller that answers a request with such a text and does not delegate leaves the person
waiting for work that never starts; the loop then asks it for the call that does the work
(and, as a last resort, the Teller pass hands the request to the Planner itself). A promise to
remember ("I'll keep that in mind", "我会记住") is made true by ``remember`` instead.
"""

from __future__ import annotations

import re

_WORK = (r"(?:create|write|make|set(?:ting)?|schedule|remind|delegate|hand|pass|start|run|"
         r"check|look (?:into|up|at)|find|search|prepare|generate|build|fix|update|add|send|"
         r"do|get|compute|calculate|analy[sz]e|summari[sz]e|draft|plan|work on|take care|"
         r"handle|organi[sz]e|save|store|book|arrange|fetch|download|install|delete|remove|"
         r"move|rename|copy|edit|change|refactor|implement|test|deploy|monitor|watch|track|"
         r"notify|let you know|get back)")
_ENGLISH = re.compile(
    r"\b(?:i['’]ll|i will|i['’]m going to|i am going to|i shall|i['’]m about to|"
    r"let me(?! know)|i can (?:now )?go ahead and|i['’]m (?:now )?(?:creating|writing|setting|"
    r"scheduling|delegating|handing|starting|working|preparing|generating|passing))"
    r"(?:\s+\w+){0,4}?\s+" + _WORK + r"\b", re.IGNORECASE)
_CHINESE = re.compile(r"(?:我(?:会|将|来|这就|马上|现在就|稍后)|马上(?:为你|给你|帮你)?|让我|"
                      r"正在为你|稍等|这就为你)[^。！？!?\n]{0,12}?"
                      r"(?:创建|写|做|安排|设置|提醒|处理|查|找|生成|准备|整理|保存|记|发送|执行|运行|"
                      r"修改|删除|添加|规划|计划|完成|委托|交给)")


_DONE = re.compile(
    r"^\W*(?:done|all set|all done|ok,? done|finished)\b|"
    r"\b(?:reminders?|tasks?|files?|schedules?|alarms?|notes?|jobs?|it|that)\s+(?:has|have|is|are)"
    r"(?:\s+(?:been|now|all))*\s+(?:created|set(?: up)?|scheduled|saved|added|written|made|"
    r"started|booked|arranged)\b|\b(?:reminder|alarm|task|schedule)\s+set\b", re.IGNORECASE)
_CHINESE_DONE = re.compile(r"已(?:经)?(?:为你|帮你|给你)?(?:创建|设置|设定|安排|保存|添加|写入|完成|记下)")
_HANDING_OVER = re.compile(r"\bdelegat\w*|\bplanner\b|交给|委托", re.IGNORECASE)


_REMEMBER = re.compile(
    r"\b(?:i['’]ll|i will|i['’]m going to|let me|i['’]ve|i have)\s+(?:\w+\s+){0,2}?"
    r"(?:remember|memori[sz]e|kept? (?:that|this|it) in mind|keep in mind|noted?\b)|"
    r"(?:我(?:会|将|来|已经?|已)|让我)[^。！？!?\n]{0,6}?(?:记住|记下|记得|记录)|记住了|记下了",
    re.IGNORECASE)


def backing_tool(text: str | None) -> str | None:
    """The call that makes ``text`` true: ``remember`` for a promise to keep something in
    memory ("I'll remember that", "我会记住"), ``delegate`` for work, None for neither."""
    if not text:
        return None
    if _REMEMBER.search(text):
        return "remember"
    return "delegate" if promises_work(text) else None


def promises_work(text: str | None) -> bool:
    """True when ``text`` says that work is about to be done (in the first person), that it
    is done, or that it is handed over: what only a ``delegate`` call can make true."""
    if not text:
        return False
    return any(pattern.search(text) for pattern in
               (_ENGLISH, _CHINESE, _DONE, _CHINESE_DONE, _HANDING_OVER))
