"""python -m localreason: the same as the localreason command."""

from .cli import main

main()
