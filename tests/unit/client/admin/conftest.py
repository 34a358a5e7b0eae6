"""The admin package's unit tests share the client suite's scripted loopback broker."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
