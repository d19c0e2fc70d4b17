"""The REST API (localreason/serve/rest.py, http.py, models.py): the contract in process with fakes, then end to end with real models."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from starlette.testclient import TestClient

from localreason import __version__
from localreason.config import load_settings
from localreason.demo import samples_dir
from localreason.errors import Cancelled, ModelError, ValidationError
from localreason.generate import GenerationError
from localreason.library import Library
from localreason.reason import NO_EVIDENCE_ANSWER
from localreason.serve import handoff
from localreason.serve.http import is_loopback
from localreason.serve.rest import create_app, run
from localreason.service import Service

from fakes import FakeEmbedder, FakeGenerator
from waiting import PATIENCE, finished, wait_until

BASE = "http://127.0.0.1:8765"
QUESTION = "Where did the Black Death originate?"
KEY = "k" * 12 + "-secret-key"
UNKNOWN_DOC = "doc_aaaaaaaaaaaaaaaa"
UNKNOWN_CHUNK = "chk_aaaaaaaaaaaaaaaa"


@pytest.fixture(scope="module")
def samples_home(tmp_path_factory):
    """The bundled samples, ingested once with the fake embedder (each test opens its own Service on it)."""
    home = tmp_path_factory.mktemp("rest-home")
    with Library(settings=load_settings(home), embedder=FakeEmbedder()) as lib:
        lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    return home


@pytest.fixture
def generator():
    return FakeGenerator()


@pytest.fixture
def service(samples_home, generator):
    svc = Service(Library(settings=load_settings(samples_home), embedder=FakeEmbedder(), generator=generator))
    yield svc
    svc.close()


@pytest.fixture
def client(service):
    with TestClient(create_app(service), base_url=BASE) as c:
        yield c


def assert_error(response, status: int, code: str) -> dict:
    """The response is the API's error shape with this status and code; returns the error object."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    assert body["error"]["code"] == code and body["error"]["message"], body
    assert isinstance(body["error"]["details"], dict)
    return body["error"]


def a_chunk_id(client) -> str:
    return client.post("/v1/deep_search", json={"query": "Black Death", "limit": 1}).json()["data"][0]["chunkId"]


# ---------------------------------------------------------------- reason


def test_reason_answers_with_the_spec_shape(client):
    r = client.post("/v1/reason", json={"query": f"  {QUESTION}\n"})
    assert r.status_code == 200, r.text
    data = r.json()["data"]
    assert set(data) == {"answer", "citations", "gaps", "meta"}
    assert data["citations"] and set(data["citations"][0]) == {"chunkId", "documentId", "documentTitle"}
    assert all(f"[[{c['chunkId']}]]" in data["answer"] for c in data["citations"])
    assert set(data["meta"]) == {"chunksGathered", "citationsDropped", "latencyMs", "stagesMs"}  # the spec's three
    stages = data["meta"]["stagesMs"]  # ... and where the time went
    assert set(stages) == {"search", "packet", "read", "rerank", "prompt", "generate", "verify", "phrase"}
    ours = sum(v for k, v in stages.items() if k not in ("prompt", "generate"))  # the fake model's own are made up
    assert all(v >= 0 for v in stages.values()) and ours <= data["meta"]["latencyMs"] + 1, "no stage inside another"


@pytest.mark.parametrize("extra, limit, max_tokens", [
    ({}, 50, 8000), ({"limit": 0}, 1, 8000), ({"limit": 999}, 50, 8000), ({"limit": 7.9}, 7, 8000),
    ({"limit": 10**30}, 50, 8000), ({"maxTokens": 12.9}, 50, 12), ({"maxTokens": -5}, 50, 0),
    ({"maxTokens": 1e12}, 50, 10**12),
])  # fmt: skip
def test_reason_defaults_clamping_truncation_and_trimming(client, service, monkeypatch, extra, limit, max_tokens):
    seen = []
    monkeypatch.setattr(service, "reason", lambda query, **kw: seen.append((query, kw)) or Service.reason(
        service, query, **kw))  # fmt: skip
    r = client.post("/v1/reason", json={"query": f"\t {QUESTION}  ", **extra})
    assert r.status_code == 200, r.text
    query, kwargs = seen[0]
    assert query == QUESTION and kwargs["limit"] == limit and kwargs["max_tokens"] == max_tokens
    assert type(kwargs["max_tokens"]) is int


@pytest.mark.parametrize("body, words", [
    ({"query": "   \n\t"}, "blank"), ({}, "query is required"), ({"query": 42}, "query must be a string"),
    ({"query": "x", "limit": "5"}, "limit must be a number, not a string"),
    ({"query": "x", "limit": True}, "limit must be a number, not a boolean"),
    ({"query": "x", "limit": None}, "limit must be a number, not null"),
    ({"query": "x", "limit": -1}, "negative"),
    ({"query": "x", "documentId": ""}, "documentId is empty"), ({"query": "x", "documentId": None}, "null"),
    ({"query": "x", "collectionId": "col_???"}, "not a valid collection id"),
    ({"query": "x", "documentId": "col_aaaaaaaaaaaaaaaa"}, "is a collection id"),
    ({"query": "x", "documentID": UNKNOWN_DOC}, "Unknown field 'documentID'"), ({"query": "x" * 2001}, "2,000"),
])  # fmt: skip
def test_reason_refuses_bad_fields_with_400(client, generator, body, words):
    error = assert_error(client.post("/v1/reason", json=body), 400, "invalid_request")
    assert words in error["message"]
    assert generator.calls == 0


def test_a_bad_field_is_refused_at_once_even_when_the_model_is_busy(client, service):
    with service.model_lock:
        assert_error(client.post("/v1/reason", json={"query": "x", "documentId": "doc_x"}), 400, "invalid_request")


@pytest.mark.parametrize("raw", [b'{"query": "x", "limit": NaN}', b'{"query": "x", "maxTokens": Infinity}',
                                 b'{"query": "x", "maxTokens": -Infinity}', b'{"query": NaN}'])  # fmt: skip
def test_nan_and_infinity_are_refused(client, generator, raw):
    error = assert_error(client.post("/v1/reason", content=raw, headers={"content-type": "application/json"}), 400,
                         "invalid_json")  # fmt: skip
    assert "not a JSON number" in error["message"]
    assert generator.calls == 0


def test_a_number_too_large_for_a_float_is_refused(client):
    raw = b'{"query": "x", "maxTokens": 1e400}'
    r = client.post("/v1/reason", content=raw, headers={"content-type": "application/json"})
    assert "finite" in assert_error(r, 400, "invalid_request")["message"]


@pytest.mark.parametrize("raw, content_type", [
    (b"", "application/json"), (b"query=x", "application/x-www-form-urlencoded"), (b'{"query": "x"}', "text/plain"),
    (b'{"query": "x"}', None), (b'{"query": "x"', "application/json"), (b'["x"]', "application/json"),
    (b'"x"', "application/json"), (b"\xff\xfe{}", "application/json"), (b"[" * 100_000, "application/json"),
    (b'{"query": "x", "limit": 1' + b"0" * 5000 + b"}", "application/json"),
])  # fmt: skip
def test_bodies_that_are_not_a_json_object_get_400(client, raw, content_type):
    headers = {"content-type": content_type} if content_type else {}
    error = assert_error(client.post("/v1/reason", content=raw, headers=headers), 400, "invalid_json")
    assert not re.search(r"Error\b|sys\.|recursion", error["message"]), "a message for people, not Python's"


def test_an_unknown_scope_gives_the_scoped_no_evidence_answer(client, generator):
    for scope in ({"documentId": UNKNOWN_DOC}, {"collectionId": "col_aaaaaaaaaaaaaaaa"}):
        r = client.post("/v1/reason", json={"query": QUESTION, **scope})
        assert r.status_code == 200 and r.json()["data"]["answer"] == NO_EVIDENCE_ANSWER
    assert generator.calls == 0


# ---------------------------------------------------------------- failures of the model


@pytest.mark.parametrize("error, status, code", [
    (ModelError("The GGUF file /x/model.gguf is missing.", hint="Run `localreason models` to see what is configured."),
     503, "model_unavailable"),
    (GenerationError("The model stopped mid-answer.", hint="Ask again."), 500, "generation_failed"),
    (RuntimeError("llama_decode returned -3"), 500, "internal_error"),
])  # fmt: skip
def test_a_model_failure_is_a_loud_5xx_logged_with_its_traceback(service, generator, caplog, error, status, code):
    generator.error = error
    caplog.set_level(logging.ERROR, logger="uvicorn.error")
    with TestClient(create_app(service), base_url=BASE) as c:
        body = assert_error(c.post("/v1/reason", json={"query": QUESTION}), status, code)
    assert str(getattr(error, "message", error)) in body["message"]
    if getattr(error, "hint", None):
        assert body["details"]["hint"] == error.hint
    record = next(r for r in caplog.records if r.name == "uvicorn.error")
    assert record.exc_info and record.exc_info[1] is error


def test_a_model_that_failed_to_load_shows_in_health(service):
    service.warm_error = ModelError("The GGUF file is corrupt.", hint="Download it again.")
    with TestClient(create_app(service, warm=False), base_url=BASE) as c:
        data = c.get("/v1/health").json()["data"]
    assert data["status"] == "model_error" and data["modelError"]["hint"] == "Download it again."


# ---------------------------------------------------------------- retrieval


def test_retrieval_endpoints(client):
    items = client.post("/v1/find_items", json={"query": "Apollo program"}).json()["data"]
    assert items[0]["title"] == "Apollo program" and items[0]["type"] == "document"
    results = client.post("/v1/deep_search", json={"query": "  Black Death  ", "limit": 3}).json()["data"]
    assert 1 <= len(results) <= 3 and "score" not in results[0]
    hit = results[0]
    read = client.post("/v1/deep_read", json={"chunkId": hit["chunkId"]}).json()["data"]
    assert read["content"] == hit["content"] and "siblingCount" in read
    up = client.post("/v1/deep_expand", json={"chunkId": hit["chunkId"], "direction": "up"}).json()["data"]
    assert up["direction"] == "up" and up["items"][0]["chunkId"] == hit["parentId"]
    scoped = client.post("/v1/deep_search", json={"query": "plague", "documentId": hit["documentId"]})
    assert {h["documentId"] for h in scoped.json()["data"]} == {hit["documentId"]}


def test_retrieval_limits_are_clamped(client):
    assert len(client.post("/v1/deep_search", json={"query": "the", "limit": 0}).json()["data"]) == 1
    assert len(client.post("/v1/deep_search", json={"query": "the", "limit": 10**6}).json()["data"]) <= 100


def test_retrieval_errors(client):
    assert_error(client.post("/v1/deep_read", json={"chunkId": UNKNOWN_CHUNK}), 404, "not_found")
    assert_error(client.post("/v1/deep_expand", json={"chunkId": UNKNOWN_CHUNK, "direction": "next"}), 404,
                 "not_found")  # fmt: skip
    assert_error(client.post("/v1/deep_read", json={"chunkId": ""}), 400, "invalid_request")
    assert_error(client.post("/v1/deep_read", json={"chunkId": "chk_nope"}), 400, "invalid_request")
    assert_error(client.post("/v1/deep_read", json={}), 400, "invalid_request")
    chunk = a_chunk_id(client)
    assert_error(client.post("/v1/deep_expand", json={"chunkId": chunk, "direction": "sideways"}), 400,
                 "invalid_request")  # fmt: skip
    assert_error(client.post("/v1/deep_search", json={"query": " "}), 400, "invalid_request")
    assert_error(client.post("/v1/deep_search", json={"query": "x", "collectionId": None}), 400, "invalid_request")
    r = client.post("/v1/deep_search", json={"query": "plague", "documentId": UNKNOWN_DOC})
    assert r.status_code == 200 and r.json()["data"] == []
    assert_error(client.get("/v1/nothing-here"), 404, "not_found")
    assert_error(client.get("/v1/reason"), 405, "method_not_allowed")


def test_retrieval_is_served_while_a_reason_waits_for_the_model(client, service):
    with service.model_lock:
        waiting = threading.Thread(target=client.post, args=("/v1/reason",), kwargs={"json": {"query": QUESTION}})
        waiting.start()
        wait_until(lambda: client.app.state.reason_queue.in_flight == 1, "the question to queue for the model")
        r = client.post("/v1/deep_search", json={"query": "Black Death"})
        assert r.status_code == 200 and waiting.is_alive()
    finished(waiting, "the question, once the model was free")


# ---------------------------------------------------------------- health, OpenAPI, no web page


def test_health_answers_with_counts_and_version(client):
    data = client.get("/v1/health").json()["data"]
    assert data["status"] == "ready" and data["modelsLoaded"] is True and data["modelError"] is None
    assert data["library"]["documents"] == 5 and data["library"]["collections"] == 1 and data["version"]


def test_openapi_is_served_and_no_page_loads_from_the_internet(client):
    doc = client.get("/openapi.json").json()
    assert {"/v1/reason", "/v1/find_items", "/v1/deep_search", "/v1/deep_read", "/v1/deep_expand",
            "/v1/health", "/v1/collections", "/v1/instance"} <= set(doc["paths"])  # fmt: skip
    reason = doc["paths"]["/v1/reason"]["post"]
    assert "422" not in reason["responses"] and {"200", "400", "429", "503"} <= set(reason["responses"])
    fields = doc["components"]["schemas"]["ReasonRequest"]["properties"]
    assert set(fields) == {"query", "limit", "documentId", "collectionId", "maxTokens", "includeStatements"}
    assert fields["includeStatements"]["type"] == "boolean"
    for page in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        assert_error(client.get(page), 404, "not_found")


def test_statements_collections_and_instance_for_the_cli_hand_off(client, service):
    """What `localreason search` / `ask` use when they hand a request to a running server (serve/handoff.py)."""
    plain = client.post("/v1/reason", json={"query": QUESTION}).json()["data"]
    full = client.post("/v1/reason", json={"query": QUESTION, "includeStatements": True}).json()["data"]
    assert "statements" not in plain and full["statements"] and full["statements"][0]["references"][0]["quotation"]
    assert {k: v for k, v in full.items() if k not in ("statements", "meta")} == \
        {k: v for k, v in plain.items() if k != "meta"}  # fmt: skip
    error = assert_error(client.post("/v1/reason", json={"query": QUESTION, "includeStatements": "yes"}),
                         400, "invalid_request")  # fmt: skip
    assert error["message"] == "includeStatements must be a boolean, not a string."
    assert client.get("/v1/collections").json() == {"data": [c.to_dict() for c in service.collections()]}


def test_the_instance_proves_its_token_and_never_shows_it(client, service):
    """GET /v1/instance answers HMAC(token, nonce ...) for the client's nonce: the token stays in the process."""
    token = client.app.state.instance_token
    assert len(token) >= 20
    nonces = ["n" * 16, handoff.new_nonce(), "A-b_9" * 25 + "xyz"]
    answers = [client.get("/v1/instance", params={"nonce": n}) for n in nonces]
    for nonce, r in zip(nonces, answers):
        assert r.status_code == 200 and token not in r.text
        data = r.json()["data"]
        assert set(data) == {"proof", "pid", "protocol", "version"}
        assert (data["pid"], data["protocol"], data["version"]) == (os.getpid(), handoff.PROTOCOL, __version__)
        assert data["proof"] == handoff.proof(token, nonce, os.getpid(), handoff.PROTOCOL, __version__)
    assert len({r.json()["data"]["proof"] for r in answers}) == 3
    assert handoff.proof("not-" + token, nonces[0], os.getpid(), handoff.PROTOCOL, __version__) != \
        answers[0].json()["data"]["proof"]  # fmt: skip
    for params in ({}, {"nonce": "short"}, {"nonce": "n" * 129}, {"nonce": "n" * 15 + "/"}, {"nonce": "é" * 16}):
        error = assert_error(client.get("/v1/instance", params=params), 400, "invalid_request")
        assert "nonce" in error["message"]


def test_the_instance_needs_no_key_but_a_key_sent_must_be_right(keyed, generator):
    """The hand-off proves the server before it sends the key; a request that does send one is checked as anywhere."""
    nonce = handoff.new_nonce()
    token = keyed.app.state.instance_token
    r = keyed.get("/v1/instance", params={"nonce": nonce})
    assert r.status_code == 200 and token not in r.text
    assert r.json()["data"]["proof"] == handoff.proof(token, nonce, os.getpid(), handoff.PROTOCOL, __version__)
    assert keyed.get("/v1/instance", params={"nonce": nonce}, headers={"Authorization": f"API-Key {KEY}"}).json() \
        == r.json()  # fmt: skip
    for header in ("", f"API-Key {KEY}x", KEY):
        assert_error(keyed.get("/v1/instance", params={"nonce": nonce}, headers={"Authorization": header}),
                     401, "unauthorized")  # fmt: skip
    for path in ("/v1/instance/", "/v1/health", "/v1/collections", "/openapi.json"):  # only that one path is open
        assert_error(keyed.get(path, params={"nonce": nonce}), 401, "unauthorized")
    assert_error(keyed.get("/v1/instance", params={"nonce": nonce}, headers={"Host": "evil.example"}),
                 400, "invalid_host")  # fmt: skip


def test_no_cors(client):
    r = client.options("/v1/reason", headers={"Origin": "http://localhost:3000",
                                              "Access-Control-Request-Method": "POST"})  # fmt: skip
    assert r.status_code == 405 and not any(h.startswith("access-control") for h in r.headers)
    r = client.get("/v1/health", headers={"Origin": "http://localhost:3000"})
    assert r.status_code == 200 and not any(h.startswith("access-control") for h in r.headers)


# ---------------------------------------------------------------- key, host, origin, body size


@pytest.fixture
def keyed(service):
    with TestClient(create_app(service, api_key=KEY), base_url=BASE) as c:
        yield c


@pytest.mark.parametrize("header", [f"API-Key {KEY}", f"Bearer {KEY}", f"api-key {KEY}", f"bearer  {KEY} "])
def test_the_key_in_either_header_form(keyed, header):
    assert keyed.get("/v1/health", headers={"Authorization": header}).status_code == 200
    r = keyed.post("/v1/deep_search", json={"query": "plague"}, headers={"Authorization": header})
    assert r.status_code == 200


@pytest.mark.parametrize("header", [None, "", f"API-Key {KEY}x", f"Bearer {KEY[:-1]}", KEY, f"Basic {KEY}",
                                    "API-Key", "Bearer ", "API-Key é"])  # fmt: skip
def test_a_missing_or_wrong_key_is_401_everywhere(keyed, generator, header):
    headers = {"Authorization": header.encode("utf-8")} if header is not None else {}
    for method, path in (("GET", "/v1/health"), ("GET", "/openapi.json"), ("POST", "/v1/reason")):
        r = keyed.request(method, path, json={"query": QUESTION}, headers=headers)
        assert_error(r, 401, "unauthorized")
        assert r.headers["www-authenticate"].startswith("Bearer")
    assert generator.calls == 0


@pytest.mark.parametrize("host, ok", [("127.0.0.1:8765", True), ("localhost", True), ("LOCALHOST:1", True),
                                      ("[::1]:8765", True), ("evil.example:8765", False), ("127.0.0.1.nip.io", False),
                                      ("", False)])  # fmt: skip
def test_the_host_header_is_checked_on_loopback(client, host, ok):
    r = client.get("/v1/health", headers={"Host": host})
    if ok:
        assert r.status_code == 200
    else:
        assert_error(r, 400, "invalid_host")


def test_any_host_is_accepted_when_bound_elsewhere_with_a_key(service):
    with TestClient(create_app(service, api_key=KEY, allowed_hosts=None), base_url="http://192.168.1.5:8765") as c:
        assert c.get("/v1/health", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_pages_of_other_sites_are_refused(client, generator):
    r = client.post("/v1/reason", json={"query": QUESTION}, headers={"Origin": "https://evil.example"})
    assert_error(r, 403, "forbidden_origin")
    assert_error(client.get("/v1/health", headers={"Origin": "null"}), 403, "forbidden_origin")
    assert client.get("/v1/health", headers={"Origin": "http://127.0.0.1:8765"}).status_code == 200
    assert generator.calls == 0


def test_a_huge_body_is_refused_before_it_is_read(client, service, monkeypatch):
    monkeypatch.setattr(service, "deep_search", lambda *a, **k: pytest.fail("a refused body reached the service"))
    big = json.dumps({"query": "x" * 1_100_000}).encode()
    err = assert_error(client.post("/v1/deep_search", content=big, headers={"content-type": "application/json"}), 413,
                       "payload_too_large")  # fmt: skip
    assert err["details"]["limit"] == 1_000_000

    def chunked():  # no Content-Length: the limit is counted as the body arrives
        yield b'{"query": "'
        for _ in range(30):
            yield b"x" * 50_000
        yield b'"}'

    r = client.post("/v1/deep_search", content=chunked(), headers={"content-type": "application/json"})
    assert_error(r, 413, "payload_too_large")
    assert_error(client.post("/v1/deep_search", content=b"{}", headers={"content-type": "application/json",
                                                                         "content-length": "x"}), 400, "invalid_request")  # fmt: skip


# ---------------------------------------------------------------- the reason queue and disconnects


def test_429_with_retry_after_when_the_queue_is_full(service):
    with TestClient(create_app(service, max_waiting=1), base_url=BASE) as c:
        queue, results = c.app.state.reason_queue, []
        post = lambda: results.append(c.post("/v1/reason", json={"query": QUESTION}))  # noqa: E731
        with service.model_lock:
            waiting = [threading.Thread(target=post) for _ in range(2)]
            for t in waiting:
                t.start()
            wait_until(lambda: queue.in_flight == 2, "both questions to queue for the model")
            r = c.post("/v1/reason", json={"query": QUESTION})
            err = assert_error(r, 429, "busy")
            assert int(r.headers["retry-after"]) >= 1 and err["details"]["retryAfter"] == int(r.headers["retry-after"])
            assert c.post("/v1/deep_search", json={"query": "plague"}).status_code == 200, "retrieval is not queued"
        for t in waiting:
            finished(t, "a queued question, once the model was free")
        assert [r.status_code for r in results] == [200, 200] and queue.in_flight == 0
        assert c.post("/v1/reason", json={"query": QUESTION}).status_code == 200


class BlockingGenerator(FakeGenerator):
    """Holds the model until the request is cancelled (as llama.cpp checks between tokens)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.saw_cancel = threading.Event(), threading.Event()

    def complete(self, messages, grammar, max_output, prefix="", cancel=None):
        self.entered.set()
        if cancel is not None and cancel.wait(PATIENCE):
            self.saw_cancel.set()
            raise Cancelled()
        return super().complete(messages, grammar, max_output, prefix, cancel)


async def call_and_hang_up(app, body: dict, hang_up_when) -> list[dict]:
    """Drive the ASGI app directly: send ``body``, disconnect once ``hang_up_when()`` holds; the messages sent."""
    raw = json.dumps(body).encode()
    hung_up, sent, messages = asyncio.Event(), [], [{"type": "http.request", "body": raw, "more_body": False}]

    async def receive():
        if messages:
            return messages.pop(0)
        await hung_up.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/reason", "raw_path": b"/v1/reason", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1:8765"), (b"content-type", b"application/json"),
                         (b"content-length", str(len(raw)).encode())],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8765)}  # fmt: skip
    task = asyncio.create_task(app(scope, receive, send))
    await until(hang_up_when, "the moment to hang up")
    hung_up.set()
    await asyncio.wait_for(task, PATIENCE)
    return sent


async def until(condition, what: str) -> None:
    """Let the event loop run until ``condition()`` holds; fail saying ``what`` never came after PATIENCE."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"waited {PATIENCE:g} s for {what}; it never happened"
        await asyncio.sleep(0.02)


async def test_a_client_that_hangs_up_while_waiting_cancels_its_question(service, generator, caplog):
    caplog.set_level(logging.INFO, logger="uvicorn.error")
    app = create_app(service, warm=False)
    queue = app.state.reason_queue
    service.model_lock.acquire()
    try:
        sent = await call_and_hang_up(app, {"query": QUESTION}, lambda: queue.in_flight == 1)
        # the model stays busy until the question is gone: one that waits for the model would never be
        await until(lambda: queue.in_flight == 0, "the question to be cancelled while the model is busy")
    finally:
        service.model_lock.release()
    assert sent[0]["status"] == 499 and generator.calls == 0
    assert "client disconnected" in caplog.text


async def test_a_client_that_hangs_up_while_the_model_writes_cancels_it(samples_home):
    gen = BlockingGenerator()
    svc = Service(Library(settings=load_settings(samples_home), embedder=FakeEmbedder(), generator=gen))
    try:
        app = create_app(svc, warm=False)
        sent = await call_and_hang_up(app, {"query": QUESTION}, gen.entered.is_set)
        assert gen.saw_cancel.is_set() and sent[0]["status"] == 499
        assert app.state.reason_queue.in_flight == 0 and not svc.model_lock.locked()
    finally:
        svc.close()


# ---------------------------------------------------------------- refusing to start


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "example.com"])
def test_a_non_loopback_bind_without_a_key_is_refused(host):
    with pytest.raises(ValidationError, match="without an API key") as exc:
        run(None, host=host, port=0)
    assert "LOCALREASON_API_KEY" in exc.value.hint


def test_a_short_key_is_refused(monkeypatch):
    monkeypatch.setenv("LOCALREASON_API_KEY", "short")
    with pytest.raises(ValidationError, match="too short"):
        run(None, host="0.0.0.0", port=0)


def test_a_collection_key_as_the_main_key_is_refused(monkeypatch):
    """docs/team.md: `keys add support -c handbook`, then `LOCALREASON_API_KEY=... localreason serve`: the key just
    printed, pasted there, made the handbook-only key the one that sees every collection."""
    from localreason.keys import new_key

    monkeypatch.setenv("LOCALREASON_API_KEY", new_key())
    with pytest.raises(ValidationError, match="holds a collection key") as exc:
        run(None, host="0.0.0.0", port=0)
    assert "sees only its collections" not in exc.value.message and "token_urlsafe" in exc.value.hint


def test_loopback_names():
    assert all(is_loopback(h) for h in ("127.0.0.1", "::1", "[::1]", "localhost", "127.0.0.2", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "localhost.example.com", ""))


async def test_each_connection_sends_at_once():
    """The served socket is TCP to asyncio (IPPROTO_TCP), which sets TCP_NODELAY on each connection: on a
    kept-alive connection a response's body does not wait ~40 ms behind its headers for the client's ACK
    (the hand-off's second proof is such a response)."""
    from localreason.serve.rest import bind as _bind

    sock = _bind("127.0.0.1", 0)
    loop = asyncio.get_running_loop()
    accepted = loop.create_future()

    class Keep(asyncio.Protocol):
        def connection_made(self, transport) -> None:
            accepted.set_result(transport)

    server = await loop.create_server(Keep, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        transport = await asyncio.wait_for(accepted, PATIENCE)
        assert transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        writer.close()
        transport.close()
    finally:
        server.close()


# ---------------------------------------------------------------- end to end: `localreason serve` with real models


@pytest.fixture(scope="module")
def server(tmp_path_factory, real_embedder):
    """`localreason serve` on an ephemeral loopback port, with a key, over two samples; (base URL, log path)."""
    home = tmp_path_factory.mktemp("serve-home")
    with Library(settings=load_settings(home), embedder=real_embedder) as lib:  # two samples: a quicker ingest
        lib.ingest([samples_dir() / "black_death.md", samples_dir() / "amazon_rainforest.md"], "samples")
    log = home / "server.log"
    env = {**os.environ, "LOCALREASON_HOME": str(home), "LOCALREASON_API_KEY": KEY}
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "localreason", "serve", "--port", "0"], env=env,
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        end = time.monotonic() + PATIENCE
        while not (m := re.search(r"on (http://127\.0\.0\.1:\d+)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.2)
        yield m.group(1), log
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(PATIENCE)
        except subprocess.TimeoutExpired:
            proc.kill()


def call(base: str, method: str, path: str, body: dict | None = None, key: str | None = KEY,
         timeout: float = PATIENCE) -> tuple[int, dict, dict]:  # fmt: skip
    """(status, JSON body, headers) of one HTTP request to the server."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"API-Key {key}"} if key else {})}
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


@pytest.mark.real_model
def test_served_end_to_end(server):
    base, log = server
    status, body, _ = call(base, "GET", "/v1/health")
    assert status == 200 and body["data"]["library"]["documents"] == 2, body
    status, body, _ = call(base, "POST", "/v1/deep_search", {"query": "origin of the Black Death", "limit": 3})
    assert status == 200 and body["data"][0]["documentTitle"] == "Black Death"
    status, body, _ = call(base, "POST", "/v1/reason", {"query": f" {QUESTION} ", "limit": 8, "maxTokens": 400})
    assert status == 200, body
    data = body["data"]
    assert {c["documentTitle"] for c in data["citations"]} == {"Black Death"} and data["meta"]["citationsDropped"] == 0
    assert "Central Asia" in data["answer"]
    status, body, _ = call(base, "POST", "/v1/deep_read", {"chunkId": UNKNOWN_CHUNK})
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body, _ = call(base, "GET", "/v1/health")
    assert body["data"]["status"] == "ready" and body["data"]["modelsLoaded"] is True


@pytest.mark.real_model
def test_served_question_is_cancelled_when_the_client_hangs_up(server):
    base, log = server
    host, port = base.removeprefix("http://").split(":")
    body = json.dumps({"query": QUESTION, "maxTokens": 400}).encode()
    in_flight = lambda: call(base, "GET", "/v1/health")[1]["data"]["reason"]["inFlight"]  # noqa: E731
    with socket.create_connection((host, int(port)), timeout=PATIENCE) as conn:
        conn.sendall(b"POST /v1/reason HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Authorization: Bearer " + KEY.encode() + b"\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)  # fmt: skip
        wait_until(lambda: in_flight() == 1, "the question to be in flight", step=0.05)
    wait_until(lambda: in_flight() == 0, "the question to end once the client hung up", step=0.05)
    wait_until(lambda: "cancelled: the client disconnected" in log.read_text(), "the log to say it was cancelled")


@pytest.mark.real_model
def test_served_key_is_required(server):
    base, _ = server
    assert call(base, "GET", "/v1/health", key=None)[0] == 401
    assert call(base, "POST", "/v1/reason", {"query": QUESTION}, key="wrong-" + KEY)[0] == 401
    headers = {"Authorization": f"Bearer {KEY}"}
    with urllib.request.urlopen(urllib.request.Request(base + "/v1/health", headers=headers), timeout=PATIENCE) as r:
        assert r.status == 200


def test_serve_refuses_a_non_loopback_bind_without_a_key():
    env = {k: v for k, v in os.environ.items() if k != "LOCALREASON_API_KEY"}
    out = subprocess.run([sys.executable, "-m", "localreason", "serve", "--host", "0.0.0.0", "--port", "0"], env=env,
                         capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert out.returncode != 0 and "without an API key" in out.stderr and "LOCALREASON_API_KEY" in out.stderr
