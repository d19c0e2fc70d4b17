"""How long and how often the watch waits: the numbers every part of it shares."""

from __future__ import annotations




SETTLE_S = 0.5
"""A change is applied once the file's size and modification time have not moved, nor an event come, for this long."""
MAX_WAIT_S = 60.0
"""A file that never settles (a log written to all the time) is applied as it is after this long."""
RETRY_S = (2.0, 60.0)
"""A batch that could not be written (the library locked by another program for long, the disk full) is tried
again after the first of these, then after twice as long each time, up to the second: nothing is dropped."""
POLL_S = 2.0
"""How often the folders are re-checked when inotify cannot follow them (its limit, or ``watch_mode = "poll"``)."""
POLL_SHARE = 0.01
"""At most this share of a core goes to re-checking: a tree whose look takes 40 ms is looked at every 4 s."""
RESCAN_S = 300.0
"""While inotify watches, the folders are also looked at this often, as re-checking does: what a watch could not
report (the kernel's event queue overflowed in a burst, which watchfiles does not pass on) is found then, not lost
until the next `sync`. A look at 5,000 files takes about 40 ms."""
RECHECK_S = 2.0
"""How often the roots are looked at: vanished, back, replaced, or new sources ingested by another program."""
TICK_S = 0.1
"""How often waiting changes are looked at again (their size and modification time)."""
BATCH_FILES = 100
"""Files written in one batch (one hold of the writer lock): searches wait for a batch, never for a whole copy."""
DEBOUNCE_MS, STEP_MS = 500, 100
"""watchfiles' grouping: changes are handed over 100 ms after the last one, at most 500 ms after the first. Its loop
wakes every STEP_MS to look for changes and for a stop: 50 ms cost 0.16 % of a core idle, 100 ms half that, 200 ms
0.04 % (watching 5,000 files). No timeout (sources.inotify_changes says why)."""
