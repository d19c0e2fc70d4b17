"""The GBNF grammar of one request's output, its longest length, and the strict parse of the output.

Output shape (keys in this order, no free whitespace), one reference per statement so that
each claim stands on one source and disagreeing sources stay separate statements:
{"statements":[{"references":[{"quotation":Q,"chunkId":ID}],"text":T}],"limitations":[L]}

The one exception is a joined lead (offer.Offer.joined): the sentence that names who or what and the sentence
that says it through "he", one statement with both as references, in the document's order (``pair``).
"""

from __future__ import annotations

import json

from ..generate import GenerationError
from .candidates import Quote

# Bounds that keep a small model from looping (and the output's worst case known).
# How many statements lead every answer, quoting the best-ranked sentences in rank order, is
# ``lead_quotes``: by default the best one and its close runners-up (offer.lead_count, 1-3);
# Settings.answer_quotes can fix it.
EXTRA_STATEMENTS = 1
"""Statements the model may add, each quoting one of the remaining candidates."""
MAX_TEXT_CHARS = 160
MAX_LIMITATIONS = 2
MAX_LIMITATION_CHARS = 120

LIMITATION_CHOICES = (
    "The evidence does not answer the question directly.",
    "The evidence answers only part of the question.",
    "The sources disagree.",
)
"""In the ``extract`` style the model may only pick among these (a small model's free text degenerates)."""


def _gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + out.replace("\t", "\\t") + '"'


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _reference_json(q: Quote) -> str:
    """One reference of a statement quoting ``q``, exactly as the model's output spells it."""
    return '{"quotation":' + _json_str(q.text) + ',"chunkId":' + _json_str(q.chunk_id) + "}"


def _statement_json(*quotes: Quote) -> str:
    """An extract-style statement quoting ``quotes`` (one; two for a joined lead), exactly as the model's output
    spells it."""
    return '{"references":[' + ",".join(_reference_json(q) for q in quotes) + '],"text":""}'


def _statement_rule(name: str, quotes: list[Quote], style: str) -> str:
    """The rule ``name`` of a statement quoting ``quotes``: the whole statement (extract), or all but its free
    text."""
    if style == "extract":
        return f"{name} ::= {_gbnf_literal(_statement_json(*quotes))}"
    head = _gbnf_literal('{"references":[' + ",".join(_reference_json(q) for q in quotes) + '],"text":"')
    return f'{name} ::= {head} free "\\"}}"'


def _statement_rules(quotes: list[Quote], style: str, groups: list[list[Quote]]) -> list[str]:
    """One ``stmtN`` rule per candidate, and ``pair`` for a joined lead (``groups``' first has two quotes)."""
    rules = [_statement_rule(f"stmt{i}", [q], style) for i, q in enumerate(quotes)]
    if groups and len(groups[0]) == 2:
        rules.append(_statement_rule("pair", groups[0], style))
    return rules


def _extra_rule(quotes: list[Quote], lead_quotes: int) -> tuple[list[str], str]:
    """The ``extra`` rule (any one candidate after the lead ones) and how the root refers to it."""
    rest = [f"stmt{i}" for i in range(lead_quotes, len(quotes))]
    if rest and EXTRA_STATEMENTS:
        return ["extra ::= " + " | ".join(rest)], ' ("," extra)?'
    return [], ""


def _extract_tail(groups: list[list[Quote]], extra: str) -> tuple[str, str, str]:
    """(limits rule, forced prefix, root rule) of the extract style: the lead statements are the prefix."""
    limit = " | ".join(_gbnf_literal(_json_str(c)) for c in LIMITATION_CHOICES)
    limits = f"limits ::= ({limit})?"
    prefix = '{"statements":[' + ",".join(_statement_json(*g) for g in groups)
    root = f'root ::={extra} "],\\"limitations\\":[" limits "]}}"'
    return limits, prefix, root


def _free_tail(groups: list[list[Quote]], extra: str) -> tuple[str, str, str]:
    """(limits rule, forced prefix, root rule) of the free style: no prefix, free limitations."""
    item = f'"\\"" lchar{{1,{MAX_LIMITATION_CHARS}}} "\\""'
    limits = f'limits ::= ({item} ("," {item}){{0,{MAX_LIMITATIONS - 1}}})?'
    names, i = [], 0
    for g in groups:
        names.append("pair" if len(g) == 2 else f"stmt{i}")
        i += len(g)
    stmts = ' "," '.join(names)
    root = f'root ::= "{{\\"statements\\":[" {stmts}{extra} "],\\"limitations\\":[" limits "]}}"'
    return limits, "", root


def lead_groups(quotes: list[Quote], lead_quotes: int, joined: bool = False) -> list[list[Quote]]:
    """The quotes of each lead statement: the first ``lead_quotes`` of ``quotes`` one each, the first two together
    when ``joined`` (offer.Offer.joined)."""
    lead = quotes[:max(1, min(lead_quotes, len(quotes)))]
    if joined and len(lead) >= 2:
        return [lead[:2], *([q] for q in lead[2:])]
    return [[q] for q in lead]


def build_grammar(quotes: list[Quote], style: str = "extract", lead_quotes: int = 3,
                  joined: bool = False) -> tuple[str, str]:  # fmt: skip
    """The output's forced opening and a GBNF grammar for the rest: quotations only from ``quotes``.

    The first ``lead_quotes`` statements quote the best-ranked sentences in rank order (measured:
    the ranking's order beats the 135M model's own choice); the model may add one more statement
    quoting any of the remaining candidates, and chooses the limitations.

    ``extract`` (default): T is empty, and the statement's text is its verified quotation, bound by
    the server (see ``verify``); L is one of LIMITATION_CHOICES. Nothing a small model writes can
    drift from the evidence, and no decoding step is spent on text a 135M model writes badly.
    Because the lead statements admit exactly one spelling, they are returned as the *prefix*:
    the generator places it at the start of the model's reply (evaluated like the prompt, in one
    batch) and the grammar constrains only what follows. The output is the same as if the grammar
    forced those characters one decoding step at a time, at a fraction of the cost.
    ``free``: T and L are free text of bounded length, for larger models; no prefix.

    ``joined``: the first two quotes lead as one statement with both references (offer.Offer.joined).

    Every candidate keeps its own ``stmtN`` rule (the lead ones unused after a prefix), so the
    grammar also documents the whole offer.
    """
    lead_quotes = max(1, min(lead_quotes, len(quotes)))
    groups = lead_groups(quotes, lead_quotes, joined)
    rules = _statement_rules(quotes, style, groups)
    extra_rules, extra = _extra_rule(quotes, lead_quotes)
    rules += extra_rules
    if style == "extract":
        limits, prefix, root = _extract_tail(groups, extra)
    else:
        limits, prefix, root = _free_tail(groups, extra)
    grammar = "\n".join([
        root,
        *rules,
        limits,
        f"free ::= char{{1,{MAX_TEXT_CHARS}}}",
        r'char ::= [^"\\\x00-\x1f]',
        r'lchar ::= [^"\\\x00-\x1f]',
    ])  # fmt: skip
    return prefix, grammar


def max_output_tokens(quotes: list[Quote], style: str = "extract", lead_quotes: int = 3, joined: bool = False) -> int:
    """The longest output the grammar allows, counted as one token per character.

    Under a grammar the sampler may spell forced text in pieces smaller than the tokenizer
    would, so a token count of the text underestimates; a token is never less than a
    character, so characters are a true upper bound.
    """
    longest = max((len(_statement_json(q)) for q in quotes), default=0)
    if joined and len(quotes) >= 2:  # the joined lead: two references in one statement
        longest += len(_reference_json(quotes[1])) + 1
    if style == "free":
        longest += MAX_TEXT_CHARS
        limits = MAX_LIMITATIONS * (MAX_LIMITATION_CHARS + 3)
    else:
        limits = max(len(_json_str(c)) for c in LIMITATION_CHOICES)
    statements = min(len(quotes), max(1, lead_quotes) + EXTRA_STATEMENTS)
    return len('{"statements":[],"limitations":[]}') + statements * (longest + 1) + limits


# ---------------------------------------------------------------- parsing


def _shape_error(why: str) -> GenerationError:
    return GenerationError(f"The model's output does not have the required shape: {why}.")


def _check_statement(st) -> None:
    """Raise unless ``st`` is exactly {"text": str, "references": [{"chunkId": str, "quotation": str}]}."""
    if not isinstance(st, dict) or set(st) != {"text", "references"}:
        raise _shape_error("each statement needs exactly text and references")
    if not isinstance(st["text"], str) or not isinstance(st["references"], list):
        raise _shape_error("a statement's text must be a string and its references a list")
    for ref in st["references"]:
        if not isinstance(ref, dict) or set(ref) != {"chunkId", "quotation"}:
            raise _shape_error("each reference needs exactly chunkId and quotation")
        if not isinstance(ref["chunkId"], str) or not isinstance(ref["quotation"], str):
            raise _shape_error("chunkId and quotation must be strings")


def parse_output(text: str) -> tuple[list[dict], list[str]]:
    """Strictly parse the model's JSON: exactly the expected keys and types, or GenerationError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GenerationError(f"The model's output is not valid JSON ({exc.msg} at character {exc.pos}).",
                              hint="The output may have been cut off; this request failed rather than "
                              "guess an answer.") from exc  # fmt: skip
    if not isinstance(data, dict) or set(data) != {"statements", "limitations"}:
        raise _shape_error("expected exactly the keys statements and limitations")
    if not isinstance(data["statements"], list) or not isinstance(data["limitations"], list):
        raise _shape_error("statements and limitations must be lists")
    for st in data["statements"]:
        _check_statement(st)
    if not all(isinstance(x, str) for x in data["limitations"]):
        raise _shape_error("limitations must be strings")
    return data["statements"], data["limitations"]
