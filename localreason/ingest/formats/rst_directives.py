"""The Sphinx directives read for the text they show: one docutils Directive class per kind.

rst.py picks the class for a directive name (its ``_directive``); importing this module imports docutils,
so it is imported only when a reST file is read.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import Directive

VERSION_LABELS = {"versionadded": "New in version {}", "versionchanged": "Changed in version {}",
                  "deprecated": "Deprecated since version {}", "versionremoved": "Removed in version {}"}  # fmt: skip
TITLED = {"seealso": "See also", "impl-detail": "CPython implementation detail:"}
# Object descriptions: the word Sphinx shows before the name, and whether the module prefix is added.
PREFIXES = {"class": "class ", "exception": "exception ", "classmethod": "classmethod ", "staticmethod": "static ",
            "coroutinefunction": "coroutine ", "coroutinemethod": "coroutine ", "abstractmethod": "abstractmethod ",
            "awaitablefunction": "awaitable ", "awaitablemethod": "awaitable ", "decorator": "@",
            "decoratormethod": "@", "c:struct": "struct ", "c:union": "union ", "c:enum": "enum ",
            "c:macro": "", "c:type": "type "}  # fmt: skip
MODULE_LEVEL = frozenset("function class exception data decorator coroutinefunction awaitablefunction".split())
CLASS_LIKE = frozenset(("class", "exception"))


class AnyOptions(dict):
    """Every ``:option: value`` a directive is given is accepted (and ignored)."""

    def __missing__(self, key):
        return lambda value: value

    def __bool__(self) -> bool:
        return True


class Base(Directive):
    """What every directive here shares: any options, one optional argument, a body parsed as reST."""

    required_arguments = 0
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = AnyOptions()

    @property
    def argument(self) -> str:
        return self.arguments[0] if self.arguments else ""

    def body(self, into) -> None:
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, into)

    def inline(self, text: str) -> list:
        found, _ = self.state.inline_text(text, self.lineno)
        return found


class Hidden(Base):
    """A directive that shows nothing on the page (toctree, index, raw ...)."""

    def run(self):
        return []


class Literal(Base):
    """A code block: its lines as they are (nothing when hidden with ``:hide:``)."""

    def run(self):
        if "hide" in self.options:  # a doctest kept out of the page (":hide:")
            return []
        text = "\n".join(self.content)
        return [nodes.literal_block(text, text)] if text.strip() else []


class Nested(Base):
    """A container whose body is shown as it is (only, tabs, glossary ...)."""

    def run(self):
        box = nodes.container()
        if self.argument and self.name in ("centered",):
            box += nodes.paragraph("", "", *self.inline(self.argument))
        self.body(box)
        return [box]


class Version(Base):
    """versionadded / versionchanged / deprecated: the label Sphinx writes, then the body."""

    optional_arguments = 2
    final_argument_whitespace = True

    def run(self):
        version, rest = (" ".join(self.arguments).split(None, 1) + ["", ""])[:2]
        if self.name == "deprecated-removed":
            removed, rest = (rest.split(None, 1) + ["", ""])[:2]
            label = f"Deprecated since version {version}, will be removed in version {removed}"
        else:
            label = VERSION_LABELS[self.name].format(version)
        box = nodes.container()
        self.body(box)
        para = nodes.paragraph()
        first = box[0] if len(box) and isinstance(box[0], nodes.paragraph) else None
        if rest.strip() or first is not None:
            para += nodes.Text(label + ": ")
            para.extend(self.inline(rest.strip()) if rest.strip() else [])
            if first is not None:
                if rest.strip():
                    para += nodes.Text(" ")
                para.extend(first.children)
                box.remove(first)
        else:
            para += nodes.Text(label + ".")
        return [para, *box.children]


class Titled(Base):
    """seealso and impl-detail: their title, then the body."""

    def run(self):
        box = nodes.container()
        if self.name == "impl-detail" and self.argument:
            box += nodes.paragraph("", "", nodes.Text(TITLED[self.name] + " "), *self.inline(self.argument))
        else:
            box += nodes.paragraph("", TITLED[self.name])
            if self.argument:
                box += nodes.paragraph("", "", *self.inline(self.argument))
        self.body(box)
        return [box]


class Sentence(Base):
    """availability and audit-event: the one sentence Sphinx writes for them."""

    optional_arguments = 3
    final_argument_whitespace = True

    def run(self):
        text = " ".join(self.arguments)
        if self.name == "availability":
            shown = f"Availability: {text}"
        else:  # audit-event:: name args [target]
            event = self.arguments[0] if self.arguments else ""
            args = [a.strip() for a in (self.arguments[1] if len(self.arguments) > 1 else "").split(",")]
            args = [a for a in args if a.strip("\"'")]
            shown = f"Raises an auditing event {event} with " + (
                f"argument{'s' if len(args) > 1 else ''} {', '.join(args)}." if args else "no arguments.")
        box = nodes.container()
        box += nodes.paragraph("", "", *self.inline(shown))
        self.body(box)
        return [box]


class Module(Base):
    """module: remembers the module name for the object signatures that follow."""

    def run(self):
        self.state.document.settings.localreason_module = self.argument.strip()
        box = nodes.container()
        self.body(box)
        return [box]


class Object(Base):
    """A signature (one per argument line) and its description, as Sphinx lays out an object."""

    def run(self):
        settings = self.state.document.settings
        if self.name in ("currentmodule", "py:currentmodule"):
            settings.localreason_module = self.argument.strip()
            return []
        kind = self.name.split(":")[-1] if self.name.startswith("py:") else self.name
        in_class = getattr(settings, "localreason_class_depth", 0) > 0
        module = getattr(settings, "localreason_module", "")
        box = nodes.container()
        for line in self.argument.split("\n"):
            line = line.strip().rstrip("\\").strip()
            if not line:
                continue
            name = line
            if module and not in_class and kind in MODULE_LEVEL and not line.startswith(module + "."):
                name = f"{module}.{line}"
            shown = PREFIXES.get(kind, "") + name
            box += nodes.paragraph(shown, shown)
        settings.localreason_class_depth = getattr(settings, "localreason_class_depth", 0) + (
            kind in CLASS_LIKE)
        try:
            self.body(box)
        finally:
            settings.localreason_class_depth -= kind in CLASS_LIKE
        return [box]
