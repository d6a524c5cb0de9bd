"""`python -m ember demo [--compare]` (see ember/demo.py)."""

from .demo import main

if __name__ == "__main__":
    main()
