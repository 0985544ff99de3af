import sys

from flexlab.cli import main

sys.exit(main())
