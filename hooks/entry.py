"""Entry point the launcher runs: prima-memory as installed, else the copy beside this file.
A Python that cannot run it at all gets a one-line note and exit 0 (hooks fail open)."""
import os
import sys

try:
    from prima_memory.main import main
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        from prima_memory.main import main
    except ImportError as e:
        print(f"prima-memory: {sys.executable} cannot run prima-memory ({e}); run install.sh",
              file=sys.stderr)
        sys.exit(0)

sys.exit(main())
