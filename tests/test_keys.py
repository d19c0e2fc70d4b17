"""Keys with grants (localreason/keys.py): a key sees only its collections in every tool, over REST and over MCP on
HTTP (the SDK's client); an id outside the grant is answered exactly as a missing id; the library keeps digests."""

from __future__ import annotations

import json
import sqlite3

import pytest
from starlette.testclient import TestClient

from localreason import keys
from localreason.cli import main
from localreason.config import load_settings
from localreason.errors import NotFoundError, ValidationError
from localreason.library import Library
from localreason.reason import NO_EVIDENCE_ANSWER
from localreason.serve.rest import create_app, served_hosts
from localreason.service import Service

from fakes import FakeEmbedder, FakeGenerator
from waiting import PATIENCE
from test_mcp_http import ask, mcp_server

BASE = "http://127.0.0.1:8765"
MAIN_KEY = "main-key-that-sees-everything"
OPEN = "# Router manual\n\nThe router warranty lasts two years from the date of purchase.\n"
SECRET = "# Launch plan\n\nThe zanzibar launch code is kept in the blue safe behind the painting.\n"
UNKNOWN_COLLECTION, UNKNOWN_DOC, UNKNOWN_CHUNK = "col_aaaaaaaaaaaaaaaa", "doc_aaaaaaaaaaaaaaaa", "chk_aaaaaaaaaaaaaaaa"


@pytest.fixture
def team(isolated_home, tmp_path):
    """A library of two collections, "manuals" (granted) and "plans" (not): (service, key, ids of the secret)."""
    for name, text in (("manuals", OPEN), ("plans", SECRET)):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}.md").write_text(text)
    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator()))
    svc.ingest([tmp_path / "manuals"], "manuals")
    svc.ingest([tmp_path / "plans"], "plans")
    key, _ = keys.add(svc.library, "reader", ["manuals"])
    plans = svc.collection("plans")
    doc = svc.documents("plans")[0]
    chunk = svc.library.chunks(doc.id)[-1]
    yield svc, key, {"collection": plans.id, "document": doc.id, "chunk": chunk.id}
    svc.close()


def test_keys_are_kept_as_digests_listed_without_the_key_and_removed(team, isolated_home):
    svc, key, _ = team
    assert key.startswith(keys.KEY_PREFIX) and len(key) > 40
    [info] = keys.listing(svc.library)
    assert info.name == "reader" and info.collections == ("manuals",) and key not in json.dumps(info.to_dict())
    raw = sqlite3.connect(load_settings(isolated_home).db_path).execute("SELECT * FROM api_keys").fetchall()
    assert key not in repr(raw) and keys.digest(key) in repr(raw)
    with pytest.raises(ValidationError, match="exists already"):
        keys.add(svc.library, "reader", ["plans"])
    with pytest.raises(NotFoundError, match="No collection"):
        keys.add(svc.library, "other", ["nope"])
    with pytest.raises(ValidationError, match="at least one collection"):
        keys.add(svc.library, "other", [])
    with pytest.raises(ValidationError, match="key name"):
        keys.add(svc.library, "bad name!", ["plans"])
    keys.remove(svc.library, "reader")
    assert keys.listing(svc.library) == []
    with pytest.raises(NotFoundError):
        keys.remove(svc.library, "reader")


def _rest(client, key, method, path, body=None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return client.request(method, path, json=body, headers=headers)


def test_over_rest_a_key_sees_only_its_collections_in_every_tool(team):
    svc, key, secret = team
    with TestClient(create_app(svc, api_key=MAIN_KEY, warm=False), base_url=BASE) as client:
        def call(method, path, body=None, who=key):
            return _rest(client, who, method, path, body)

        names = [c["name"] for c in call("GET", "/v1/collections").json()["data"]]
        assert names == ["manuals"]
        assert {c["name"] for c in call("GET", "/v1/collections", who=MAIN_KEY).json()["data"]} == {"manuals", "plans"}
        hits = call("POST", "/v1/deep_search", {"query": "zanzibar launch code blue safe"}).json()["data"]
        assert hits and all("zanzibar" not in h["content"] for h in hits)
        seen = call("POST", "/v1/deep_search", {"query": "zanzibar launch code", "limit": 20}, who=MAIN_KEY).json()
        assert any("zanzibar" in h["content"] for h in seen["data"])
        for field, outside, unknown in (("collectionId", secret["collection"], UNKNOWN_COLLECTION),
                                        ("documentId", secret["document"], UNKNOWN_DOC)):  # fmt: skip
            for value in (outside, unknown):
                r = call("POST", "/v1/deep_search", {"query": "zanzibar", field: value})
                assert r.status_code == 200 and r.json() == {"data": []}
                answer = call("POST", "/v1/reason", {"query": "What is the launch code?", field: value}).json()
                assert answer["data"]["answer"] == NO_EVIDENCE_ANSWER and answer["data"]["citations"] == []
        items = call("POST", "/v1/find_items", {"query": "zanzibar launch plan"}).json()["data"]
        assert all(i["id"] not in (secret["collection"], secret["document"]) for i in items)
        assert any(i["id"] == secret["document"] for i in
                   call("POST", "/v1/find_items", {"query": "Launch plan"}, who=MAIN_KEY).json()["data"])
        for path, extra in (("/v1/deep_read", {}), ("/v1/deep_expand", {"direction": "surrounding"})):
            outside = call("POST", path, {"chunkId": secret["chunk"], **extra})
            missing = call("POST", path, {"chunkId": UNKNOWN_CHUNK, **extra})
            assert outside.status_code == missing.status_code == 404
            assert outside.json()["error"]["message"].replace(secret["chunk"], "X") == \
                missing.json()["error"]["message"].replace(UNKNOWN_CHUNK, "X")  # fmt: skip
            assert call("POST", path, {"chunkId": secret["chunk"], **extra}, who=MAIN_KEY).status_code == 200
        answer = call("POST", "/v1/reason", {"query": "What is the zanzibar launch code?", "includeStatements": True})
        assert "zanzibar" not in json.dumps(answer.json())


def test_without_a_known_key_nothing_is_served_once_the_library_has_keys(team):
    svc, key, _ = team
    with TestClient(create_app(svc, warm=False), base_url=BASE) as client:  # no main key: the library's keys count
        assert _rest(client, None, "GET", "/v1/collections").status_code == 401
        assert _rest(client, "lrk_" + "x" * 43, "GET", "/v1/collections").status_code == 401
        assert _rest(client, key, "GET", "/v1/collections").status_code == 200
        keys.remove(svc.library, "reader")  # counted at once: the gate reads the library's keys on every request
        assert _rest(client, key, "GET", "/v1/collections").status_code == 200  # no keys at all: loopback is open
        keys.add(svc.library, "other", ["plans"])
        assert _rest(client, key, "GET", "/v1/collections").status_code == 401
    assert served_hosts("0.0.0.0", keyed=True) is None
    with pytest.raises(ValidationError, match="without an API key"):
        served_hosts("0.0.0.0", keyed=False)


def test_over_mcp_on_http_a_key_sees_only_its_collections_in_every_tool(team):
    svc, key, secret = team
    with mcp_server(svc, MAIN_KEY) as url:
        def call(name, args, who=key):
            return ask(url, name, args, key=who)[1]

        found = call("deep_search", {"query": "zanzibar launch code", "limit": 20})
        assert not found.is_error and all("zanzibar" not in h["content"] for h in found.structured_content["data"])
        assert call("deep_search", {"query": "zanzibar", "collectionId": secret["collection"]}).structured_content \
            == call("deep_search", {"query": "zanzibar", "collectionId": UNKNOWN_COLLECTION}).structured_content \
            == {"data": []}  # fmt: skip
        for name, extra in (("deep_read", {}), ("deep_expand", {"direction": "next"})):
            outside, missing = call(name, {"chunkId": secret["chunk"], **extra}), call(name, {"chunkId": UNKNOWN_CHUNK, **extra})
            assert outside.is_error and missing.is_error
            assert outside.content[0].text.replace(secret["chunk"], "X") == missing.content[0].text.replace(UNKNOWN_CHUNK, "X")
            assert not call(name, {"chunkId": secret["chunk"], **extra}, who=MAIN_KEY).is_error
        items = call("find_items", {"query": "Launch plan"}).structured_content["data"]
        assert all(i["id"] not in (secret["collection"], secret["document"]) for i in items)
        answer = call("reason", {"query": "What is the launch code?", "documentId": secret["document"]})
        assert answer.structured_content["data"]["answer"] == NO_EVIDENCE_ANSWER
        assert "zanzibar" not in json.dumps(call("reason", {"query": "What is the zanzibar launch code?"}).structured_content)


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_the_keys_commands(isolated_home, tmp_path, capsys):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text(OPEN)
    with Library(settings=load_settings(isolated_home), embedder=FakeEmbedder()) as lib:
        lib.ingest([tmp_path / "d"], "manuals")
    code, out, _ = run(capsys, "keys", "add", "team-a", "--collection", "manuals", "--json")
    assert code == 0, out
    data = json.loads(out)["data"]
    assert set(data) == {"name", "key", "collections"} and data["collections"] == ["manuals"]
    code, out, _ = run(capsys, "keys", "list")
    assert code == 0 and "team-a" in out and data["key"] not in out
    code, out, _ = run(capsys, "keys", "list", "--json")
    assert code == 0 and [k["name"] for k in json.loads(out)["data"]] == ["team-a"], "JSON alone, nothing after it"
    code, _, err = run(capsys, "keys", "add", "team-b", "--collection", "nope")
    assert code == 3 and "No collection 'nope'" in err
    assert run(capsys, "keys", "remove", "team-a")[0] == 0
    assert run(capsys, "keys", "remove", "team-a")[0] == 3


WHERE = "The PostgreSQL store postgresql://team:***@db.internal.example/library cannot be reached: timeout"


def test_a_granted_key_is_told_a_server_failure_happened_not_its_details(team, monkeypatch):
    """A failure of the server's own (5xx) can name the store's host and database or files on the server: the
    library's owner (the main key) reads it, a granted key is told only that it failed and where to ask."""
    from localreason.errors import LibraryError
    from localreason.serve.http import UNTOLD

    svc, key, _ = team

    def broken(*args, **kwargs):
        raise LibraryError(WHERE, hint="Check the server is running and LOCALREASON_STORE.")

    monkeypatch.setattr(svc, "deep_search", broken)
    monkeypatch.setattr(svc, "find_items", lambda *a, **k: 1 / 0)
    with TestClient(create_app(svc, api_key=MAIN_KEY, warm=False), base_url=BASE, raise_server_exceptions=False) \
            as client:  # fmt: skip
        granted = _rest(client, key, "POST", "/v1/deep_search", {"query": "router"})
        owner = _rest(client, MAIN_KEY, "POST", "/v1/deep_search", {"query": "router"})
        assert granted.status_code == owner.status_code == 500
        assert granted.json()["error"] == {"code": "library_error", "message": UNTOLD, "details": {}}
        assert owner.json()["error"]["message"] == WHERE and "db.internal" in owner.text
        bug = _rest(client, key, "POST", "/v1/find_items", {"query": "router"})
        assert bug.status_code == 500 and bug.json()["error"]["message"] == UNTOLD and "Division" not in bug.text
        assert "ZeroDivisionError" in _rest(client, MAIN_KEY, "POST", "/v1/find_items", {"query": "router"}).text
        mistake = _rest(client, key, "POST", "/v1/deep_read", {"chunkId": "nonsense"})
        assert mistake.status_code == 400 and "nonsense" in mistake.text, "a request's own fault is said in full"
    with mcp_server(svc, MAIN_KEY) as url:
        said = ask(url, "deep_search", {"query": "router"}, key=key)[1]
        assert said.is_error and said.content[0].text.endswith(UNTOLD) and "db.internal" not in said.content[0].text
        owner_said = ask(url, "deep_search", {"query": "router"}, key=MAIN_KEY)[1]
        assert owner_said.is_error and "db.internal" in owner_said.content[0].text


def test_when_the_keys_cannot_be_read_nobody_is_told_where_the_store_is(team, monkeypatch):
    from localreason.errors import LibraryError

    svc, key, _ = team
    with TestClient(create_app(svc, warm=False), base_url=BASE) as client:  # the library's keys only
        assert _rest(client, key, "GET", "/v1/collections").status_code == 200

        def unreachable(self, *args):
            raise LibraryError(WHERE)

        monkeypatch.setattr("localreason.store.db.Store.has_keys", unreachable)
        monkeypatch.setattr("localreason.store.db.Store.key_grant", unreachable)
        for who in (None, key):
            r = _rest(client, who, "GET", "/v1/collections")
            assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable", r.text
            assert "db.internal" not in r.text and "postgresql" not in r.text


@pytest.mark.parametrize("owner_still_open", [False, True])
def test_a_server_that_cannot_write_the_folder_sees_its_owner_remove_a_key(team, isolated_home, monkeypatch,
                                                                          owner_still_open):  # fmt: skip
    """A server run as a user who cannot write the library's folder opens it read-only; without the WAL's shared
    memory file it can only read the file as it is (immutable). Its owner may still write: a key removed, or a
    document, must be gone for the server too (it opens the file again when the files change). Simulated: the
    server's opens fail as they do for such a user (no read-write, no read-only without an existing -shm)."""
    from localreason.store import db as dbmod

    svc, key, secret = team
    settings = load_settings(isolated_home)
    svc.close()  # the owner's processes are gone: the log is folded into the file and removed
    real = sqlite3.connect
    shm = settings.db_path.with_name(settings.db_path.name + "-shm")

    def as_the_server(target, *args, **kwargs):
        text = str(target)
        if not text.startswith("file:"):
            raise sqlite3.OperationalError("attempt to write a readonly database")
        if "immutable=1" not in text and not shm.exists():
            raise sqlite3.OperationalError("unable to open database file")
        return real(target, *args, **kwargs)

    monkeypatch.setattr(dbmod.sqlite3, "connect", as_the_server)
    server = dbmod.Store(settings.db_path)
    monkeypatch.setattr(dbmod.sqlite3, "connect", real)
    assert server.read_only and server._seen_on_disk is not None, "opened immutable, as such a user's server is"
    assert server.key_grant(keys.digest(key)) is not None and server.document_row(secret["document"]) is not None

    owner = Library(settings=settings, embedder=FakeEmbedder())
    keys.remove(owner, "reader")
    owner.remove(secret["document"])
    if not owner_still_open:
        owner.close()
    monkeypatch.setattr(dbmod.sqlite3, "connect", as_the_server)
    served = Service(Library(settings=settings, embedder=FakeEmbedder(), generator=FakeGenerator()))
    served.library._store = server  # the server's library, opened as that user's is (its vectors not loaded)
    with pytest.raises(NotFoundError):
        served.get(secret["document"])  # what a server that never searched reads: followed too
    assert server.key_grant(keys.digest(key)) is None, "the removed key still opened the server"
    assert server.document_row(secret["document"]) is None and server.generation() >= 1
    monkeypatch.setattr(dbmod.sqlite3, "connect", real)
    if owner_still_open:
        owner.close()
    server.close()


def test_health_tells_a_models_problem_to_the_owner_only(team):
    from localreason.errors import ModelError
    from localreason.serve.http import UNTOLD

    svc, key, _ = team
    svc.warm_error = ModelError("Could not load the OpenVINO export of all-MiniLM-L6-v2 from /srv/models/x: broken.")
    with TestClient(create_app(svc, api_key=MAIN_KEY, warm=False), base_url=BASE) as client:
        granted = _rest(client, key, "GET", "/v1/health").json()["data"]["modelError"]
        owner = _rest(client, MAIN_KEY, "GET", "/v1/health").json()["data"]["modelError"]
    assert granted == {"message": UNTOLD, "hint": None} and "/srv/models" in owner["message"]


MANUALS = {f"m{i}.md": f"# Manual {i}\n\nThe router warranty lasts {i + 2} years from purchase.\n\n"
           f"Hold the reset button for {i + 5} seconds.\n" for i in range(4)}  # fmt: skip


def test_what_a_key_cannot_see_never_changes_what_it_is_answered(tmp_path, store_setting, request):
    """Two libraries alike but for one word in a collection the key is not granted ("zanzibar" or "pelican"): the
    same question with the same key gathers the same evidence, with the same verdict, and gets the same answer. The
    word counts behind rarity, the rare-word matches and the relevance guard are the grant's, so a key cannot learn
    from its answers whether a word occurs in text it cannot see."""
    from pg import fresh_database

    seen = []
    for word in ("zanzibar", "pelican"):
        store = store_setting if store_setting == "local" else fresh_database(request.getfixturevalue("pg_server"))
        home = tmp_path / word
        svc = Service(Library(settings=load_settings(home, store=store, reader="off"), embedder=FakeEmbedder(),
                              generator=FakeGenerator()))  # fmt: skip
        for name, files in (("manuals", MANUALS), ("plans", {f"s{i}.md": f"# Plan {i}\n\nThe {word} launch code is "
                                                             f"kept in safe {i}.\n" for i in range(6)})):  # fmt: skip
            (home / name).mkdir(parents=True)
            for file, text in files.items():
                (home / name / file).write_text(text)
            svc.ingest([home / name], name)
        key, _ = keys.add(svc.library, "reader", ["manuals"])
        granted = frozenset(svc.library.store.key_grant(keys.digest(key)))
        evidence = svc.progressive_search("router warranty zanzibar", grant=granted)
        answer = svc.reason("router warranty zanzibar", grant=granted).to_dict()
        seen.append(([h.content for h in evidence.hits], evidence.strong, round(evidence.relevance, 9),
                     answer["answer"].split("[[")[0], answer["meta"]["chunksGathered"], answer["gaps"]))  # fmt: skip
        svc.close()
    assert seen[0] == seen[1]


@pytest.mark.parametrize("url", [
    "postgresql://u:s3cret@h/db", "postgresql://u@h/db?password=s3cret", "postgresql://u:pa#s3cret@h/db",
    "postgresql://u:pa?s3cret@h/db", "postgresql://u:pa/s3cret@h/db", "postgresql://u:s3cret@h:notaport/db",
    "postgresql://u:s3cret@[bad/db", "postgresql://u:s3cret@h1:1,h2:2/db", "host=h password=s3cret dbname=d",
    "mysql://u:s3cret@h/db", "postgresql://u:s3cret@h/db?password=s3cret2"])
def test_no_form_of_a_store_url_shows_its_password_or_breaks_the_message(url, isolated_home, monkeypatch):
    from localreason.config import redacted_url, scrubbed

    shown = redacted_url(url)
    assert "s3cret" not in shown and "***" in shown
    assert "s3cret" not in scrubbed(f'invalid percent-encoded token: "{url}"', url)
    monkeypatch.setenv("LOCALREASON_STORE", url)
    try:
        settings = load_settings(isolated_home)
        assert "s3cret" not in settings.store_shown
    except ValidationError as exc:  # a scheme that is not postgresql: said without the password
        assert "s3cret" not in str(exc)


def test_store_copy_needs_a_library_to_copy_and_leaves_none_when_the_store_fails(isolated_home, tmp_path, capsys):
    code, _, err = run(capsys, "store", "copy", "--to", "postgresql://u:s3cret@127.0.0.1:1/db")
    assert code == 5 and "There is no library" in err and "s3cret" not in err
    code, _, err = run(capsys, "--home", str(tmp_path / "empty"), "store", "copy", "--from",
                       "postgresql://u:s3cret@127.0.0.1:1/db")  # fmt: skip
    assert code == 5 and "cannot be reached" in err and "s3cret" not in err
    assert not (tmp_path / "empty" / "library.sqlite3").exists(), "a failed copy leaves no empty library behind"


async def test_a_key_check_waiting_on_the_database_holds_up_only_its_own_request():
    """The gate reads a library key from the store (which may be slow: a database restarting) off the event loop,
    so other requests (the main key's, /openapi.json's) are answered meanwhile."""
    import asyncio
    import threading

    from localreason.keys import KeyCheck
    from localreason.serve.http import Gate

    main_answered = threading.Event()

    class SlowStore:
        """Answers the library key only once the main key's request has been answered: a gate that read it on
        the event loop would hold that answer up, and this one would give up waiting (PATIENCE) first."""

        def has_keys(self):
            return True

        def key_grant(self, digest):
            main_answered.wait(PATIENCE)
            return ["col_aaaaaaaaaaaaaaaa"]

    answered: list = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    gate = Gate(app, keys=KeyCheck(MAIN_KEY, lambda: SlowStore()), allowed_hosts=None, max_body=1000)

    async def request(name: str, token: str) -> None:
        scope = {"type": "http", "path": "/v1/collections", "method": "GET",
                 "headers": [(b"authorization", f"Bearer {token}".encode())]}  # fmt: skip

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                answered.append((name, message["status"]))
                if name == "main":
                    main_answered.set()

        await gate(scope, receive, send)

    await asyncio.gather(request("granted", "lrk_" + "a" * 43), request("main", MAIN_KEY))
    assert answered == [("main", 200), ("granted", 200)], "the main key's request waited for the other's key check"
