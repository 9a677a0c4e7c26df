"""The token gate covers every route of the app: each one the url_map holds is asked for, so an
endpoint added later is checked without touching this file."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from werkzeug.routing import Rule
from werkzeug.routing.converters import NumberConverter

from mimikit.web.auth import ALLOWED_WITHOUT_TOKEN

TOKEN = "gate-token"
SKIPPED_METHODS = frozenset({"HEAD", "OPTIONS"})  # answered by Flask for the rule's own method
SAMPLE_VALUES = {"static": {"filename": "app.js"}}  # a file that exists, so the answer is 200


@pytest.fixture
def token_app(runtime):
    from mimikit.web import create_app

    return create_app(runtime.settings.model_copy(update={"api_token": SecretStr(TOKEN)}))


def _requests(app) -> list[tuple[Rule, str, str]]:
    """One (rule, method, URL) for each method of each route of ``app``."""
    adapter = app.url_map.bind("localhost")
    found = []
    for rule in app.url_map.iter_rules():
        values = SAMPLE_VALUES.get(rule.endpoint) or {
            name: 1 if isinstance(rule._converters[name], NumberConverter) else "x"
            for name in rule.arguments}
        for method in sorted(rule.methods - SKIPPED_METHODS):
            url = adapter.build(rule.endpoint, values, method=method)
            assert adapter.match(url, method=method)[0] == rule.endpoint, (rule, method)
            found.append((rule, method, url))
    return found


def _status(client, method: str, url: str, **headers: str) -> int:
    response = client.open(url, method=method, headers=headers)
    response.close()  # an event stream holds a slot until it is closed
    return response.status_code


def test_with_a_token_every_route_but_the_allow_list_is_401_without_it(token_app):
    client = token_app.test_client()
    requests = _requests(token_app)
    refused = {rule.rule for rule, method, url in requests
               if _status(client, method, url) == 401}
    guarded = {rule.rule for rule, _, _ in requests if rule.endpoint not in ALLOWED_WITHOUT_TOKEN}
    assert guarded - refused == set(), "routes served without the token"
    assert refused & {"/api/health", "/", "/static/<path:filename>"} == set()
    # the walk saw the API, the metrics and the steering routes
    assert {"/api/status", "/api/input", "/metrics", "/api/tasks/<task_id>/pause"} <= refused


def test_with_a_token_the_allow_list_is_served_without_it(token_app):
    client = token_app.test_client()
    for path in ("/api/health", "/", "/static/app.js"):
        assert _status(client, "GET", path) == 200, path


def test_with_the_token_no_route_is_refused_by_the_gate(token_app):
    client = token_app.test_client()
    answers = {(method, url): _status(client, method, url, Authorization=f"Bearer {TOKEN}")
               for _, method, url in _requests(token_app)}
    assert [key for key, status in answers.items() if status == 401] == []
    assert answers[("GET", "/api/status")] == 200 and answers[("GET", "/metrics")] == 200


def test_without_a_token_configured_the_gate_refuses_nothing(runtime):
    from mimikit.web import create_app

    app = create_app(runtime.settings)
    client = app.test_client()
    answers = {(method, url): _status(client, method, url) for _, method, url in _requests(app)}
    assert [key for key, status in answers.items() if status == 401] == []
    assert answers[("GET", "/api/status")] == 200


def test_only_the_live_update_stream_takes_the_token_in_its_query(token_app):
    client = token_app.test_client()
    assert _status(client, "GET", f"/api/events?token={TOKEN}") == 200
    assert _status(client, "GET", "/api/events?token=wrong") == 401
    assert _status(client, "GET", "/api/events", Authorization=f"Bearer {TOKEN}") == 200
    assert _status(client, "GET", f"/api/status?token={TOKEN}") == 401
    assert _status(client, "GET", f"/metrics?token={TOKEN}") == 401


def test_a_path_no_route_matches_needs_the_token_too(token_app):
    client = token_app.test_client()
    response = client.get("/api/nope")
    assert response.status_code == 401 and "MIMIKIT_API_TOKEN" in response.get_json()["error"]
    assert _status(client, "GET", "/api/nope", Authorization=f"Bearer {TOKEN}") == 404
