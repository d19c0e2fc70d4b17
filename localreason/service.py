"""The service: what every front end (CLI, TUI, MCP server, REST API) calls.

    service = Service.open()                 # LOCALREASON_HOME or the per-user library
    service.warm()                           # optional: load the models in the background now
    hits = service.deep_search("warranty")
    answer = service.reason("How long is the warranty?", stage=print, cancel=threading.Event())

It owns what a front end must not re-implement:

- **The models**, loaded on first use, or ahead of it in the background (``warm``), so a server
  can answer its handshake before they are ready.
- **The locks.** Many readers or one writer inside this process (the FAISS index and the SQLite
  connection are shared by all threads); the library's file lock orders writers across
  processes; one llama.cpp call at a time. An ingest or sync holds the writer's turn only while
  it changes rows and vectors, not while it reads and embeds files; a watch's batch of changes
  holds it throughout (a search sees the whole batch or none of it).
- **Other processes' writes.** Before each read, if another process (an ingest in a shell, a
  second server) changed the library, the vector index catches up, so no search answers from
  a stale index; the index applies changes and searches one at a time.
- **Cancellation.** ``reason`` takes an Event; setting it stops the request while it waits (for
  a writer, for the model, for the models to load), at the next stage boundary, or inside
  llama.cpp between two tokens.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

from . import search
from .library import DEFAULT_COLLECTION, Library
from .errors import Cancelled
from .stages import Stage, StageCallback, reporter


class ReadWriteLock:
    """Many readers or one writer. Writers wait for readers to finish and block new ones."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def _wait(self, blocked, cancel) -> None:
        """Wait (holding the condition) until ``blocked()`` is false; raise Cancelled once ``cancel`` is set."""
        while blocked():
            if cancel is not None and cancel.is_set():
                raise Cancelled()
            self._cond.wait(0.1 if cancel is not None else None)

    @contextmanager
    def read(self, cancel: threading.Event | None = None):
        with self._cond:
            self._wait(lambda: self._writer or self._writers_waiting, cancel)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self, cancel: threading.Event | None = None):
        held = False
        try:
            with self._cond:
                self._writers_waiting += 1
                try:
                    self._wait(lambda: self._writer or self._readers, cancel)
                finally:
                    self._writers_waiting -= 1
                    self._cond.notify_all()
                self._writer = held = True
            yield
        finally:
            if held:  # given back whatever ends the write, an interrupt between taking it and writing included
                with self._cond:
                    self._writer = False
                    self._cond.notify_all()

    @property
    def writing(self) -> bool:
        return self._writer or self._writers_waiting > 0


class Service:
    """One library served to any number of threads. See the module docstring."""

    def __init__(self, library: Library) -> None:
        self.library = library
        library.catch_up_on_use = False  # done once per read, in ``reading``
        self.lock = ReadWriteLock()
        self.model_lock = threading.Lock()
        """One llama.cpp call at a time: the model and its context are not shared between calls."""
        self._warming: threading.Thread | None = None
        self.warm_error: BaseException | None = None
        """What went wrong loading the models in the background; the first request that needs them says it."""

    @classmethod
    def open(cls, home: str | Path | None = None, **kwargs) -> "Service":
        return cls(Library(home, **kwargs))

    @property
    def settings(self):
        return self.library.settings

    def close(self) -> None:
        """Close the library once this process's write (an ingest between two of its turns) has finished."""
        with self.library.own_write_done(), self.lock.write():
            self.library.close()

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ reading

    @contextmanager
    def reading(self, cancel: threading.Event | None = None):
        """Read access to the library, its vector index first brought in step with the database.

        Catching up does not wait for other readers: the index applies a change and answers a search
        one at a time (its own lock), and a search meeting a row deleted meanwhile drops it. So a
        read waits only behind a write of this process: a watch's batch, or one group of an ingest's
        documents (and, as writers go first, behind the reads that group waits for, an answer being
        written among them). A library opened immutable is opened again first if its files changed.
        """
        with self.lock.read(cancel):
            self.library.store.follow_disk()
            if self.library.stale():
                self.library.catch_up()
            yield self.library

    def collections(self, *, grant=None):
        with self.reading() as lib:
            return lib.collections(grant=grant)

    def documents(self, collection: str | None = None):
        with self.reading() as lib:
            return lib.documents(collection)

    def collection(self, id_or_name: str):
        with self.reading() as lib:
            return lib.collection(id_or_name)

    def get(self, any_id: str):
        with self.reading() as lib:
            return lib.get(any_id)

    def find_items(self, query: str, **kwargs):
        with self.reading() as lib:
            return lib.find_items(query, **kwargs)

    def deep_search(self, query: str, **kwargs):
        with self.reading() as lib:
            return lib.deep_search(query, **kwargs)

    def deep_read(self, chunk_id: str, *, grant=None):
        with self.reading() as lib:
            return lib.deep_read(chunk_id, grant=grant)

    def deep_expand(self, chunk_id: str, direction: str, **kwargs):
        with self.reading() as lib:
            return lib.deep_expand(chunk_id, direction, **kwargs)

    def evidence_packet(self, query: str, **kwargs):
        with self.reading() as lib:
            return lib.evidence_packet(query, **kwargs)

    def gathered(self, query: str, **kwargs):
        with self.reading() as lib:
            return lib.gathered(query, **kwargs)

    def progressive_search(self, query: str, **kwargs):
        with self.reading() as lib:
            return lib.progressive_search(query, **kwargs)

    # ------------------------------------------------------------ answering

    def reason(self, query: str, *, stage: StageCallback | None = None, cancel: threading.Event | None = None,
               **kwargs):  # fmt: skip
        """``Library.ask`` for any thread: waits its turn for the model, loads it if needed, reports stages.

        ``kwargs`` are ask's: document_id, collection_id, limit, max_tokens (None: the answer_budget setting).
        """
        say = reporter(stage, cancel)
        if self.lock.writing or self.model_lock.locked():
            say(Stage.WAITING)
        self._check(query, kwargs, cancel)
        with self._model_turn(cancel), self.reading(cancel) as lib:  # queued questions hold no lock
            self._load_models(say, cancel)
            return lib.ask(query, stage=stage, cancel=cancel, **kwargs)

    def _check(self, query: str, kwargs: dict, cancel: threading.Event | None) -> None:
        """Refuse a malformed request at once, not after waiting for the model behind other questions."""
        search.clean_query(query)
        search.clamp_limit(kwargs.get("limit"), search.DEFAULT_EVIDENCE_LIMIT, search.MAX_EVIDENCE_LIMIT)
        if kwargs.get("max_tokens") is not None:
            search.clean_max_tokens(kwargs["max_tokens"])
        with self.reading(cancel) as lib:
            search.resolve_scope(lib.index, kwargs.get("document_id", search.UNSET),
                                 kwargs.get("collection_id", search.UNSET), kwargs.get("grant"))  # fmt: skip

    @contextmanager
    def _model_turn(self, cancel: threading.Event | None):
        """The model lock, given up waiting for as soon as ``cancel`` is set."""
        while not self.model_lock.acquire(timeout=0.1):
            reporter(None, cancel)(Stage.WAITING)  # raises Cancelled once cancel is set
        try:
            yield
        finally:
            self.model_lock.release()

    def _load_models(self, say, cancel: threading.Event | None) -> None:
        """Load what is not loaded yet, saying so (they load lazily, so a front end's first screen is fast)."""
        warming = self._warming
        if warming is not None and warming.is_alive():
            say(Stage.LOADING_GENERATOR if getattr(self.library.embedder, "loaded", True) else Stage.LOADING_EMBEDDER)
            while warming.is_alive():
                warming.join(0.1)
                if cancel is not None and cancel.is_set():
                    raise Cancelled()
        embedder = self.library.embedder
        if not getattr(embedder, "loaded", True):
            say(Stage.LOADING_EMBEDDER)
            embedder.embed(["warm up"])
        generator = self.library.generator
        if not getattr(generator, "loaded", True):
            say(Stage.LOADING_GENERATOR)
            generator.context_size  # noqa: B018 - loads the GGUF file
        self.warm_error = None  # whatever failed in the background works now

    def warm(self, *, generator: bool = True, background: bool = True) -> None:
        """Load the models now instead of on the first request (in a background thread by default).

        A failure is kept in ``warm_error`` and not raised here: the request that needs the model
        meets the same failure with its message.
        """

        def load() -> None:
            try:
                self.library.embedder.embed(["warm up"])
                if generator:
                    self.library.generator.context_size  # noqa: B018 - loads the GGUF file
            except BaseException as exc:  # noqa: BLE001 - reported by the first request that needs the model
                self.warm_error = exc

        if not background:
            load()
            return
        if self._warming is None or (not self._warming.is_alive() and self.warm_error is not None):
            self.warm_error = None  # try again
            self._warming = threading.Thread(target=load, name="localreason-warm", daemon=True)
            self._warming.start()

    @property
    def ready(self) -> bool:
        """Whether both models are loaded (a request will not wait for them)."""
        return self.library.models_loaded()

    # ------------------------------------------------------------ writing

    @contextmanager
    def _writing(self, what: str):
        """The library's writer lock, then this process's write lock: waiting for another program's write (an
        ingest in a shell, while a watch of this process has a change to apply) holds no search up, only the
        write itself does. Every write takes the two in this order, so two of this process's never deadlock."""
        with self.library.writing(what), self.lock.write():
            yield self.library

    @contextmanager
    def _writing_in_turns(self, what: str):
        """The library's writer lock for the whole write, this process's write lock only while rows and vectors
        change (``Library.in_turns``): an ingest of a large folder (a watch catching up at start, or the TUI
        adding one) reads, parses and embeds its files while this process's searches and answers go on."""
        with self.library.writing(what), self.library.in_turns(self.lock.write):
            yield self.library

    def ingest(self, paths, collection: str = DEFAULT_COLLECTION, **kwargs):
        with self._writing_in_turns(f"ingest into {collection!r}"):
            return self.library.ingest(paths, collection, **kwargs)

    def sync(self, collection: str | None = None, **kwargs):
        with self._writing_in_turns("sync"):
            return self.library.sync(collection, **kwargs)

    def refresh(self, collection: str, changed, gone=(), progress=None):
        """``Library.refresh`` (a watcher's changes, watch.py): searches see the library before or after them."""
        with self._writing(f"watch: changes in {collection!r}"):
            return self.library.refresh(collection, changed, gone, progress)

    def forget_vanished(self, collection: str | None = None):
        with self._writing("remove the documents of vanished folders"):
            return self.library.forget_vanished(collection)

    def remove(self, target: str):
        with self._writing("remove"):
            return self.library.remove(target)

    def reindex(self, **kwargs):
        with self._writing("reindex"):
            return self.library.reindex(**kwargs)
