"""One module per format, each with one entry point: ``parse_<format>(data, path) -> ParsedDocument``."""
