import sys

from tools.preflight import main

sys.exit(main())
