import sys

from decoding_lab.cli import main

sys.exit(main())
