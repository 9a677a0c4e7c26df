"""``mimikit status``: what an instance is doing (``console.checkup``: whether it can)."""

from __future__ import annotations

import json
from typing import Any

from mimikit.config import Settings
from mimikit.status import status
from mimikit.store.runtime import build_runtime


def print_status(settings: Settings, as_json: bool = False) -> int:
    """Print the status report; 1 when Redis does not answer."""
    report = status(build_runtime(settings))
    if as_json:
        print(json.dumps(report, indent=2))
        return 0 if report["ok"] else 1
    redis = report["redis"]
    print(f"redis     {'ok' if redis['ok'] else 'DOWN'}  {redis.get('url', '')}"
          + (f"  ({redis['error']})" if redis.get("error") else ""))
    if not report["ok"]:
        return 1
    workers = report["workers"]
    print(f"workers   {len(workers)}" + "".join(
        f"\n          {w['name']}  queues={','.join(w.get('queues', []))}"
        + (f"  sandbox={w['sandbox']}" if w.get("sandbox") else "") for w in workers))
    print("queues    " + "  ".join(f"{q}={n}" for q, n in report["queues"].items()))
    print(f"teller    {report['teller']['state']}")
    print_inbox(report.get("inbox") or {})
    beat = report.get("beat", {})
    print(f"beat      {'running' if beat.get('alive') else 'NOT RUNNING'}"
          f"  (last seen {beat.get('at') or 'never'}; last supervisor tick "
          f"{beat.get('lastTick') or 'never'})")
    llm = report["llm"]
    print(f"llm       {'configured' if llm['configured'] else 'NOT CONFIGURED'}  "
          f"{llm.get('baseUrl', '')} "
          + " ".join(f"{role}={model}" for role, model in llm.get("models", {}).items())
          + (f"\n          {llm['error']}" if llm.get("error") else "")
          + (f"\n          {llm['waitingTasks']['count']} task(s) waiting for the model since "
             f"{llm['waitingTasks']['since']}" if llm.get("waitingTasks") else "")
          + (f"\n          reading the {llm['readingPrompts']['role']} prompt into the server's "
             f"cache since {llm['readingPrompts']['since']}: a message waits for it"
             if llm.get("readingPrompts") else "")
          + "".join(f"\n          {role}: {shown['line']}"
                    for role, shown in (llm.get("profile") or {}).items()))
    sandbox = report["sandbox"]
    print(f"sandbox   {sandbox['detail']}"
          + (f"\n          fix: {sandbox['fix']}" if sandbox.get("fix") else ""))
    print_mcp(report.get("mcp") or {})
    usage = report.get("usage") or {}
    cap = f" of {usage['dayCap']:g}" if usage.get("dayCap") is not None else " (no daily budget)"
    print(f"spent     {usage.get('spentToday', 0):.4f}{cap} today"
          + (f"; priced: {', '.join(usage['priced'])}" if usage.get("priced") else
             "; no prices set (MIMIKIT_PRICES): counted in tokens only"))
    batch = report.get("llmEval")
    if batch:
        outcome = (f"FAILED: {batch.get('error')}" if batch["status"] == "failed"
                   else batch["status"])
        print(f"llm_eval  last batch {outcome}  ({batch['at']}, {batch['taskId']})")
    question = report.get("pendingQuestion")
    print(f"question  {question['question'] if question else '-'}"
          + ('\n          answer it with: mimikit answer "..."' if question else ""))
    return 0


def print_inbox(inbox: dict[str, Any]) -> None:
    """The Teller's inbox: what waits, what is tried again, and each item that gave up."""
    retrying = f" ({inbox['retrying']} to be tried again)" if inbox.get("retrying") else ""
    print(f"inbox     {inbox.get('waiting', 0)} waiting{retrying}")
    for item in inbox.get("failed", []):
        print(f"          gave up: {item['id']} {item['kind']} “{item['preview']}” after "
              f"{item['tries']} tries: {item['reason']}")
    if inbox.get("failed"):
        print("          try again: mimikit failed retry ID; dismiss: mimikit failed dismiss ID")


def print_mcp(mcp: dict[str, Any]) -> None:
    """The configured MCP servers (not started: ``mimikit doctor`` starts each)."""
    if mcp.get("error"):
        print(f"mcp       CONFIG INVALID: {mcp['error']}")
        return
    servers = mcp.get("servers") or []
    print(f"mcp       {len(servers) or 'no'} server{'s' * (len(servers) != 1)} ({mcp.get('config')})"
          + "".join(f"\n          {s['name']}  {s['kind']} {s['target']}"
                    + (f"  — {s['description']}" if s.get("description") else "")
                    for s in servers))
