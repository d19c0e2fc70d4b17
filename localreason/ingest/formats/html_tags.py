"""The HTML tag sets both HTML readers share (html.py through lxml, html_stream.py for huge pages)."""

ASIDE = "aside"
"""Dropped outside the main content (a site's sidebar), kept inside it (a sidebar of the text, as Sphinx writes one)."""
DROP = ("script", "style", "noscript", "template", "nav", "header", "footer", "form",
        "button", "select", "svg", "iframe")  # fmt: skip
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
BLOCKS = frozenset("p li dt dd pre blockquote td th caption figcaption address div section article "
                   "main body tr table thead tbody tfoot ul ol dl summary details".split())  # fmt: skip
