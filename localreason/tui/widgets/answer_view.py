"""The answer pane: the question, statements with citation markers, sources, limitations and meta.

The rows are built here from a :class:`~localreason.session.Turn` and its answer.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input, ListItem, ListView, Static

from ...reason import NO_EVIDENCE_ANSWER
from ...render import LIMITATIONS, META, RECOGNIZED_MARK, SOURCES, quotation_parts, section, sections

WELCOME = (
    "Ask a question about your documents and press Enter.\n\n"
    "Every statement in an answer is a quotation checked word for word against the cited passage. "
    "Select a statement or a source (↑ ↓ Enter, a click, or its number) to read it in its document.\n\n"
    "F1 help · F3 search · F6 add files · Enter on the library tree scopes questions to a collection or document."
)


class RefItem(ListItem):
    """A list row that opens citation ``ref`` (a statement or a source)."""

    def __init__(self, body, ref: int) -> None:
        super().__init__(Static(body, markup=False))
        self.ref = ref


class NoteItem(ListItem):
    """A row that is read, not selected."""

    def __init__(self, body, classes: str = "") -> None:
        super().__init__(Static(body, markup=False), classes=classes, disabled=True)


# ---------------------------------------------------------------- rows of an answer


def answer_items(turn) -> tuple[list[ListItem], list]:
    """The rows that show ``turn``, and its sources (``render.Source``: reference, document title, answer phrase)
    in marker order.

    The sources, limitations and meta line are those of ``render.sections``, like every other form of an answer.
    """
    a = turn.answer
    parts = sections(a)
    sources = section(parts, SOURCES)
    items: list[ListItem] = [NoteItem(Text.assemble(("Q ", "bold"), turn.question,
                                                    (f"   ({turn.scope.describe()})", "dim")), classes="question")]  # fmt: skip
    if a.no_evidence:
        items.append(NoteItem(Text(NO_EVIDENCE_ANSWER, style="italic"), classes="no-evidence"))
        items.append(NoteItem(Text("Try other words, widen the scope (Ctrl+X), or add documents (F6).",
                                   style="dim"), classes="hint"))  # fmt: skip
    else:
        items += _statement_items(a, sources)
        items += _source_items(sources)
    gaps = section(parts, LIMITATIONS)
    if gaps:
        items.append(NoteItem(Text(LIMITATIONS, style="bold"), classes="heading"))
        items += [NoteItem(Text("• " + g), classes="gap") for g in gaps]
    items += [NoteItem(Text(line, style="dim"), classes="meta") for line in section(parts, META)]
    return items, list(sources)


def _statement_items(a, sources) -> list[ListItem]:
    """One row per statement, followed by the markers of its sources (``render.Source`` numbers); a statement
    with an answer phrase leads with the phrase, bold, its sentence under it; a statement that speaks for one
    side of a disagreement leads with its side's letter and source (``side_label``)."""
    items: list[ListItem] = []
    for i, st in enumerate(a.statements):
        numbers = [s.number for s in sources if s.statement == i]
        body = Text(st.phrase.text, style="bold") if st.phrase is not None else Text(st.text)
        if st.side is not None:
            body = Text.assemble((side_label(st.side), "bold magenta"), "\n", body)
        for n in numbers:
            body.append(" ")
            body.append(f"[{n}]", style="bold reverse")
        if st.phrase is not None:  # the answer phrase leads; its sentence follows, as in Sources
            body.append("\n" + st.text, style="dim")
        items.append(RefItem(body, numbers[0] if numbers else 0))
    if not a.statements:
        items.append(NoteItem(Text(a.answer, style="italic")))
    return items


def side_label(side) -> str:
    """The mark of a statement that speaks for one side when the sources disagree: "Side A · “Title” says three
    years", and "(stands)" when the evidence itself settles on it."""
    stands = " (stands)" if side.stands else ""
    return f"Side {side.label} \u00b7 \u201c{side.document_title}\u201d says {side.says}{stands}"


def _source_items(sources) -> list[ListItem]:
    """The Sources heading and one row per numbered source: title, chunk id and the quotation, its answer phrase
    (``render.quotation_parts``) bold."""
    items: list[ListItem] = [NoteItem(Text(SOURCES, style="bold"), classes="heading")] if sources else []
    for s in sources:
        mark = (f"  ({RECOGNIZED_MARK})", "yellow") if s.recognized else ("", "")
        body = Text.assemble((f"[{s.number}] ", "bold"), (s.title, "bold"), (f"  {s.chunk_id}", "dim"), mark, "\n",
                             *_quotation(s))  # fmt: skip
        items.append(RefItem(body, s.number))
    return items


def _quotation(source) -> list[tuple[str, str]]:
    """A source row's quotation as (text, style) parts: italic, in quotation marks, the answer phrase bold."""
    before, phrase, after = quotation_parts(source, collapsed=False)
    if not phrase:
        return [("“" + before + "”", "italic")]
    return [("“" + before, "italic"), (phrase, "bold italic"), (after + "”", "italic")]


# ---------------------------------------------------------------- the widget


class AnswerView(ListView):
    """The answer: statements with citation markers, then sources, limitations and meta.

    Enter, a click or a digit on a citation posts :class:`AnswerView.OpenReference`. Typing a
    letter here goes on in ``type_into`` (the question box), focused for the next question.
    """

    BORDER_TITLE = "Answer"
    BINDINGS = [Binding(str(n), f"open_ref({n})", show=False) for n in range(1, 10)]

    class OpenReference(Message):
        """Citation ``n`` was chosen: ``reference`` (chunk id, offsets) in the document ``title``; ``phrase``: the
        document offsets of the answer phrase inside it, or None."""

        def __init__(self, n: int, reference, title: str, phrase: tuple[int, int] | None = None) -> None:
            super().__init__()
            self.n, self.reference, self.title, self.phrase = n, reference, title, phrase

    typing = False
    """True from the first letter typed here until the question box has the focus (keys of a burst follow)."""

    def __init__(self, *, type_into: Input | None = None, **kwargs) -> None:
        super().__init__(NoteItem(WELCOME, classes="welcome"), **kwargs)
        self.type_into = type_into
        """Where typing goes (directly, so the keys of a fast burst keep their order)."""
        self.refs: list = []
        """The shown answer's sources (``render.Source``), in marker order: [1] is refs[0]."""

    async def show_turn(self, turn) -> None:
        """Show ``turn``; the first citation is selected (and the list focused) if there is one."""
        self.refs = []
        await self.clear()
        items, self.refs = answer_items(turn)
        await self.extend(items)
        first_ref = next((i for i, it in enumerate(items) if isinstance(it, RefItem)), None)
        self.index = first_ref
        if first_ref is not None and self._may_take_focus():
            self.focus()

    def _may_take_focus(self) -> bool:
        """Not while hidden (the search mode's list is on screen) nor from a box the person is typing in (their
        next question, a search): an answer that landed then took the keys that followed."""
        focused = self.app.focused
        return self.display and not (isinstance(focused, Input) and focused.value.strip())

    def action_open_ref(self, n: int) -> None:
        if not 1 <= n <= len(self.refs):
            self.notify(f"There is no citation [{n}].", severity="warning")
            return
        source = self.refs[n - 1]
        self.post_message(self.OpenReference(n, source.reference, source.title, source.document_phrase()))

    @on(ListView.Selected)
    def _selected(self, event: ListView.Selected) -> None:
        if isinstance(event.item, RefItem):
            self.action_open_ref(event.item.ref)

    def on_key(self, event) -> None:
        """Typing a letter here starts the next question: focus moves to the question box."""
        ch = event.character
        box = self.type_into
        if box is not None and ch and ch.isprintable() and (self.typing or not ch.isdigit()):
            self.typing = True
            box.focus()
            box.insert_text_at_cursor(ch)
            event.stop()
            event.prevent_default()

    def on_blur(self) -> None:
        self.typing = False
