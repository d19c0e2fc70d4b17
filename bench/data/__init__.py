"""The data the benchmarks read: the shared question-answering sets (qa.py; qa_sets.py builds the evaluation
libraries from them, squad.py the paragraph-retrieval ones) and Debian documentation (debian_docs.py)."""
