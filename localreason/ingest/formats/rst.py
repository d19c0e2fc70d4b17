"""reStructuredText, through docutils, with Sphinx's roles and directives read for the text they show.

docutils parses the source (sections, paragraphs, lists, definition and field lists, tables,
literal and doctest blocks, footnotes); the roles and directives that Sphinx adds, and any others
docutils does not know, are read generically here for what a reader of the rendered page sees:

- a role shows its explicit title (``:meth:`accept() <socket.socket.accept>``` -> ``accept()``),
  else its target as Sphinx writes it (``~a.b`` -> ``b``; ``:func:`f``` -> ``f()``; ``:pep:`8``` ->
  ``PEP 8``);
- an object description (``.. function::``, ``.. class::``, ``.. c:function::``, any unknown
  directive) shows its signature lines, with the module prefix Sphinx adds, then its body;
- ``versionadded``/``versionchanged``/``deprecated`` show Sphinx's label ("Changed in version 3.2:");
  admonitions show their title ("Note", "See also");
- directives that show nothing of their own (``index``, ``toctree``, ``highlight``, authors, test
  set-up, ``include`` and ``raw``, which are never followed) are left out.

Paragraphs are stored as one line each: a line break inside a reST paragraph carries no meaning,
so a quotation never starts where a source line happened to wrap. A source docutils cannot parse
at all (nested past Python's recursion limit, say) is read as plain text, with a note.
"""

from __future__ import annotations

import io
import re
import threading
from pathlib import Path

from ..document import ParsedDocument, TextBuilder, decode_text, finish, list_number, normalize

_SETTING = "localreason_rst"
"""Set on the settings of the documents we parse: docutils' directive lookup is only ours for them."""

# Roles whose text is not a cross-reference target (so "a <b>" is literal text, not title and target).
_LITERAL_ROLES = frozenset("samp kbd file command program guilabel menuselection abbr dfn math regexp mimetype "
                           "makevar manpage newsgroup mailheader".split())  # fmt: skip
_CALLABLE_ROLES = frozenset(("func", "meth", "c:func", "c:macro", "cpp:func"))
_DOCUTILS_ROLES = frozenset("emphasis strong literal code sub sup subscript superscript title-reference title t "
                            "math".split())  # fmt: skip
_OBJECT_ROLES = frozenset("func meth class mod attr data exc const obj".split())
"""Roles that name a Python object (``py:`` or not): their full dotted name is searchable (``role_name``)."""
_EXPLICIT_TITLE = re.compile(r"^(.+?)\s*(?<!\x00)<([^<]*?)>$", re.DOTALL)  # Sphinx's; linear on a run of "<"

# Directives that show nothing of their own on the rendered page.
_HIDDEN = frozenset("role default-role index toctree highlight sectionauthor moduleauthor codeauthor tabularcolumns testsetup "
                    "testcleanup raw include literalinclude program cmdoption-group default-domain "
                    "py:currentmodule currentmodule c:namespace c:namespace-push c:namespace-pop todo "
                    "audit-event-table limited-api-list miscnews graphviz digraph contents sectnum "
                    "meta".split())  # fmt: skip
_LITERAL = frozenset("code-block sourcecode code doctest testcode testoutput productionlist "
                     "parsed-literal".split())  # fmt: skip
_ADMONITIONS = {"attention": "Attention", "caution": "Caution", "danger": "Danger", "error": "Error", "hint": "Hint",
                "important": "Important", "note": "Note", "tip": "Tip", "warning": "Warning"}  # fmt: skip
_NESTED = frozenset("only ifconfig hlist glossary centered container compound tabs tab".split())
# docutils' own directives that do the right thing with file insertion and raw output off.
_BUILTIN = frozenset("table csv-table list-table image figure topic sidebar rubric epigraph highlights pull-quote "
                     "line-block compound container math replace unicode date title admonition attention caution "
                     "danger error hint important note tip warning".split())  # fmt: skip
# ("role" and "default-role" are hidden instead: docutils' would change its roles for the whole process.)
_INFO_FIELDS = {"param": "Parameters", "parameter": "Parameters", "arg": "Parameters", "argument": "Parameters",
                "key": "Parameters", "keyword": "Parameters", "type": "", "raises": "Raises", "raise": "Raises",
                "except": "Raises", "exception": "Raises", "var": "Variables", "ivar": "Variables",
                "cvar": "Variables", "returns": "Returns", "return": "Returns", "rtype": "Return type",
                "vartype": ""}  # fmt: skip
_METADATA_FIELDS = frozenset(("tocdepth", "nocomments", "orphan", "nosearch", "meta", "hide-toc", "audience"))

_lock = threading.Lock()
_installed = False


def parse_rst(data: bytes, path: Path) -> ParsedDocument:
    """reStructuredText -> the text a reader of the rendered page sees, with its section structure."""
    notes: list[str] = []
    source = re.sub("[\ue000-\ue002]", "", normalize(decode_text(data, notes)))  # the marks' characters
    try:
        doctree = _parse(source, path)
        builder = _NamedText(doctree.settings.localreason_names)
        _Writer(builder, doctree).walk(doctree, 0)
    except (RecursionError, _RstError) as exc:
        from .plain import parse_plain

        parsed = parse_plain(data, path, "text")
        parsed.format = "rst"
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        parsed.notes.append(f"could not be read as reStructuredText ({why}): read as plain text, "
                            "so its markup is left as written")  # fmt: skip
        return parsed
    parsed = finish(builder, path, "rst", notes)
    parsed.index_terms = builder.spans
    return parsed


class _RstError(Exception):
    """docutils failed on the source in a way it does not report as a message."""


def _parse(source: str, path: Path):
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    _install()
    settings = get_default_settings(Parser)
    for name, value in {"report_level": 5, "halt_level": 5, "warning_stream": io.StringIO(),
                        "file_insertion_enabled": False, "raw_enabled": False, "syntax_highlight": "none",
                        "line_length_limit": max(10_000, len(source) + 1), "character_level_inline_markup": False,
                        "pep_references": False, "rfc_references": False, "smart_quotes": False,
                        "input_encoding": "unicode", _SETTING: True,
                        "localreason_labels": _section_labels(source), "localreason_names": []}.items():  # fmt: skip
        setattr(settings, name, value)
    document = new_document(str(path), settings)
    try:
        Parser(inliner=_inliner()).parse(source, document)
    except RecursionError:
        raise
    except Exception as exc:  # docutils raises on some malformed input instead of reporting it
        raise _RstError(f"{exc.__class__.__name__}: {str(exc)[:200]}") from exc
    return document


_LABEL = re.compile(r"^\.\. _([^:`][^:]*|`[^`]+`):[ \t]*$")
_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")


def _section_labels(source: str) -> dict[str, str]:
    """Label -> section title for every ``.. _label:`` line followed (after blank lines and other labels) by a title."""
    lines = source.split("\n")
    found: dict[str, str] = {}
    pending: list[str] = []
    for i, line in enumerate(lines):
        m = _LABEL.match(line)
        if m:
            pending.append(m.group(1).strip("`").lower())
            continue
        if not line.strip():
            continue
        if pending:
            title = ""
            if _ADORNMENT.match(line) and i + 2 < len(lines) and _ADORNMENT.match(lines[i + 2]):
                title = lines[i + 1].strip()
            elif i + 1 < len(lines) and _ADORNMENT.match(lines[i + 1]) and not _ADORNMENT.match(line):
                title = line.strip()
            if title:
                found.update(dict.fromkeys(pending, _plain_title(title)))
            pending = []
    return found


def _plain_title(title: str) -> str:
    """A section title's text without inline markup (roles, literals, emphasis), as a reference shows it."""
    title = re.sub(r":[\w:+.-]+:`([^`]*)`", lambda m: role_text("x", m.group(1)), title)
    return re.sub(r"``|\*\*?|`", "", title)


# ---------------------------------------------------------------- roles


def role_text(name: str, text: str, labels: dict[str, str] | None = None) -> str:
    """What Sphinx shows for ``:name:`text``` (``text`` as docutils gives it: an escaped character is ``\\x00c``).

    ``labels`` maps the document's own section labels (``.. _label:`` before a title) to their titles,
    which ``:ref:`label``` shows; a label of another document is shown as written.
    """
    name = name.lower()
    bare = name.split(":")[-1] if name.startswith(("py:", "c:", "std:", "cpp:", "js:", "rst:", "math:")) else name
    if bare in _LITERAL_ROLES:
        if bare in ("samp", "file"):
            return re.sub(r"(?<!\x00)[{}]", "", text)
        if bare == "menuselection":
            return text.replace("-->", "\u2023")
        if bare == "guilabel":
            return re.sub(r"&(?!&)", "", text).replace("&&", "&")
        if bare == "abbr":
            m = re.match(r"^(.*?)\s*\(.*\)$", text, re.DOTALL)
            return m.group(1) if m else text
        return text
    m = _EXPLICIT_TITLE.match(text)
    if m and m.group(1).strip():
        return m.group(1)
    target = m.group(2) if m else text
    if target.startswith("!"):
        target = target[1:]
    if target.startswith("~"):
        target = target[1:].split(".")[-1]
    if bare == "ref" and labels is not None and target.replace("\x00", "").lower() in labels:
        return labels[target.replace("\x00", "").lower()]
    if bare == "pep":
        return "PEP " + target.split("#")[0]
    if bare == "rfc":
        return "RFC " + target.split("#")[0]
    if bare == "issue":
        return "bpo-" + target
    if bare == "gh":
        return "gh-" + target
    if name in _CALLABLE_ROLES and not target.endswith(")"):
        return target + "()"
    return target


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def role_name(name: str, text: str) -> str | None:
    """The full dotted name an object role stands for when the page shows less of it (``:meth:`~agen.aclose()```
    shows ``aclose()``; ``:meth:`accept() <socket.socket.accept>``` shows ``accept()``): ``agen.aclose``,
    ``socket.socket.accept``; None for a role shown whole or not naming an object."""
    bare = name.lower().split(":")[-1]
    if bare not in _OBJECT_ROLES:
        return None
    m = _EXPLICIT_TITLE.match(text)
    target = (m.group(2) if m and m.group(1).strip() else text).lstrip("!")
    if not (target.startswith("~") or (m and m.group(1).strip())):
        return None
    full = target.lstrip("~").removesuffix("()")
    return full if _DOTTED.fullmatch(full) else None


def _generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    from docutils import nodes, utils

    settings = inliner.document.settings
    shown = utils.unescape(role_text(name, text, getattr(settings, "localreason_labels", None)))
    full = role_name(name, utils.unescape(text))
    names = getattr(settings, "localreason_names", None)
    if full is not None and full not in shown and names is not None and shown.strip():
        names.append(full)  # where the page shows it is marked, and found again by _NamedText (index_terms)
        shown = f"{_MARK_OPEN}{len(names) - 1}{_MARK_MID}{shown}{_MARK_CLOSE}"
    return [nodes.literal(rawtext, shown)], []


_MARK_OPEN, _MARK_MID, _MARK_CLOSE = "\ue000", "\ue001", "\ue002"
_MARK = re.compile("\ue000(\\d+)\ue001(.*?)\ue002", re.S)
"""A role shown shorter than its full name, marked in the text while the page is written (private-use
characters, which no reST source holds: they are taken out of the source first)."""


class _NamedText(TextBuilder):
    """The text builder, taking the marks of roles shown shorter than their names (``_generic_role``) out of each
    block and keeping where they were: ``spans``, (start, end, full name) in the text."""

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = names
        self.spans: list[tuple[int, int, str]] = []

    def add(self, text: str, kind: str = "text", **kwargs) -> None:
        text = normalize(text, keep_lines=kwargs.get("keep_lines", True))
        found: list[tuple[int, int, str]] = []
        plain, last = [], 0
        for m in _MARK.finditer(text):
            plain.append(text[last:m.start()])
            at = sum(map(len, plain))
            found.append((at, at + len(m.group(2)), self.names[int(m.group(1))]))
            plain.append(m.group(2))
            last = m.end()
        plain.append(text[last:])
        before = len(self.blocks)
        super().add("".join(plain), kind, **kwargs)
        if len(self.blocks) > before:
            base = self.blocks[-1].start
            self.spans += [(base + a, base + b, full) for a, b, full in found]


def _inliner():
    """docutils' Inliner, with every role docutils does not render plainly read by ``role_text``.

    (An instance attribute, not a subclass: docutils builds its patterns from ``vars(Inliner)``.)
    """
    from docutils.parsers.rst.states import Inliner

    inliner = Inliner()
    docutils_interpreted = inliner.interpreted

    def interpreted(rawsource, text, role, lineno):
        if role and role.lower() not in _DOCUTILS_ROLES:
            return _generic_role(role, rawsource, text, lineno, inliner)
        return docutils_interpreted(rawsource, text, role, lineno)

    inliner.interpreted = interpreted
    return inliner


# ---------------------------------------------------------------- directives


def _install() -> None:
    """Route docutils' directive lookup through ``_directive`` for our documents (others are left alone)."""
    global _installed
    with _lock:
        if _installed:
            return
        from docutils.parsers.rst import directives

        original = directives.directive

        def lookup(name, language_module, document):
            if getattr(document.settings, _SETTING, False):
                found = _directive(name.lower())
                if found is not None:
                    return found, []
            return original(name, language_module, document)

        directives.directive = lookup
        _installed = True


def _directive(name: str):
    """The directive class for ``name``, or None to let docutils use its own."""
    if name in _BUILTIN:
        return None
    from . import rst_directives as kinds  # imports docutils: only once a reST file is read

    if name in _HIDDEN:
        return kinds.Hidden
    if name in _LITERAL:
        return kinds.Literal
    if name in kinds.VERSION_LABELS or name == "deprecated-removed":
        return kinds.Version
    if name in _NESTED:
        return kinds.Nested
    if name in ("module", "py:module"):
        return kinds.Module
    if name in ("availability", "audit-event"):
        return kinds.Sentence
    if name in kinds.TITLED:
        return kinds.Titled
    return kinds.Object


# ---------------------------------------------------------------- doctree -> blocks


class _Writer:
    """Walks a doctree and adds its headings and text blocks to a TextBuilder, in document order."""

    def __init__(self, builder: TextBuilder, doctree) -> None:
        from docutils import nodes

        self.nodes = nodes
        self.builder = builder
        self.label = ""
        """What the next paragraph starts with: its list item's number ("2.", "b)"), as a reader sees it."""
        self.footnotes: dict[str, int] = {}
        """Auto-numbered footnote label (or the nth anonymous one) -> the number a reader sees."""
        self.anonymous = 0
        self.definitions = {name.lower(): node for node in doctree.findall(nodes.substitution_definition)
                            for name in node["names"]}  # fmt: skip
        self.substitutions: dict[str, str] = {}
        """Substitution name (lower case, as docutils matches them) -> its text, resolved on first use."""

    def walk(self, parent, depth: int) -> None:
        """Add the children of ``parent`` (a loop over siblings, recursion only into containers)."""
        n = self.nodes
        for i, node in enumerate(parent.children):
            if isinstance(node, n.section):
                title = node.next_node(n.title)
                if title is not None:
                    self.builder.add(self.inline(title), "heading", depth=depth + 1, keep_lines=False)
                self.walk(node, depth + 1)
            elif isinstance(node, (n.title,)) and isinstance(parent, n.section):
                continue  # added with its section
            elif isinstance(node, (n.comment, n.substitution_definition, n.target, n.raw, n.pending, n.image,
                                   n.decoration)):
                continue
            elif isinstance(node, n.system_message):
                if node.get("level", 0) >= 3:  # an error: the source docutils could not read, as written
                    for block in node.findall(n.literal_block):
                        self.builder.add(block.astext())
            elif isinstance(node, n.field_list) and depth == 0 and i == _first_content(parent):
                self.fields(node, metadata=True)
            elif isinstance(node, n.field_list):
                self.fields(node)
            elif isinstance(node, n.option_list_item):
                group = node.next_node(n.option_group)
                if group is not None:
                    self.builder.add(", ".join(o.astext() for o in group.children), keep_lines=False)
                for desc in node.findall(n.description):
                    self.walk(desc, depth)
            elif isinstance(node, n.row):
                cells = (_cell_parts(self.inline, entry) for entry in node.children)
                self.builder.add(" | ".join(c for c in (" ".join(c.split()) for c in cells) if c), keep_lines=False)
            elif isinstance(node, n.enumerated_list):
                for k, item in enumerate(node.children):
                    self.label = _enumerator(node, k)
                    self.walk(item, depth)
                self.label = ""
            elif isinstance(node, n.line_block):
                self.builder.add("\n".join(self.inline(line) for line in node.findall(n.line)))
            elif isinstance(node, n.Admonition) and not isinstance(node, n.admonition):
                self.builder.add(_ADMONITIONS.get(node.tagname, node.tagname.title()), keep_lines=False)
                self.walk(node, depth)
            elif isinstance(node, n.FixedTextElement):
                self.builder.add(node.astext())  # literal and doctest blocks: lines kept
            elif isinstance(node, n.TextElement):
                self.builder.add(self.label + self.inline(node), keep_lines=False)
                self.label = ""
            elif isinstance(node, n.Element):
                self.walk(node, depth)

    def fields(self, field_list, metadata: bool = False) -> None:
        """A field list as Sphinx shows it: "Name: body", and info fields as "Parameters: x (int) – body"."""
        n = self.nodes
        items = []
        for field in field_list.children:
            name_node, body = field.next_node(n.field_name), field.next_node(n.field_body)
            words = (self.inline(name_node) if name_node is not None else "").split()
            items.append((words, list(body.children) if body is not None else []))
        types = {ws[-1]: " ".join(self.inline(c) for c in body) for ws, body in items
                 if len(ws) >= 2 and ws[0].lower() in ("type", "vartype")}  # fmt: skip
        for ws, paras in items:
            kind = ws[0].lower() if ws else ""
            if (metadata and kind in _METADATA_FIELDS) or (kind in ("type", "vartype") and len(ws) >= 2):
                continue
            label = _INFO_FIELDS.get(kind)
            if label and len(ws) >= 2:  # ":param int x:" or ":param x:" with ":type x: int"
                typ = " ".join(ws[1:-1]) or types.get(ws[-1], "")
                head = f"{label}: {ws[-1]}" + (f" ({typ})" if typ else "") + " \u2013"
            else:
                head = (label or " ".join(ws)) + ":"
            if paras and isinstance(paras[0], n.paragraph):
                self.builder.add(f"{head} {self.inline(paras[0])}", keep_lines=False)
                paras = paras[1:]
            else:
                self.builder.add(head, keep_lines=False)
            holder = n.container()
            holder.children = paras
            self.walk(holder, 1)

    def inline(self, node) -> str:
        """The text of an inline element: substitutions resolved, footnote references as their number."""
        n = self.nodes
        out: list[str] = []
        stack = [node]
        while stack:
            el = stack.pop()
            if isinstance(el, n.Text):
                out.append(el.astext())  # escapes removed ("Morsel\\ s" is "Morsels")
            elif isinstance(el, n.substitution_reference):
                out.append(self.substitution(el.get("refname", "").lower()))
            elif isinstance(el, (n.footnote_reference, n.citation_reference)):
                out.append(self.footnote(el))
            elif isinstance(el, (n.image, n.target, n.system_message, n.comment)):
                continue
            elif isinstance(el, n.Element):
                stack.extend(reversed(el.children))
        return "".join(out)


    def substitution(self, name: str) -> str:
        """The text of substitution ``name``; one that refers to itself, directly or not, is empty."""
        if name not in self.substitutions:
            self.substitutions[name] = ""  # while it is being resolved: a cycle ends here
            node = self.definitions.get(name)
            self.substitutions[name] = self.inline(node) if node is not None else ""
        return self.substitutions[name]

    def footnote(self, el) -> str:
        """A footnote reference as a reader sees it: "[2]" (auto-numbered ones in order of first reference,
        the same label the same number), "*" symbols left out."""
        label = el.astext()
        if label == "*" or el.get("auto") == "*":
            return ""
        if el.get("auto") or not label or label.startswith("#"):
            key = el.get("refname") or f"#anonymous{self.anonymous}"
            self.anonymous += not el.get("refname")
            label = str(self.footnotes.setdefault(key, len(self.footnotes) + 1))
        return f"[{label}]"


def _enumerator(node, k: int) -> str:
    """The number a reader sees before item ``k`` of an enumerated list ("3.", "(c)", "iv)")."""
    kind = node.get("enumtype", "arabic")
    shown = list_number(int(node.get("start", 1)) + k, kind.removeprefix("lower").removeprefix("upper"))
    shown = shown.upper() if kind.startswith("upper") else shown
    return f"{node.get('prefix', '')}{shown}{node.get('suffix', '.')} "


def _first_content(parent) -> int:
    """Index of the first child that is not a comment, target or substitution definition."""
    from docutils import nodes

    for i, node in enumerate(parent.children):
        if not isinstance(node, (nodes.comment, nodes.target, nodes.substitution_definition)):
            return i
    return -1


def _cell_parts(inline, entry) -> str:
    """A table cell's text: its paragraphs and list items apart ("skips checks; uses cache"), as the HTML reader
    writes a cell's items; they were run together ("skips checksuses cache")."""
    from docutils import nodes as n

    parts = (inline(t) for t in entry.findall(n.TextElement) if not isinstance(t.parent, n.TextElement))
    return "; ".join(p for p in (" ".join(part.split()) for part in parts) if p)
