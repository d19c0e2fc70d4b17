"""``python -m bench.quality.ocr``: see the package's docstring."""

import os

from bench.quality.ocr.run import main

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
main()
