"""How good: retrieval, answers on many kinds of text and on fields, exact terms, stored text, sentences."""
