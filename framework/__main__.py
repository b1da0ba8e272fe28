import sys

from multikernel.cli import main

sys.exit(main())
