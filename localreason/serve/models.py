"""What the servers receive and send, defined once: the REST bodies and the MCP tools' JSON Schemas come from here.

Requests are checked strictly: each field accepts exactly one JSON type (no coercion: "5" is not a number, true
is not 1) and unknown fields are refused (a misspelt ``documentID`` must not silently widen a search). What the
values mean (a blank query, a malformed id, a limit to clamp) is left to the service's own validators, as for
every front end. Responses are described, not checked: they are what the values' ``to_dict`` make.

FastAPI renders these models into /openapi.json. ``mcp_input_schema`` and ``mcp_output_schema`` render the same
models for MCP clients (McpJsonSchema): no titles, no ``$defs``, and where an annotation says so (McpOnly) the
stricter form MCP clients validate arguments with, e.g. a limit as an integer of at least 0 with its default.
The models carry no docstrings: pydantic would publish them as schema descriptions.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, WithJsonSchema
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticCustomError

from ..ids import PREFIXES
from ..types import DIRECTIONS

ID_PATTERNS = {kind: f"^{prefix}_[a-z2-7]{{16}}$" for prefix, kind in PREFIXES.items()}
"""What localreason.ids makes, by kind: the prefix, an underscore and 16 characters of lowercase base32."""
ITEM_TYPES = ("document", "collection")
"""What find_items finds."""


# ---------------------------------------------------------------- rendering for MCP


class McpJsonSchema(GenerateJsonSchema):
    """JSON Schema as MCP tools publish it: no titles, keys in the order written, defaults only where McpOnly sets one."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def sort(self, value, parent_key=None):
        return value

    def default_schema(self, schema):
        if schema.get("default", ...) is None:  # "omitted": the service's default, which McpOnly states
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)


class McpOnly:
    """JSON Schema keywords an MCP tool's schema has in place of (or beside) the REST description's."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def __get_pydantic_json_schema__(self, core_schema, handler) -> dict:
        schema = handler(core_schema)
        if isinstance(getattr(handler, "generate_json_schema", None), McpJsonSchema):
            schema = {**schema, **self.keywords}
        return schema


def mcp_input_schema(model: type[BaseModel], descriptions: dict[str, str]) -> dict:
    """A tool's input schema: the fields of ``model`` named in ``descriptions`` (in that order), described so."""
    generated = _plain(model.model_json_schema(schema_generator=McpJsonSchema))
    properties = {}
    for name, description in descriptions.items():
        schema = {k: v for k, v in generated["properties"][name].items() if k != "description"}
        properties[name] = {**schema, "description": description}
    required = [name for name in generated.get("required", []) if name in descriptions]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def mcp_output_schema(model: type[BaseModel]) -> dict:
    """A tool's output schema: the response ``model`` (``{"data": ...}``), with every reference written out."""
    return _plain(model.model_json_schema(schema_generator=McpJsonSchema, mode="serialization"))


def _plain(schema: dict) -> dict:
    """``schema`` with its ``$defs`` written in where they are referred to, without model titles, and without
    ``additionalProperties: true`` (JSON Schema's default); objects list type, properties, required first."""
    defs = schema.get("$defs", {})

    def plain(value):
        if isinstance(value, list):
            return [plain(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "$ref" in value:
            return plain(defs[value["$ref"].rsplit("/", 1)[1]])
        out = {k: (plain(v) if k != "properties" else {p: plain(s) for p, s in v.items()})
               for k, v in value.items() if k not in ("$defs", "title") and (k, v) != ("additionalProperties", True)}  # fmt: skip
        first = [k for k in ("type", "properties", "required") if k in out]
        return {**{k: out[k] for k in first}, **out}

    return plain(schema)


# ---------------------------------------------------------------- field types


def json_kind(value: object) -> str:
    """How a parsed JSON value is named in messages: null, a boolean, a string, a number, an array, an object."""
    for kind, name in ((type(None), "null"), (bool, "a boolean"), (str, "a string"), ((int, float), "a number"),
                       (list, "an array"), (dict, "an object")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _json_type(expected: str, nullable: bool = False):
    """A validator accepting exactly one JSON type (no coercion: "5" is not a number, true is not 1)."""

    def check(value: object, info: ValidationInfo) -> object:
        if nullable and value is None:
            return value  # the service's own validators say why null is refused where it is
        if expected == "string":
            ok = isinstance(value, str)
        elif expected == "boolean":
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise PydanticCustomError("json_type", "{field} must be {expected}, not {actual}",
                                      {"field": info.field_name, "expected": f"a {expected}",
                                       "actual": json_kind(value)})  # fmt: skip
        return value

    return AfterValidator(check)


Query = Annotated[Any, _json_type("string"), WithJsonSchema({"type": "string"}), McpOnly(pattern=r"\S", minLength=1)]
Boolean = Annotated[Any, _json_type("boolean"), WithJsonSchema({"type": "boolean"})]
Direction = Annotated[Any, _json_type("string"), WithJsonSchema({"type": "string", "enum": list(DIRECTIONS)})]


def _count(default: int) -> Any:
    """A number of things: any JSON number (the service truncates and clamps it); MCP clients are told an integer
    of at least 0 (negatives are refused) and the default an omitted one takes."""
    return Annotated[Any, _json_type("number"), WithJsonSchema({"type": "number"}),
                     McpOnly(type="integer", minimum=0, default=default)]  # fmt: skip


def _id(kind: str) -> Any:
    return Annotated[Any, _json_type("string", nullable=True),
                     WithJsonSchema({"type": "string", "pattern": ID_PATTERNS[kind]})]  # fmt: skip


DocumentId, CollectionId, ChunkId = _id("document"), _id("collection"), _id("chunk")
SearchLimit, EvidenceLimit, Window = _count(10), _count(50), _count(2)
Number = Annotated[Any, _json_type("number"), WithJsonSchema({"type": "number"})]


# ---------------------------------------------------------------- requests

_STRICT = ConfigDict(extra="forbid")
_QUERY = "The question or search text; trimmed, at least one non-blank character, at most 2,000."
_DOC = "Restrict to one document. Omit when unused: null and empty values are refused."
_COL = "Restrict to documents of one collection. Omit when unused: null and empty values are refused."


class _ScopedQuery(BaseModel):
    # a query that may be restricted to one document or collection (reason, deep_search)
    model_config = _STRICT
    query: Query = Field(description=_QUERY)
    documentId: DocumentId = Field(None, description=_DOC)
    collectionId: CollectionId = Field(None, description=_COL)


class ReasonRequest(_ScopedQuery):
    limit: EvidenceLimit = Field(None, description="Evidence chunks in the packet: default 50, clamped to 1-50.")
    maxTokens: Number = Field(None, description="Evidence token budget: default 8000; finite values truncated, "
                              "negative ones become 0.")  # fmt: skip
    includeStatements: Boolean = Field(False, description="Also return the verified statements, each with its "
                                       "quotations and their offsets (what the CLI's ask --json prints).")  # fmt: skip


class FindItemsRequest(BaseModel):
    model_config = _STRICT
    query: Query = Field(description=_QUERY)
    limit: SearchLimit = Field(None, description="Items to return: default 10, clamped to 1-100.")


class DeepSearchRequest(_ScopedQuery):
    limit: SearchLimit = Field(None, description="Passages to return: default 10, clamped to 1-100.")


class DeepReadRequest(BaseModel):
    model_config = _STRICT
    chunkId: ChunkId = Field(description="The chunk to read (chk_...).")


class DeepExpandRequest(BaseModel):
    model_config = _STRICT
    chunkId: ChunkId = Field(description="The chunk to move from (chk_...).")
    direction: Direction
    window: Window = Field(None, description="For surrounding: chunks on each side, default 2, clamped to 1-20.")


# ---------------------------------------------------------------- responses


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


class CitationOut(_Shape):
    chunkId: str
    documentId: str
    documentTitle: str


class MetaOut(_Shape):
    chunksGathered: int
    citationsDropped: int
    latencyMs: int
    stagesMs: dict[str, float] | None = Field(None, description="Where the time went, stage by stage (ms): search, "
                                              "packet, read, rerank, prompt, generate, verify, phrase.")


class AnswerOut(_Shape):
    answer: str = Field(description="Prose with [[chunkId]] citation tokens.")
    citations: list[CitationOut]
    gaps: list[str]
    meta: MetaOut
    statements: list[dict] | None = Field(None, description="Only with includeStatements: [{text, references: "
                                          "[{chunkId, quotation, documentId, start, end, recognized}], "
                                          "answerPhrase?: {text, chunkId, start, end}, side?: {label, says, "
                                          "documentTitle, stands}}]; answerPhrase (first "
                                          "statement only, when the reader found one) is the exact answer inside "
                                          "one of its quotations, at document offsets; recognized: the quotation's "
                                          "passage was read by text recognition from a scanned page (a letter may "
                                          "be misread; the gaps say so); side: when sources disagree, the side "
                                          "this statement speaks for (A, B ...), what its source says, and "
                                          "whether the evidence itself settles on it (the gaps name the "
                                          "disagreement).")  # fmt: skip


class ReasonResponse(_Shape):
    data: AnswerOut


class ElsewhereOut(_Shape):
    chunkId: str
    documentId: str
    documentTitle: str


class HitOut(_Shape):
    chunkId: str
    documentId: str
    documentTitle: str
    level: int
    levelName: str
    chunkIndex: int
    parentId: str
    sectionPath: list[str]
    content: str
    recognized: bool = Field(False, description="The passage's text was read by text recognition from a scanned "
                             "page or photo, not from a text layer: a letter may be misread.")  # fmt: skip
    alsoIn: list[ElsewhereOut] = Field(default_factory=list, description="deep_search: other passages with the "
                                       "same text (a copied file, another version), listed once here.")  # fmt: skip


class ItemOut(_Shape):
    id: str
    type: Annotated[str, McpOnly(enum=list(ITEM_TYPES))] = Field(description="document or collection")
    title: str
    preview: str
    collectionId: str | None = None


class FindItemsResponse(_Shape):
    data: list[ItemOut]


class DeepSearchResponse(_Shape):
    data: list[HitOut]


class _Read(HitOut):
    tokenCount: int
    siblingCount: int
    childCount: int
    collectionId: str
    sourcePath: str


class DeepReadResponse(_Shape):
    data: _Read


class _Expand(_Shape):
    chunkId: str
    direction: Annotated[str, McpOnly(enum=list(DIRECTIONS))]
    items: list[HitOut]
    reason: str = Field(description="Why the move found nothing, or empty.")
    document: dict | None = Field(None, description="For up from a section: the document (not a chunk).")


class DeepExpandResponse(_Shape):
    data: _Expand


class _Health(_Shape):
    status: str = Field(description="ready, loading or model_error")
    modelsLoaded: bool
    modelError: dict | None
    library: dict
    reason: dict
    store: dict = Field(description="Where the library lives: kind (local or postgresql) and, for the main key, "
                        "url (never with its password)")  # fmt: skip
    version: str


class HealthResponse(_Shape):
    data: _Health


class _Collection(_Shape):
    id: str
    name: str
    createdAt: str
    documentCount: int
    chunkCount: int


class CollectionsResponse(_Shape):
    data: list[_Collection]


class _Instance(_Shape):
    proof: str = Field(description="HMAC-SHA256 (hex) keyed by this process's random token (in <home>/serve.json) "
                       "over the nonce and the other fields: handoff.proof.")  # fmt: skip
    pid: int
    protocol: int
    version: str


class InstanceResponse(_Shape):
    data: _Instance


class _Error(_Shape):
    code: str
    message: str
    details: dict


class ErrorResponse(_Shape):
    error: _Error
