"""localreason: ask questions of your own documents, offline."""
__version__ = "0.1.0"
