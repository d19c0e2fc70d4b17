"""A conversation with the library: the headless core the TUI drives (and a notebook could).

It keeps what a conversation has and a single request does not: the current scope,
the history of questions and answers, and Markdown export. Everything it reads or asks
goes through the :class:`~localreason.service.Service` (locks, models, other processes'
writes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .errors import ValidationError
from .reason import Answer
from .render import answer_markdown, markdown_text


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
    """Scope and history of a conversation with one library, through its :class:`Service`."""

    def __init__(self, service, *, max_tokens: int | None = None) -> None:
        from .service import Service

        self.service = service if isinstance(service, Service) else Service(service)  # a Library is wrapped
        self.scope = Scope()
        self.history: list[Turn] = []
        self.max_tokens = max_tokens
        """The evidence budget of each question; None: the answer_budget setting."""

    @property
    def library(self):
        return self.service.library

    # ------------------------------------------------------------ scope

    def scope_to(self, kind: str, id_: str) -> Scope:
        """Limit the next questions and searches to a collection or a document (checked to exist)."""
        with self.service.reading() as lib:
            if kind == "collection":
                col = lib.collection(id_)
                self.scope = Scope("collection", col.id, col.name)
            elif kind == "document":
                doc = lib.document(id_)
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
            turn.answer = self.service.reason(question, max_tokens=self.max_tokens, stage=stage, cancel=cancel,
                                              **self.scope.kwargs())  # fmt: skip
        except Exception as exc:
            turn.error = str(exc)
            raise
        finally:
            if turn.question:
                self.history.append(turn)
        return turn

    def search(self, query: str, limit: int = 10):
        """deep_search and find_items for ``query`` within the scope: (passages, documents)."""
        with self.service.reading() as lib:
            passages = lib.deep_search(query, limit=limit, **self.scope.kwargs())
            items = lib.find_items(query, limit=5) if self.scope.kind == "all" else []
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
    """A self-contained Markdown record of one answered question: the question as a heading, when and of
    what it was asked, then ``render.answer_markdown``; document-derived text renders literally."""
    a = turn.answer
    assert a is not None
    head = [f"# {markdown_text(turn.question)}", "",
            f"*Asked {turn.asked_at:%Y-%m-%d %H:%M} of {markdown_text(turn.scope.describe())} with localreason.*", ""]
    return "\n".join(head) + "\n" + answer_markdown(a) + "\n"


def elapsed_text(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {int(seconds % 60)} s"

