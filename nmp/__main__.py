import sys

from nmp.cli import main

sys.exit(main())
