"""How the shipped constants were chosen: the ranking and gate, the reader, question likelihood, the budget."""
