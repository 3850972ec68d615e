import sys

from storage.cli import main

sys.exit(main())
