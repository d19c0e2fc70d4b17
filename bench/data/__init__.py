"""Data sets the benchmarks fetch once and cache: SQuAD, the bigbench question sets, Debian documentation."""
