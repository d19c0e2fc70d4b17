"""How fast: ingest, embedding, search at scale, cold starts, threads, the TUI, the servers, reason, faults."""
