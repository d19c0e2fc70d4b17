"""Everything that serves the library to other programs. handoff.py: a command's request handed to a running
``localreason serve`` (standard library only: importing this package imports nothing else)."""
