"""Settings every test shares."""

from __future__ import annotations

import os

# Off a terminal, long commands print a progress line every 5 s (nmp.report.progress). A test
# that asserts a command's exact stderr must not depend on how long a loaded runner takes, so
# tests see those lines only where they ask for them (a test sets NMP_PROGRESS_EVERY_S itself).
os.environ.setdefault("NMP_PROGRESS_EVERY_S", "3600")
