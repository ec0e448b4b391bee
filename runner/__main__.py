import sys

from .cli import main

sys.exit(main(prog="python3 -m runner"))
