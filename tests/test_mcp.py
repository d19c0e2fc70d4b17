"""The MCP server (``localreason mcp``).

First fast in-process tests of the contract (the SDK's in-memory client, fake models): the five
tools, their schemas, results, errors, progress and cancellation. Then end to end: the SDK's stdio
client spawns ``python -m localreason mcp`` on a library of the bundled samples, with the real
embedding and GGUF models (one server for the whole module).
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import Client

from localreason.config import load_settings
from localreason.errors import Cancelled
from localreason.ids import derived_id, random_id
from localreason.library import Library
from localreason.serve.mcp import INPUT_SCHEMAS, OUTPUT_SCHEMAS, LocalReasonMCP
from localreason.serve.models import ID_PATTERNS
from localreason.reason import NO_EVIDENCE_ANSWER
from localreason.search.navigate import DIRECTIONS
from localreason.search.scope import DEFAULT_EVIDENCE_LIMIT, DEFAULT_SEARCH_LIMIT
from localreason.service import Service
from localreason.stages import STEPS

from fakes import FakeEmbedder, FakeGenerator
from waiting import PATIENCE, wait_until

TOOLS = {"find_items", "deep_search", "deep_read", "deep_expand", "reason"}
MISSING_CHUNK = "chk_aaaaaaaaaaaaaaaa"
UNKNOWN_COLLECTION = "col_aaaaaaaaaaaaaaaa"

ROUTER = ("# Router manual\n\n## Reset\n\nPress the reset button for ten seconds to reset the router.\n\n"
          "## Warranty\n\nThe router warranty lasts two years from the date of purchase.\n")  # fmt: skip


# ---------------------------------------------------------------- in process, fake models


@pytest.fixture
def service(isolated_home, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "router.md").write_text(ROUTER)
    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator()))
    svc.ingest([docs], "work")
    yield svc
    svc.close()


@pytest.fixture
def server(service):
    return LocalReasonMCP(settings=service.settings, service=service)


def call(server: LocalReasonMCP, name: str, args: dict, progress=None):
    async def go():
        async with Client(server.mcp, mode="legacy") as client:
            return await client.call_tool(name, args, progress_callback=progress)

    return anyio.run(go)


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


def test_exactly_five_read_only_tools_with_the_spec_schemas(server):
    async def go():
        async with Client(server.mcp, mode="legacy") as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == TOOLS
    for t in tools.values():
        a = t.annotations
        assert a.read_only_hint is True and a.open_world_hint is False and a.destructive_hint is False
        assert t.input_schema["additionalProperties"] is False and t.output_schema["required"] == ["data"]
        assert len(t.description) > 100
    props = {name: t.input_schema["properties"] for name, t in tools.items()}
    assert set(props["reason"]) == {"query", "limit", "documentId", "collectionId"}  # no maxTokens over MCP
    assert set(props["deep_search"]) == {"query", "limit", "documentId", "collectionId"}
    assert set(props["find_items"]) == {"query", "limit"}
    assert props["deep_read"].keys() == {"chunkId"}
    assert props["deep_expand"]["direction"]["enum"] == list(DIRECTIONS)
    for name in ("find_items", "deep_search", "reason"):
        assert tools[name].input_schema["required"] == ["query"]
        assert props[name]["query"]["type"] == "string" and props[name]["query"]["pattern"] == r"\S"
    assert props["reason"]["limit"]["default"] == DEFAULT_EVIDENCE_LIMIT
    assert props["deep_search"]["limit"]["default"] == DEFAULT_SEARCH_LIMIT
    assert props["deep_search"]["documentId"]["pattern"] == "^doc_[a-z2-7]{16}$"
    assert props["reason"]["collectionId"]["pattern"] == "^col_[a-z2-7]{16}$"
    assert props["deep_expand"]["chunkId"]["pattern"] == "^chk_[a-z2-7]{16}$"
    assert "find_items" in tools["deep_search"].description and "reason" in tools["deep_search"].description


def test_the_id_patterns_accept_exactly_what_ids_makes():
    for kind, prefix in (("document", "doc"), ("collection", "col"), ("chunk", "chk")):
        pattern = re.compile(ID_PATTERNS[kind])
        assert all(pattern.match(random_id(prefix)) for _ in range(50))
        assert pattern.match(derived_id(prefix, "a", "b"))
        for bad in (f"{prefix}_bad", f"{prefix}_AAAAAAAAAAAAAAAA", f"{prefix}_aaaaaaaaaaaaaaa1", random_id("xyz")):
            assert not pattern.match(bad)


def test_the_schemas_name_exactly_the_parameters_of_the_tool_functions(server):
    for name, schema in INPUT_SCHEMAS.items():
        params = [p for p in inspect.signature(getattr(server, name)).parameters if p != "ctx"]
        assert set(params) == set(schema["properties"]), name
        required = [p.name for p in inspect.signature(getattr(server, name)).parameters.values()
                    if p.default is inspect.Parameter.empty]  # fmt: skip
        assert required == schema["required"], name
        jsonschema.Draft202012Validator.check_schema(schema)
        jsonschema.Draft202012Validator.check_schema(OUTPUT_SCHEMAS[name])


def test_the_schemas_come_from_the_rest_models_with_what_mcp_clients_validate():
    """Generated from serve/models.py: each argument keeps the REST field's type constraints (id patterns, the
    directions), with the stricter form MCP clients check (an integer count of at least 0, a non-blank query)."""
    from localreason.serve.models import DeepExpandRequest, DeepSearchRequest

    props = {name: schema["properties"] for name, schema in INPUT_SCHEMAS.items()}
    rest = {"deep_search": DeepSearchRequest.model_json_schema()["properties"],
            "deep_expand": DeepExpandRequest.model_json_schema()["properties"]}  # fmt: skip
    assert props["deep_search"]["documentId"]["pattern"] == rest["deep_search"]["documentId"]["pattern"]
    assert props["deep_expand"]["direction"]["enum"] == rest["deep_expand"]["direction"]["enum"]
    assert rest["deep_search"]["limit"]["type"] == "number" and "title" in rest["deep_search"]["limit"]
    for name, schema in INPUT_SCHEMAS.items():
        for arg, prop in schema["properties"].items():
            assert "title" not in prop and prop["description"], (name, arg)
            if arg in ("limit", "window"):
                assert prop["type"] == "integer" and prop["minimum"] == 0, (name, arg)
                assert f"Defaults to {prop['default']};" in prop["description"], (name, arg)
    assert all("$defs" not in json.dumps(s) and "$ref" not in json.dumps(s) for s in OUTPUT_SCHEMAS.values())
    assert OUTPUT_SCHEMAS["find_items"]["properties"]["data"]["items"]["properties"]["type"]["enum"] == \
        ["document", "collection"]  # fmt: skip


def test_each_tool_returns_data_and_a_readable_text(server):
    hits = call(server, "deep_search", {"query": "reset button", "limit": 5})
    assert not hits.is_error and "Router manual › Reset" in text(hits)
    first = hits.structured_content["data"][0]
    assert first["documentTitle"] == "Router manual" and "reset button" in first["content"]
    results = {"deep_search": hits,
               "deep_read": call(server, "deep_read", {"chunkId": first["chunkId"]}),
               "deep_expand": call(server, "deep_expand", {"chunkId": first["chunkId"], "direction": "next"}),
               "find_items": call(server, "find_items", {"query": "Router manual"}),
               "reason": call(server, "reason", {"query": "How long is the router warranty?"})}  # fmt: skip
    for name, result in results.items():
        assert not result.is_error, text(result)
        jsonschema.validate(result.structured_content, OUTPUT_SCHEMAS[name])
    assert results["deep_read"].structured_content["data"]["content"] == first["content"]
    assert "Warranty" in text(results["deep_expand"])
    assert results["find_items"].structured_content["data"][0]["title"] == "Router manual"
    answer = results["reason"].structured_content["data"]
    assert set(answer) == {"answer", "citations", "gaps", "meta"}
    assert "two years" in answer["answer"] and answer["citations"][0]["documentTitle"] == "Router manual"
    assert [line for line in text(results["reason"]).splitlines() if line.startswith("**")] == [
        "**Answer**", "**Sources**", "**Meta**"]  # fmt: skip


@pytest.mark.parametrize("name, args, words", [
    ("deep_search", {"query": "   "}, ["The query is blank.", "at least one word"]),
    ("reason", {"query": "\t\n"}, ["The query is blank."]),
    ("find_items", {"query": 5}, ["The query must be text"]),
    ("deep_search", {"query": "x", "documentId": "doc_bad"}, ["not a valid document id", "16 letters"]),
    ("reason", {"query": "x", "collectionId": "doc_aaaaaaaaaaaaaaaa"}, ["is a document id, not a collection id"]),
    ("deep_search", {"query": "x", "collectionId": None}, ["collectionId is null", "Omit unused scope fields"]),
    ("reason", {"query": "x", "documentId": ""}, ["documentId is empty", "Omit unused scope fields"]),
    ("deep_search", {"query": "x", "limit": -1}, ["cannot be negative"]),
    ("deep_read", {"chunkId": MISSING_CHUNK}, [f"No chunk {MISSING_CHUNK}", "Use an id from"]),
    ("deep_read", {"chunkId": "doc_aaaaaaaaaaaaaaaa"}, ["is a document id, not a chunk id"]),
    ("deep_expand", {"chunkId": MISSING_CHUNK, "direction": "sideways"}, ["Unknown direction 'sideways'",
                                                                         "up, down, previous, next, surrounding"]),
    ("reason", {"query": "x", "maxTokens": 100}, ["does not take maxTokens", "configured evidence budget"]),
    ("deep_read", {}, ["deep_read needs chunkId", "chunkId (required)"]),
])  # fmt: skip
def test_bad_input_says_what_was_wrong_and_what_to_do(server, name, args, words):
    result = call(server, name, args)
    assert result.is_error
    for w in words:
        assert w in text(result)
    assert text(result).strip() != f"Error executing tool {name}"  # never the SDK's bare message


def test_an_unknown_scope_is_a_scoped_no_evidence_answer_not_an_error(server, service, tmp_path):
    result = call(server, "reason", {"query": "How long is the warranty?", "collectionId": UNKNOWN_COLLECTION})
    assert not result.is_error
    assert result.structured_content["data"]["answer"] == NO_EVIDENCE_ANSWER
    assert service.library.generator.calls == 0
    hits = call(server, "deep_search", {"query": "warranty", "documentId": "doc_aaaaaaaaaaaaaaaa"})
    assert not hits.is_error and hits.structured_content["data"] == []
    assert "in the requested scope" in text(hits)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.md").write_text("# Notes\n\nThe kettle needs descaling.\n")
    other = service.ingest([tmp_path / "other"], "other").collection_id
    router = service.documents("work")[0].id
    outside = call(server, "reason", {"query": "How long is the router warranty?", "documentId": router,
                                      "collectionId": other})  # the document is not in that collection
    assert not outside.is_error and outside.structured_content["data"]["answer"] == NO_EVIDENCE_ANSWER
    assert service.library.generator.calls == 0


def test_an_unexpected_error_is_logged_and_named_in_one_line(server, service, monkeypatch, caplog):
    def broken(*a, **k):
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(service, "deep_search", broken)
    result = call(server, "deep_search", {"query": "reset"})
    assert result.is_error
    message = text(result).removeprefix("Error executing tool deep_search: ")
    assert "\n" not in message and "RuntimeError: disk on fire" in message and str(server.log_path) in message
    logged = [r for r in caplog.records if r.name == "localreason.mcp" and r.exc_info]
    assert logged and "disk on fire" in str(logged[0].exc_info[1])


def test_a_model_problem_is_reported_with_its_hint(service):
    from localreason.errors import ModelError

    service.library._generator = FakeGenerator(error=ModelError("The GGUF file /m/x.gguf is missing.",
                                                                hint="Set LOCALREASON_GENERATION_MODEL."))  # fmt: skip
    result = call(LocalReasonMCP(settings=service.settings, service=service), "reason",
                  {"query": "How long is the router warranty?"})  # fmt: skip
    assert result.is_error
    assert "The GGUF file /m/x.gguf is missing.\nSet LOCALREASON_GENERATION_MODEL." in text(result)


def test_reason_reports_its_stages_as_progress(server):
    seen = []

    async def progress(value, total, message):
        seen.append((value, total, message))

    result = call(server, "reason", {"query": "How long is the router warranty?"}, progress)
    assert not result.is_error
    values = [v for v, _, _ in seen]
    assert values == sorted(set(values)) and {t for _, t, _ in seen} == {STEPS}
    messages = [m for _, _, m in seen]
    assert "Searching the library" in messages and "Writing the answer" in messages
    assert any(m.startswith("Reading ") and "passages" in m for m in messages)


class BlockingGenerator(FakeGenerator):
    """Writes until cancelled, like llama.cpp on a long answer; records whether it saw the cancel Event."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.stopped = threading.Event()

    def complete(self, messages, grammar, max_output, prefix="", cancel=None):
        self.started.set()
        if cancel is not None and cancel.wait(2 * PATIENCE):
            self.stopped.set()
            raise Cancelled()
        raise AssertionError("never cancelled")


def test_a_cancelled_request_stops_the_model(service):
    generator = BlockingGenerator()
    service.library._generator = generator
    server = LocalReasonMCP(settings=service.settings, service=service)

    async def go():
        async with Client(server.mcp, mode="legacy") as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "reason", {"query": "How long is the router warranty?"})
                assert await anyio.to_thread.run_sync(generator.started.wait, PATIENCE), "the model never began"
                tg.cancel_scope.cancel()  # the client gives up: it sends notifications/cancelled
            assert await anyio.to_thread.run_sync(generator.stopped.wait, PATIENCE), "the model was not stopped"
            after = await client.call_tool("deep_search", {"query": "reset"})  # the server goes on serving
            return after

    assert not anyio.run(go).is_error


def test_the_server_module_imports_no_model_or_search_library_before_serving():
    code = ("import sys, localreason.serve.mcp\n"
            "print([m for m in ('numpy', 'faiss', 'torch', 'sentence_transformers', 'llama_cpp', 'textual',"
            " 'localreason.service', 'localreason.library') if m in sys.modules])")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_line_the_sdk_cannot_read_is_answered_and_the_server_goes_on(tmp_path):
    """Over real stdio: the SDK's transport only logged such a line, so the client waited for ever.
    Each gets a JSON-RPC error, with the request's id wherever the line shows one."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        "not json",
        '{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"x":"\\ud800"}}',  # a lone surrogate escape
        {"jsonrpc": "2.0", "id": "eight"},  # JSON, but neither a request nor a response
        [1, 2],
        {"id": 5, "method": 3},  # a request with a wrong field: its id is still known
        {"jsonrpc": "2.0", "id": 3, "result": "x"},  # a bad response: its id is the server's own, not answered by it
        "[" * 5000 + "]" * 5000,  # deeper than either JSON reader goes
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ]  # fmt: skip
    stdin = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode() + b"\xff\xfe{\n"
    proc = subprocess.run([sys.executable, "-m", "localreason", "mcp"], input=stdin, capture_output=True,
                          timeout=PATIENCE,
                          env={**__import__("os").environ, "LOCALREASON_HOME": str(tmp_path)})  # fmt: skip
    replies = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert proc.returncode == 0, proc.stderr
    by_id = {}
    for r in replies:
        by_id.setdefault(r.get("id"), []).append(r)
    assert "result" in by_id[1][0] and by_id[2] == [{"jsonrpc": "2.0", "id": 2, "result": {}}], "it went on"
    assert by_id[7][0]["error"]["code"] == -32700 and "surrogate" in by_id[7][0]["error"]["message"]
    assert by_id[5][0]["error"]["code"] == -32600 and 3 not in by_id and "eight" not in by_id
    nulls = sorted(r["error"]["code"] for r in by_id[None])
    assert nulls == [-32700, -32700, -32700, -32600, -32600, -32600], \
        "not JSON, the deep nesting, the undecodable bytes at the end; the array, 'eight', the bad response"
    assert "Answered an unreadable line" in (tmp_path / "logs" / "mcp.log").read_text()


# ---------------------------------------------------------------- end to end over stdio, real models

LATE_FACT = "The lighthouse on Skerry Vane is kept by Oswin Marlowe, who paints its lamp room teal every spring."


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory, real_embedder):
    """A library of the bundled samples, ingested with the real embedding model."""
    from localreason.demo import samples_dir

    home = tmp_path_factory.mktemp("mcp-home")
    lib = Library(settings=load_settings(home), embedder=real_embedder)
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    lib.close()
    return home


class StdioServer:
    """``python -m localreason mcp`` driven by the SDK's stdio client, from synchronous tests.

    The client runs in a blocking portal (its own event loop in a thread), so one server serves
    the whole module and each test calls it with plain function calls.
    """

    def __init__(self, home: Path, errlog: Path, prelude: str = "") -> None:
        self.home, self.errlog = home, errlog
        self.log_path = home / "logs" / "mcp.log"
        self.prelude = prelude
        """Python the server process runs first (to change something in it), or nothing."""

    @asynccontextmanager
    async def connect(self):
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        args = ["-m", "localreason", "mcp"] if not self.prelude else \
            ["-c", f"{self.prelude}\nimport runpy, sys\nsys.argv = ['localreason', 'mcp']\n"
                   "runpy.run_module('localreason', run_name='__main__')"]  # fmt: skip
        params = StdioServerParameters(command=sys.executable, args=args, env={"LOCALREASON_HOME": str(self.home)})
        started = time.perf_counter()
        with open(self.errlog, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                self.tools = (await session.list_tools()).tools
                self.handshake_seconds = time.perf_counter() - started
                self.session = session
                yield self

    def call(self, name: str, args: dict, progress=None):
        return self.portal.call(lambda: self.session.call_tool(name, args, progress_callback=progress))

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""


@pytest.fixture(scope="module")
def stdio_server(sample_home, tmp_path_factory):
    from anyio.from_thread import start_blocking_portal

    server = StdioServer(sample_home, tmp_path_factory.mktemp("mcp-stderr") / "stderr.txt")
    with start_blocking_portal() as portal:
        server.portal = portal
        with portal.wrap_async_context_manager(server.connect()):
            yield server


def hits_of(result) -> list[dict]:
    assert not result.is_error, text(result)
    return result.structured_content["data"]


NEVER_LOADS = """import sys, threading
class NeverLoads:  # an import of these waits for ever: the library, the models and what they are made of
    HEAVY = ("localreason.library", "localreason.service", "localreason.embed", "localreason.generate", "faiss",
             "llama_cpp", "torch", "sentence_transformers", "openvino")
    def find_spec(self, name, path=None, target=None):
        if name in self.HEAVY:
            threading.Event().wait()
sys.meta_path.insert(0, NeverLoads())"""


def test_the_stdio_handshake_waits_for_no_library_or_model(tmp_path):
    """spawn + initialize + tools/list, in a server where opening the library or loading a model never ends: the
    handshake needs neither, however slow the machine (this was a time, compared with the SDK's import)."""
    server = StdioServer(tmp_path / "home", tmp_path / "stderr.txt", prelude=NEVER_LOADS)

    async def handshake() -> set[str]:
        with anyio.fail_after(PATIENCE):  # what waits for ever ends the test here, saying so
            async with server.connect():
                return {t.name for t in server.tools}

    try:
        assert anyio.run(handshake) == TOOLS
    except TimeoutError:
        pytest.fail(f"no handshake in {PATIENCE:g} s: it waits for the library or a model ({server.log()[-2000:]})")


@pytest.mark.real_model
def test_stdio_handshake_lists_the_five_tools(stdio_server):
    print(f"handshake (spawn + initialize + tools/list): {stdio_server.handshake_seconds:.2f} s")
    tools = {t.name: t for t in stdio_server.tools}
    assert set(tools) == TOOLS
    assert "maxTokens" not in tools["reason"].input_schema["properties"]
    assert all(t.annotations.read_only_hint for t in tools.values())


@pytest.mark.real_model
def test_stdio_retrieval_tools(stdio_server):
    hits = hits_of(stdio_server.call("deep_search", {"query": "Where did the Black Death originate?", "limit": 5}))
    assert hits[0]["documentTitle"] == "Black Death"
    doc_id, chunk_id = hits[0]["documentId"], hits[0]["chunkId"]
    scoped = hits_of(stdio_server.call("deep_search", {"query": "disease", "documentId": doc_id}))
    assert scoped and {h["documentId"] for h in scoped} == {doc_id}
    read = stdio_server.call("deep_read", {"chunkId": chunk_id})
    assert not read.is_error and read.structured_content["data"]["content"] == hits[0]["content"]
    assert hits[0]["content"][:40] in text(read)
    up = stdio_server.call("deep_expand", {"chunkId": chunk_id, "direction": "up"})
    assert hits_of(up)["items"][0]["chunkId"] == hits[0]["parentId"]
    around = hits_of(stdio_server.call("deep_expand", {"chunkId": chunk_id, "direction": "surrounding"}))
    assert around["items"] and all(i["documentId"] == doc_id for i in around["items"])
    items = hits_of(stdio_server.call("find_items", {"query": "plague pandemic in medieval Europe"}))
    assert items[0]["title"] == "Black Death" and items[0]["type"] == "document"


@pytest.mark.real_model
def test_stdio_reason_answers_with_sources_and_reports_progress(stdio_server):
    seen = []

    async def progress(value, total, message):
        seen.append((value, total, message))

    result = stdio_server.call("reason", {"query": "Where did the Black Death originate?", "limit": 5}, progress)
    assert not result.is_error, text(result)
    data = result.structured_content["data"]
    assert set(data) == {"answer", "citations", "gaps", "meta"}
    assert data["answer"] != NO_EVIDENCE_ANSWER and "Black Death" in {c["documentTitle"] for c in data["citations"]}
    assert data["meta"]["citationsDropped"] == 0
    body = text(result)
    assert body.startswith("**Answer**") and "**Sources**" in body and "**Meta**" in body
    messages = [m for _, _, m in seen]
    assert "Searching the library" in messages and "Writing the answer" in messages, messages
    assert [v for v, _, _ in seen] == sorted({v for v, _, _ in seen}) and {t for _, t, _ in seen} == {STEPS}


@pytest.mark.real_model
@pytest.mark.parametrize("name, args, words", [
    ("deep_search", {"query": "  "}, "The query is blank."),
    ("reason", {"query": "x", "documentId": "doc_bad"}, "is not a valid document id"),
    ("deep_read", {"chunkId": MISSING_CHUNK}, f"No chunk {MISSING_CHUNK} in this library."),
    ("deep_expand", {"chunkId": MISSING_CHUNK, "direction": "sideways"}, "Unknown direction 'sideways'."),
])  # fmt: skip
def test_stdio_errors_are_results_that_say_what_was_wrong(stdio_server, name, args, words):
    result = stdio_server.call(name, args)
    assert result.is_error and words in text(result)


@pytest.mark.real_model
def test_stdio_unknown_collection_gives_the_scoped_no_evidence_answer(stdio_server):
    result = stdio_server.call("reason", {"query": "Where did the Black Death originate?",
                                          "collectionId": UNKNOWN_COLLECTION})  # fmt: skip
    assert not result.is_error and result.structured_content["data"]["answer"] == NO_EVIDENCE_ANSWER
    assert hits_of(stdio_server.call("deep_search", {"query": "plague", "collectionId": UNKNOWN_COLLECTION})) == []


@pytest.mark.real_model
def test_stdio_cancelled_reason_stops_and_the_server_goes_on(stdio_server):
    first = threading.Event()

    async def progress(value, total, message):
        first.set()

    before = stdio_server.log().count("reason: stopped after cancellation")
    future = stdio_server.portal.start_task_soon(
        lambda: stdio_server.session.call_tool("reason", {"query": "When did Apollo 11 land on the Moon?"},
                                               progress_callback=progress))  # fmt: skip
    assert first.wait(PATIENCE), "no progress from the question"
    future.cancel()  # the client abandons the call: it sends notifications/cancelled
    wait_until(lambda: stdio_server.log().count("reason: stopped after cancellation") > before,
               "the server to stop the question", step=0.2)  # fmt: skip
    assert "reason: cancelled by the client" in stdio_server.log()
    assert hits_of(stdio_server.call("deep_search", {"query": "Apollo 11 Moon landing"}))


@pytest.mark.real_model
def test_stdio_a_document_added_by_another_process_is_found_without_restart(stdio_server, tmp_path,
                                                                             real_embedder):  # fmt: skip
    assert hits_of(stdio_server.call("deep_search", {"query": "Who keeps the lighthouse on Skerry Vane?"}))
    late = tmp_path / "late"
    late.mkdir()
    (late / "lighthouse.md").write_text(f"# Skerry Vane lighthouse\n\n## Keeper\n\n{LATE_FACT}\n")
    for n in range(6):  # some bulk, so the searches below overlap the other process's write
        (late / f"log{n}.md").write_text(f"# Log {n}\n\n" + "The tide came in at dawn and left at dusk. " * 40)
    other = Library(settings=load_settings(stdio_server.home), embedder=real_embedder)  # this test's process
    writer = threading.Thread(target=lambda: other.ingest([late], "late"))
    writer.start()
    while writer.is_alive():  # reads during the write: no error, no "database is locked"
        hits_of(stdio_server.call("deep_search", {"query": "Black Death origin"}))
    writer.join()
    other.close()
    hits = hits_of(stdio_server.call("deep_search", {"query": "Who keeps the lighthouse on Skerry Vane?"}))
    assert hits[0]["documentTitle"] == "Skerry Vane lighthouse"
    items = hits_of(stdio_server.call("find_items", {"query": "late"}))
    assert any(i["type"] == "collection" and i["title"] == "late" for i in items)


@pytest.mark.real_model
def test_stdio_a_second_server_on_the_same_library_serves_beside_the_first(stdio_server, tmp_path):
    hit = hits_of(stdio_server.call("deep_search", {"query": "Apollo 11 Moon landing", "limit": 1}))[0]
    second = StdioServer(stdio_server.home, tmp_path / "stderr2.txt")
    second.portal = stdio_server.portal
    with stdio_server.portal.wrap_async_context_manager(second.connect()):
        read = second.call("deep_read", {"chunkId": hit["chunkId"]})
        assert not read.is_error and read.structured_content["data"]["content"] == hit["content"]
        assert hits_of(stdio_server.call("deep_expand", {"chunkId": hit["chunkId"], "direction": "up"}))["items"]
        assert hits_of(second.call("deep_expand", {"chunkId": hit["chunkId"], "direction": "up"}))["items"]


@pytest.mark.real_model
def test_stdio_only_the_protocol_on_stdout_and_native_output_in_the_log(stdio_server):
    """Run last: by now both models have loaded and llama.cpp has run in the server."""
    stderr = stdio_server.errlog.read_text().splitlines()
    assert len(stderr) == 1 and stderr[0].startswith("localreason MCP server: library "), stderr
    assert "Serving" in stdio_server.log()  # Python logging and native libraries' fd 2 go to the log file
