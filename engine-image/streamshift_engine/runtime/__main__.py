"""`python -m streamshift_engine.runtime`: the same as `streamshift worker`."""

import sys

from streamshift_engine.runtime.worker import main

sys.exit(main())
