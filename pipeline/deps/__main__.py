"""`python -m pipeline.deps`: see `pipeline.deps`."""

import sys

from pipeline.deps.plan import main

sys.exit(main())
