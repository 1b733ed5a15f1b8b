"""`python -m up_trl train ...` (also what `accelerate launch -m up_trl train ...` runs)."""

import sys

from .cli import main

sys.exit(main())
