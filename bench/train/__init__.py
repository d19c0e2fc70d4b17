"""Training the reader (localreason/models/reader)."""
