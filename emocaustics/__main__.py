import sys

from emocaustics.cli import main

sys.exit(main())
