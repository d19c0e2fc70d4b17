"""A conversation with the library: the headless core the TUI drives (and a notebook could).

It owns what a front end should not re-implement: the current scope, the history of
questions and answers, Markdown export, and the locking that lets slow work run in
threads. The Library's SQLite connection and FAISS index allow many readers but
only one writer at a time, so searches and questions share a read lock and
ingestion, removal and re-sync take the write lock; the GGUF model serves one
request at a time.
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .errors import ValidationError
from .reason import DEFAULT_ANSWER_BUDGET, Answer, markdown_body, markdown_text, reporter


class ReadWriteLock:
    """Many readers or one writer. Writers wait for readers to finish and block new ones."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self):
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self):
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()

    @property
    def writing(self) -> bool:
        return self._writer


@dataclass(frozen=True)
class Scope:
    """What questions and searches are limited to: everything, one collection or one document."""

    kind: str = "all"
    """``all``, ``collection`` or ``document``."""
    id: str = ""
    label: str = ""

    def kwargs(self) -> dict:
        if self.kind == "collection":
            return {"collection_id": self.id}
        if self.kind == "document":
            return {"document_id": self.id}
        return {}

    def describe(self) -> str:
        if self.kind == "all":
            return "the whole library"
        return f"{self.kind} {self.label}"


@dataclass
class Turn:
    """One question of the session and what came of it."""

    question: str
    scope: Scope
    answer: Answer | None = None
    error: str = ""
    asked_at: datetime = field(default_factory=datetime.now)


class Session:
    """Scope, history and locking around one :class:`~localreason.library.Library`."""

    def __init__(self, library, *, max_tokens: int | None = None) -> None:
        self.library = library
        self.lock = ReadWriteLock()
        self.model_lock = threading.Lock()
        self.scope = Scope()
        self.history: list[Turn] = []
        self.max_tokens = max_tokens or DEFAULT_ANSWER_BUDGET

    # ------------------------------------------------------------ scope

    def scope_to(self, kind: str, id_: str) -> Scope:
        """Limit the next questions and searches to a collection or a document (checked to exist)."""
        with self.lock.read():
            if kind == "collection":
                col = self.library.collection(id_)
                self.scope = Scope("collection", col.id, col.name)
            elif kind == "document":
                doc = self.library.document(id_)
                self.scope = Scope("document", doc.id, doc.title)
            else:
                raise ValidationError(f"Cannot scope to a {kind}.", hint="Choose a collection or a document.")
        return self.scope

    def clear_scope(self) -> Scope:
        self.scope = Scope()
        return self.scope

    # ------------------------------------------------------------ questions and searches

    def ask(self, question: str, *, stage=None, cancel=None) -> Turn:
        """Answer ``question`` within the current scope; the turn is recorded in the history either way."""
        turn = Turn(question.strip(), self.scope)
        try:
            with self.lock.read(), self.model_lock:
                self._warm(stage, cancel)
                turn.answer = self.library.ask(question, max_tokens=self.max_tokens, stage=stage, cancel=cancel,
                                               **self.scope.kwargs())  # fmt: skip
        except Exception as exc:
            turn.error = str(exc)
            raise
        finally:
            if turn.question:
                self.history.append(turn)
        return turn

    def _warm(self, stage, cancel) -> None:
        """Load the models the first time, saying so (they load lazily, so the first screen is fast)."""
        say = reporter(stage, cancel)
        embedder = self.library.embedder
        if not getattr(embedder, "loaded", True):
            say("loading-embedder")
            embedder.embed(["warm up"])
        generator = self.library.generator
        if not getattr(generator, "loaded", True):
            say("loading-generator")
            generator.context_size  # noqa: B018 - loads the GGUF file

    def search(self, query: str, limit: int = 10):
        """deep_search and find_items for ``query`` within the scope: (passages, documents)."""
        with self.lock.read():
            passages = self.library.deep_search(query, limit=limit, **self.scope.kwargs())
            items = self.library.find_items(query, limit=5) if self.scope.kind == "all" else []
        return passages, [i for i in items if i.type == "document"]

    # ------------------------------------------------------------ export

    def export(self, turn: Turn, path: str | Path) -> Path:
        """Write ``turn`` as Markdown (question, answer, sources with quotations, limitations, meta)."""
        if turn.answer is None:
            raise ValidationError("This question has no answer to export.", hint="Ask it again first.")
        target = Path(path).expanduser()
        if target.is_dir():
            target = target / default_export_name(turn)
        if target.suffix.lower() not in (".md", ".markdown"):
            target = target.with_suffix(target.suffix + ".md") if target.suffix else target.with_suffix(".md")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(markdown(turn), encoding="utf-8")
        return target


def default_export_name(turn: Turn) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", turn.question.lower()).strip("-")[:50] or "answer"
    return f"{turn.asked_at:%Y%m%d-%H%M%S}-{slug}.md"


def markdown(turn: Turn) -> str:
    """A self-contained Markdown record of one answered question; document-derived text renders literally."""
    a = turn.answer
    assert a is not None
    head = [f"# {markdown_text(turn.question)}", "",
            f"*Asked {turn.asked_at:%Y-%m-%d %H:%M} of {markdown_text(turn.scope.describe())} with localreason.*", ""]
    return "\n".join(head + markdown_body(a)) + "\n"


def elapsed_text(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {int(seconds % 60)} s"

