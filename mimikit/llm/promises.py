"""Whether a text promises work: "I'll create the file", "Let me set that up", "我来安排".

A Teller that answers with such a promise and does not delegate leaves the person waiting for
work that never starts; the loop then asks it for the call that does the work (and, as a last
resort, the Teller pass hands the request to the Planner itself).
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


def promises_work(text: str | None) -> bool:
    """True when ``text`` says, in the first person, that work is about to be done."""
    if not text:
        return False
    return bool(_ENGLISH.search(text) or _CHINESE.search(text))
