"""What a browser draws beside the words, written into the text: the numbers of ordered lists ("3. "), raised
and lowered text as it reads (2^31-1, log_2), DocBook's numbered callouts ("(1)") and Publican's navigation
captions on a line of their own ("Next" above "6.3. The apt-cache Command").

Both HTML readers write them alike: html.py into its tree before reading it (``mark_tree``), html_stream.py as it
meets the tags, through the rules here. A number goes in front of the first text its item shows (an item that
opens with a paragraph or a nested list: in front of that), so that it stays with the words it numbers.
"""

from __future__ import annotations

import re

from ..document import list_number

_KINDS = {"1": "arabic", "a": "alpha", "A": "alpha", "i": "roman", "I": "roman"}
_STYLE_KINDS = {"decimal": "1", "lower-alpha": "a", "lower-latin": "a", "upper-alpha": "A", "upper-latin": "A",
                "lower-roman": "i", "upper-roman": "I", "none": ""}  # fmt: skip
_CLASS_KINDS = {"arabic": "1", "loweralpha": "a", "upperalpha": "A", "lowerroman": "i", "upperroman": "I",
                "lo-A": "a", "up-A": "A"}  # fmt: skip
"""Classes whose stylesheet numbers a list (docutils/Sphinx's, apache2-doc's)."""
_LIST_STYLE = re.compile(r"list-style(?:-type)?\s*:\s*([a-z-]+)", re.IGNORECASE)
_INTEGER = re.compile(r"\s*([+-]?\d{1,9})")
_ORDINALS = frozenset("st nd rd th".split())
_ONE_TOKEN = re.compile(r"[+\-\u2212]?[\w.]+")
RAISED = {"sup": "^", "sub": "_"}


def _kind(attrs) -> str | None:
    """How an ``ol`` or ``li`` numbers: "1", "a", "A", "i", "I", "" for no number; None when it does not say."""
    style = _LIST_STYLE.search(attrs.get("style") or "")
    if style and style.group(1).lower() in _STYLE_KINDS:
        return _STYLE_KINDS[style.group(1).lower()]
    kind = (attrs.get("type") or "").strip()
    if kind in _KINDS:
        return kind
    return next((_CLASS_KINDS[c] for c in (attrs.get("class") or "").split() if c in _CLASS_KINDS), None)


def _integer(value: str | None) -> int | None:
    """An attribute's number as HTML reads it (leading digits, a sign), or None."""
    m = _INTEGER.match(value or "")
    return int(m.group(1)) if m else None


class Numbering:
    """The numbers of one ordered list's items as a browser counts them: from ``start``, down when ``reversed``,
    an item's ``value`` restarting the count. A reversed list with no start counts down from its number of items,
    which the streaming reader cannot know ahead: such a list is left unnumbered by both readers."""

    def __init__(self, attrs) -> None:
        start = _integer(attrs.get("start"))
        self.step = -1 if "reversed" in attrs else 1
        self.counted = self.step > 0 or start is not None
        self.kind = _kind(attrs)
        self.next = 1 if start is None else start

    def item(self, attrs) -> str:
        """The number shown before the next item ("3.", "c.", "iv."), "" for none."""
        value = _integer(attrs.get("value"))
        n = self.next if value is None else value
        self.next = n + self.step
        kind = _kind(attrs)  # an item's own type or style, else the list's
        kind = (self.kind if kind is None else kind) if self.counted else ""
        kind = "1" if kind is None else kind
        if not kind:
            return ""
        shown = list_number(n, _KINDS[kind]) if n > 0 else str(n)  # browsers count 0 and below in digits
        return f"{shown.upper() if kind in 'AI' else shown}."


def prefixed(text: str, marker: str) -> str:
    """``marker`` and a space in front of the first character of ``text`` that is not a space."""
    start = len(text) - len(text.lstrip())
    return f"{text[:start]}{marker} {text[start:]}"


def raised(text: str, tag: str) -> str:
    """The text of a ``sup`` ("^") or ``sub`` ("_") as it reads: 2<sup>31</sup> is 2^31, not 231; x^(n+1) when it
    is more than one token. Left as it is: no letter or digit ("C+"), a footnote mark already bracketed ("[4]",
    "(1)"), an ordinal's ending (11th)."""
    core = text.strip()
    if not any(ch.isalnum() for ch in core) or core[0] in "([{" or (tag == "sup" and core.lower() in _ORDINALS):
        return text
    shown = core if _ONE_TOKEN.fullmatch(core) else f"({core})"
    start = len(text) - len(text.lstrip())
    return f"{text[:start]}{RAISED[tag]}{shown}{text[start + len(core):]}"


def callout(attrs) -> str:
    """DocBook's numbered callout image (``img class="callout" alt="1"``) as text, "(1)"; "" for another image."""
    if "callout" not in (attrs.get("class") or "").split():
        return ""
    alt = " ".join((attrs.get("alt") or "").split())
    return alt if not alt or alt.startswith("(") else f"({alt})"


def has_class(attrs, name: str) -> bool:
    return name in (attrs.get("class") or "").split()


# ---------------------------------------------------------------- the tree reader's side


def _has(name: str) -> str:
    return f'contains(concat(" ", normalize-space(@class), " "), " {name} ")'


def _numbering(el) -> bool:
    """An ``ol``, or a DocBook callout list: an element whose items are numbered."""
    return el.tag == "ol" or (el.tag == "div" and "calloutlist" in (el.get("class") or "").split())


def _numbered_tops(root) -> list:
    """The numbered lists of ``root`` that no numbered list holds, in document order (walked in Python, not by an
    XPath union, which libxml2 merges in time quadratic in the number of elements)."""
    tops = []
    for el in root.iter("ol", "div"):
        if not _numbering(el):
            continue
        up = el.getparent()
        while up is not None and not _numbering(up):
            up = up.getparent()
        if up is None:
            tops.append(el)
    return tops


def mark_tree(root, edges: tuple[str, ...]) -> None:
    """Write the marks into the tree ``root`` (lxml, navigation already dropped); ``edges``: the tags that break
    a line or a block, around which a ``sup`` or ``sub`` is left as it is. Linear in the tree, however deep."""
    for top in _numbered_tops(root):  # only lists are walked: most of a page has none
        _TreeNumbers().walk(top)
    for img in root.xpath(f"//img[{_has('callout')}]"):  # the callouts outside lists (in code)
        img.tag, img.text = "span", callout(img.attrib)
        img.attrib.clear()
    # Publican's stylesheet shows the "Prev" and "Next" of its navigation as a line above the link
    for strong in root.xpath(f"//ul[{_has('docnav')}]//strong"):
        br = strong.makeelement("br", {})
        br.tail, strong.tail = strong.tail, None
        strong.addnext(br)
    raised_els = list(root.iter("sup", "sub"))  # not an XPath union: libxml2 merges those quadratically
    if not raised_els:
        return
    holders: set = set()  # the elements around a line break, a block, a sup or a sub
    for el in root.iter(*edges, *RAISED):
        el = el.getparent()
        while el is not None and el not in holders:
            holders.add(el)
            el = el.getparent()
    for el in raised_els:
        if el not in holders:  # a sup or sub inside another is written, the outer one left as it is
            text = el.text_content()
            for child in list(el):
                el.remove(child)
            el.text = raised(text, el.tag)


class _TreeNumbers:
    """One pass over the tree in document order, as the streaming reader reads it: each list item's number (and a
    callout's, in a callout list) waits for the first text shown after it, inside its item (its row)."""

    def __init__(self) -> None:
        self.lists: dict = {}  # each ordered list: its Numbering
        self.pending: list[tuple[str, object]] = []  # marker, the element it must be shown inside
        self.rows: list[tuple[int, object]] = []  # each open row: its depth, the row
        self.callout_lists: list[int] = []  # the depth of each open DocBook callout list

    def walk(self, top) -> None:
        """Number the items under ``top`` (an ordered list or a callout list, in no other)."""
        stack = [(top, iter(top))]
        self.enter(top, top.getparent(), 0)
        self.shown(top, "text")
        while stack:
            el, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                self.leave(el, len(stack))
                if stack:
                    self.shown(el, "tail")
                continue
            if isinstance(child.tag, str):
                self.enter(child, el, len(stack))
                self.shown(child, "text")
            stack.append((child, iter(child)))

    def enter(self, el, parent, depth: int) -> None:
        tag = el.tag
        if tag == "li" and parent in self.lists:
            marker = self.lists[parent].item(el.attrib)
            if marker:
                self.pending.append((marker, el))
        elif tag == "ol":
            self.lists[el] = Numbering(el.attrib)
        elif tag == "tr":
            self.rows.append((depth, el))
        elif tag == "div" and has_class(el.attrib, "calloutlist"):
            self.callout_lists.append(depth)
        elif tag == "img":
            mark = callout(el.attrib)
            if mark and self.rows and self.callout_lists and self.rows[-1][0] > self.callout_lists[-1]:
                self.pending.append((mark, self.rows[-1][1]))  # in front of the explanation beside it
                mark = ""
            if callout(el.attrib):  # the number in place of the image
                el.tag, el.text = "span", mark
                el.attrib.clear()

    def leave(self, el, depth: int) -> None:
        while self.pending and self.pending[-1][1] is el:
            self.pending.pop()  # an item with no text: no number
        if self.rows and self.rows[-1][0] == depth:
            self.rows.pop()
        if self.callout_lists and self.callout_lists[-1] == depth:
            self.callout_lists.pop()

    def shown(self, el, slot: str) -> None:
        text = getattr(el, slot)
        if self.pending and text and not text.isspace():
            setattr(el, slot, prefixed(text, " ".join(marker for marker, _ in self.pending)))
            self.pending.clear()
